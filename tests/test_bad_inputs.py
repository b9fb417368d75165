"""Every kind of bad or unusual input: one clear line, never a traceback, input never modified."""
from __future__ import annotations

import os
import shutil
import sqlite3
import stat

import pytest

from analysis.core.phases import label_ops
from analysis.load import file_sha256, load_trace
from analysis.load.errors import (
    NoKernels,
    NotATraceFile,
    NotNsysExport,
    NotSQLite,
    NsysReportGiven,
    TraceBeingWritten,
    TruncatedTrace,
    UnsupportedSchema,
)
from analysis.load.export_map import DIAGNOSTICS
from tests.synthetic import PUSH_POP, build_export

FORWARD = "small_ctx256_forward_fp32.sqlite"


def _refused(path, error_type, words):
    """Load ``path``, expect ``error_type`` with a one-line message holding ``words``."""
    before = file_sha256(path) if path.is_file() else None
    with pytest.raises(error_type) as caught:
        load_trace(path)
    message = str(caught.value)
    assert "\n" not in message and words in message
    if before is not None:
        assert file_sha256(path) == before
    return message


def test_missing_file_and_directory(tmp_path):
    _refused(tmp_path / "absent.sqlite", NotATraceFile, "no such file")
    _refused(tmp_path, NotATraceFile, "is a directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path):
    path = tmp_path / "locked.sqlite"
    path.write_bytes(b"SQLite format 3\x00")
    path.chmod(0)
    try:
        _refused(path, NotATraceFile, "cannot be read")
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_not_sqlite_and_empty(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("kernel,time\n")
    _refused(text, NotSQLite, "not an SQLite database")
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    _refused(empty, NotSQLite, "is empty")


def test_truncated_export(fixture_trace, tmp_path):
    source = fixture_trace(FORWARD)
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    _refused(cut, TruncatedTrace, "cut short")


def test_truncated_xz(fixture_trace, tmp_path, monkeypatch):
    import lzma
    monkeypatch.setenv("CS336_PROFILE_CACHE", str(tmp_path / "cache"))
    packed = lzma.compress(fixture_trace(FORWARD).read_bytes(), preset=0)
    cut = tmp_path / "cut.sqlite.xz"
    cut.write_bytes(packed[: len(packed) // 2])
    _refused(cut, TruncatedTrace, "xz stream")


def test_sqlite_from_another_program(tmp_path):
    path = tmp_path / "app.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    _refused(path, NotNsysExport, "not an nsys export (tables: users)")


def test_nsys_report_without_nsys(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"\x00nsys report bytes")
    message = _refused(report, NsysReportGiven, "nsys export --type sqlite")
    assert "run.sqlite" in message


def test_nsys_report_is_exported_when_nsys_is_on_path(fixture_trace, tmp_path, monkeypatch):
    """A stand-in `nsys` that answers `nsys export ... --output OUT IN` by copying a real export."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nsys"
    fake.write_text(f"#!/bin/sh\nwhile [ $# -gt 2 ]; do shift; done\n"
                    f"cp '{fixture_trace(FORWARD)}' \"$1\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CS336_PROFILE_CACHE", str(tmp_path / "cache"))
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"\x00nsys report bytes")
    before = file_sha256(report)
    trace = load_trace(report)
    assert len(trace.kernels) == 4482 and file_sha256(report) == before


def test_export_without_kernels(external_trace):
    _refused(external_trace("uvmtorch_runtime_only_2025.sqlite"), NoKernels, "no CUDA kernel")


def test_export_without_kernels_says_what_nsys_said_about_cuda(tmp_path):
    """nsys's own warnings about CUDA (an unsupported driver, no CUDA events), each once, end the
    line; its other messages (NVTX, sampling) and its notes do not."""
    path = build_export(tmp_path / "no_cuda.sqlite")
    with sqlite3.connect(path) as conn:
        conn.execute(DIAGNOSTICS.create_sql())
        conn.executemany(f"INSERT INTO {DIAGNOSTICS.name} VALUES (?, ?)", [
            (1, "CUDA injection initialized successfully."),
            (2, "Installed CUDA driver version (12.8) is not supported by this build of Nsight Systems."),
            (2, "No CUDA events collected.\nDoes the process use CUDA?"),
            (2, "No CUDA events collected.\nDoes the process use CUDA?"),
            (2, "No NVTX events collected. Does the process use NVTX?")])
    message = _refused(path, NoKernels, "no CUDA kernel records")
    assert message.endswith("; nsys said: “Installed CUDA driver version (12.8) is not supported by this build of "
                            "Nsight Systems.” “No CUDA events collected. Does the process use CUDA?”")


def test_cuda_graphs_traced_whole(tmp_path):
    """A graph traced as one record (nsys --cuda-graph-trace=graph) is a kernel of its own, named
    after the graph and launched by its cudaGraphLaunch call: the trace knows no other of its work."""
    only_graphs = build_export(tmp_path / "graphs.sqlite",
                               graphs=[(1000 + 200 * i, 1150 + 200 * i, 900 + 200 * i, 5, 5, 10 + i, 4) for i in range(3)])
    trace = load_trace(only_graphs)
    assert trace.kernels["demangled_name"].astype(str).tolist() == ["[CUDA graph 4]"] * 3
    assert trace.kernels["dur_ns"].tolist() == [150] * 3
    assert trace.kernels["launch_start_ns"].tolist() == [900, 1100, 1300]
    mixed = build_export(tmp_path / "mixed.sqlite", graphs=[(2000, 2300, 1500, 5, 5, 2, 7), (900, 950, 800, 5, 5, 3, -1)],
                         kernels=[(1000, 1100, 900, 5, 5, 1)])
    trace = load_trace(mixed)
    assert trace.cuda_graph_launches == 2
    assert trace.kernels["demangled_name"].astype(str).tolist() == ["[CUDA graph ?]", "kernel_a", "[CUDA graph 7]"]
    assert any("--cuda-graph-trace=node" in note for note in trace.notes)


def test_a_whole_graph_counts_in_the_phase_that_launched_it(tmp_path):
    path = build_export(tmp_path / "graph.sqlite", graphs=[(2000, 2300, 1500, 5, 5, 2, 7)],
                        kernels=[(1000, 1100, 900, 5, 5, 1), (2400, 2450, 1700, 5, 5, 3)],
                        ranges=[("forward", 850, 1600, 5, 5, 5, PUSH_POP), ("backward", 1650, 1800, 5, 5, 5, PUSH_POP)])
    ops = label_ops(load_trace(path)).ops
    assert ops.groupby("phase", observed=True)["dur_ns"].sum().to_dict() == {"backward": 50, "forward": 400}


def test_schema_too_old(tmp_path):
    path = tmp_path / "old.sqlite"
    # Deliberately not the export map's schema: an old export whose kernel table lacks columns.
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
        conn.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, "
                     "deviceId INTEGER, streamId INTEGER, correlationId INTEGER, name INTEGER)")
        conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, 7, 1, 0)")
    _refused(path, UnsupportedSchema, "lacks globalPid, demangledName")


def test_export_still_being_written(fixture_trace, tmp_path):
    path = tmp_path / "live.sqlite"
    shutil.copy(fixture_trace(FORWARD), path)
    (tmp_path / "live.sqlite-journal").write_bytes(b"")
    _refused(path, TraceBeingWritten, "still being written")


def test_export_without_nvtx_is_analyzed_whole(external_trace):
    labelled = label_ops(load_trace(external_trace("extrap_ex-gpu_2021.sqlite")))
    assert not labelled.has_steps and labelled.ops["measured"].all()
    assert any("no phase ranges" in note for note in labelled.notes)


def test_start_end_ranges_across_threads_and_unclosed_ranges(tmp_path):
    """A start/end `forward` opened on thread 1 and closed on thread 2 takes launches from any
    thread of the process; a `step_0` never closed runs to the end of the capture."""
    path = build_export(
        tmp_path / "threads.sqlite",
        kernels=[(1000, 1100, 150, 5, 1, 1), (1200, 1300, 250, 5, 3, 2),
                 (1400, 1500, 450, 5, 1, 3), (1600, 1700, 260, 6, 3, 4)],
        ranges=[("step_0", 100, None, 5, 1, None, 59), ("forward", 120, 300, 5, 1, 2, 60)])
    trace = load_trace(path)
    step = trace.ranges[trace.ranges["name"] == "step_0"].iloc[0]
    assert step["is_open"] and step["end_ns"] == trace.capture_end_ns == 1700
    assert any("never closed" in note for note in trace.notes)
    ops = label_ops(trace).ops.set_index("start_ns")  # the kernels of correlation ids 1 to 4
    assert ops.loc[[1000, 1200, 1400, 1600], "phase"].tolist() == ["forward", "forward", "", ""]
    assert ops.loc[[1000, 1200, 1400, 1600], "step"].tolist() == ["step_0", "step_0", "step_0", ""]
