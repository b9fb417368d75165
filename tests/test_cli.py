"""``analyze-nsys`` run in-process: exit codes, one line per bad trace, the cache, the outputs."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import types

import pandas as pd
import pytest

import analysis.app.analyze as analyze_module
import analysis.app.cache as cache_module
import analysis.app.cli as cli
from analysis.load import file_sha256
from tests.conftest import REPO

TRAIN = "small_ctx128_train_fp32.sqlite"
FORWARD = "small_ctx256_forward_fp32.sqlite"


@pytest.fixture
def fake_report(monkeypatch):
    """A stand-in ``analysis.report`` that records what the CLI hands it."""
    calls = {}
    module = types.ModuleType("analysis.report")
    module.render_report = lambda *args: calls.setdefault("report", args)
    module.render_diff = lambda *args: calls.setdefault("diff", args)
    monkeypatch.setitem(sys.modules, "analysis.report", module)
    return calls


def test_help_describes_both_commands(capsys):
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "analyze-nsys" in text and "--format" in text and "--no-cache" in text
    assert "analyze-nsys diff A.sqlite B.sqlite" in text and "exit status" in text
    assert ".nsys-rep" in text  # a report straight from nsys is an input too
    assert cli.main(["diff", "--help"]) == 0
    diff_help = capsys.readouterr().out
    assert "kernels that moved most" in diff_help and ".nsys-rep" in diff_help


@pytest.mark.parametrize(
    "argv",
    [[], ["--format", "pdf", "x.sqlite"], ["--jobs", "0", "x.sqlite"], ["diff", "only_one.sqlite"]],
)
def test_usage_errors_exit_with_2(argv, capsys):
    assert cli.main(argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_a_good_trace_writes_its_json_and_exits_0(fixture_trace, tmp_path, capsys):
    assert cli.main([str(fixture_trace(TRAIN)), "--out", str(tmp_path), "--jobs", "1"]) == 0
    summary = json.loads((tmp_path / "small_ctx128_train_fp32.json").read_text())
    assert summary["phases"]["backward"]["kernels_per_pass"] == 1463
    assert (tmp_path / "results.db").exists()
    line, = capsys.readouterr().err.splitlines()  # one line per trace: the structure it found
    assert line.startswith("small_ctx128_train_fp32.sqlite: structure from NVTX ranges: steps `step_<i>`, `warmup_<i>` ×5: "
                           "2 warm-up (named `warmup_<i>`), 3 measured; forward `forward`")


def _errors_and_structures(stderr: str) -> tuple[list[str], list[str]]:
    """stderr's lines: those of failures, and the one line per analyzed trace saying its structure."""
    lines = stderr.splitlines()
    structures = [line for line in lines if ": structure from " in line]
    return [line for line in lines if line not in structures], structures


def test_a_bad_trace_costs_one_line_and_the_batch_goes_on(fixture_trace, tmp_path, capsys):
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database")
    missing = tmp_path / "missing.sqlite"
    good = fixture_trace(FORWARD)
    out = tmp_path / "out"
    assert cli.main([str(bad), str(good), str(missing), "--out", str(out), "--jobs", "1"]) == 1
    lines, structures = _errors_and_structures(capsys.readouterr().err)
    assert [line.split(":")[0] for line in structures] == ["small_ctx256_forward_fp32.sqlite"]
    assert lines == [f"{bad}: is not an SQLite database (an nsys export is made with `nsys export --type sqlite`)", f"{missing}: no such file"]
    assert [p.name for p in out.glob("*.json")] == ["small_ctx256_forward_fp32.json"]


def test_second_run_is_served_from_the_cache(fixture_trace, tmp_path, monkeypatch):
    trace = str(fixture_trace(FORWARD))
    assert cli.main([trace, "--out", str(tmp_path), "--jobs", "1"]) == 0
    first = (tmp_path / "small_ctx256_forward_fp32.json").read_text()

    def must_not_run(path):
        raise AssertionError("analyzed again despite the cache")

    monkeypatch.setattr(analyze_module, "stored_summary", must_not_run)
    assert cli.main([trace, "--out", str(tmp_path), "--jobs", "1"]) == 0
    assert (tmp_path / "small_ctx256_forward_fp32.json").read_text() == first
    # --no-cache analyzes again: here that reaches the stand-in and fails, as it must.
    assert cli.main([trace, "--out", str(tmp_path), "--jobs", "1", "--no-cache"]) == 1


def test_a_trace_rewritten_with_its_size_is_analyzed_again(fixture_trace, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cache_module, "RACY_WINDOW_NS", 0)  # the copy below counts as settled at once
    trace = tmp_path / "run.sqlite"
    shutil.copyfile(fixture_trace(FORWARD), trace)
    argv = [str(trace), "--out", str(tmp_path / "out"), "--jobs", "1", "--format", "json"]
    assert cli.main(argv) == 0 and cli.main(argv) == 0
    before = trace.stat()
    with sqlite3.connect(tmp_path / "out" / cli.RESULTS_DB) as db:  # the evidence that it is unchanged is kept
        assert db.execute('SELECT COUNT(*) FROM "file_hashes" WHERE inode = ?', [before.st_ino]).fetchone() == (1,)
    trace.write_bytes(bytes(before.st_size))
    os.utime(trace, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    capsys.readouterr()
    assert cli.main(argv) == 1  # the new content is analyzed: it is no SQLite database
    assert capsys.readouterr().err.startswith(f"{trace}: is not an SQLite database")


def test_parallel_batch_writes_csv_tables_over_all_traces(fixture_trace, tmp_path):
    traces = [str(fixture_trace(TRAIN)), str(fixture_trace(FORWARD))]
    assert cli.main([*traces, "--out", str(tmp_path), "--format", "csv,json", "--jobs", "2", "--no-cache"]) == 0
    phases = pd.read_csv(tmp_path / "phases.csv")
    assert list(zip(phases["trace"], phases["phase"])) == [
        (TRAIN, "forward"),
        (TRAIN, "backward"),
        (TRAIN, "optimizer_step"),
        (FORWARD, "forward"),
    ]
    questions = pd.read_csv(tmp_path / "questions.csv")
    assert list(questions["b_calls_per_forward_pass"]) == [73, 84]
    assert set(pd.read_csv(tmp_path / "categories.csv")["phase"]) == {"forward", "backward", "optimizer_step", "overall"}
    assert not (tmp_path / "results.db").exists()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_command_line_leaves_pyarrow_out(fixture_trace, tmp_path, jobs):
    """pandas imports pyarrow whenever it is installed; the command line, its pool's workers
    included, keeps it from doing so. Here an installed pyarrow fails on import."""
    site = tmp_path / "site"
    (site / "pyarrow").mkdir(parents=True)
    (site / "pyarrow" / "__init__.py").write_text("raise RuntimeError('pyarrow was imported')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    broken = subprocess.run([sys.executable, "-c", "import pandas"], env=env, capture_output=True, text=True)
    assert "pyarrow was imported" in broken.stderr  # without the command line, pandas would load it
    traces = [str(fixture_trace(TRAIN)), str(fixture_trace(FORWARD))]
    run = subprocess.run([sys.executable, "-m", "analysis.app.cli", *traces, "--format", "json", "--no-cache",
                          "--jobs", jobs, "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "out").glob("*.json")) == [
        "small_ctx128_train_fp32.json", "small_ctx256_forward_fp32.json"]


def test_every_external_trace_is_analyzed_or_refused_in_one_line(external_trace, tmp_path, capsys):
    folder = external_trace("mock.sqlite").parent
    traces = sorted(folder.glob("*.sqlite"))
    digests = {path: file_sha256(path) for path in traces}
    assert cli.main([*map(str, traces), "--out", str(tmp_path), "--jobs", "2"]) == 1
    errors, structures = _errors_and_structures(capsys.readouterr().err)
    assert len(structures) == len(traces) - 1
    assert errors == [f"{folder / 'uvmtorch_runtime_only_2025.sqlite'}: has no CUDA kernel records (was it captured "
                      "with `-t cuda`, and did the program launch kernels?); nsys said: “CUDA profiling might have not "
                      "been started correctly.” “No CUDA events collected. Does the process use CUDA?” “Not all CUDA "
                      "events might have been collected.”"]
    assert len(list(tmp_path.glob("*.json"))) == len(traces) - 1
    assert {path: file_sha256(path) for path in traces} == digests


def test_html_and_markdown_go_to_the_report_package(fixture_trace, tmp_path, fake_report):
    bad = tmp_path / "empty.sqlite"
    bad.touch()
    (tmp_path / "res").mkdir()
    argv = [str(fixture_trace(FORWARD)), str(bad), "--out", str(tmp_path), "--format", "html,md", "--results",
            str(tmp_path / "res"), "--jobs", "1"]
    assert cli.main(argv) == 1
    data, failures, out_dir, formats = fake_report["report"]
    assert [s["trace"] for s in data.summaries] == [FORWARD]
    assert [r.card.id for r in data.questions][:3] == ["bench-b", "bench-c", "nsys-a"]  # every question answered
    assert failures == [{"trace": str(bad), "error": "is empty"}]
    assert out_dir == tmp_path
    assert formats == ("html", "md")  # one call: the site is built and drawn once for both
    assert not list(tmp_path.glob("*.json"))


def test_diff_writes_its_numbers_and_calls_the_renderer(fixture_trace, tmp_path, fake_report, capsys):
    a, b = fixture_trace(TRAIN), fixture_trace(FORWARD)
    fake_report["page"] = tmp_path / "diff-a--b.html"
    sys.modules["analysis.report"].render_diff = lambda *args: fake_report.setdefault("diff", args) and fake_report["page"]
    assert cli.main(["diff", str(a), str(b), "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"diff: {tmp_path / 'diff-a--b.html'} (and {tmp_path / 'diff.json'})\n"
    diff = json.loads((tmp_path / "diff.json").read_text())
    assert (diff["a"], diff["b"]) == (TRAIN, FORWARD)
    assert {"key": "mode", "a": "train", "b": "forward"} in diff["config_changes"]
    record, out_dir = fake_report["diff"]
    assert (record.a["trace"], record.b["trace"], out_dir) == (TRAIN, FORWARD, tmp_path)
    assert record.diff == diff  # computed once, written and handed to the renderer


def test_diff_of_a_bad_trace_exits_1(fixture_trace, tmp_path, capsys, fake_report):
    assert cli.main(["diff", str(fixture_trace(TRAIN)), str(tmp_path / "nope.sqlite"), "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip() == f"{tmp_path / 'nope.sqlite'}: no such file"
    assert "diff" not in fake_report


def test_range_name_options_reach_the_analysis_and_the_cache(fixture_trace, tmp_path, monkeypatch, capsys):
    from analysis.core.range_names import RangeNames

    trace = fixture_trace(FORWARD)
    assert cli.main(["--help"]) == 0
    help_text = capsys.readouterr().out
    for option in ("--warmup-prefix", "--step-prefix", "--phase-names", "--attention-names"):
        assert option in help_text
    seen = []
    summary = analyze_module.stored_summary(trace)  # a stored summary of the schema: the cache serves no other

    def record(path, names, inputs, tables):
        seen.append(names)
        return {**summary, "trace": path.name}

    monkeypatch.setattr(analyze_module, "stored_summary", record)
    argv = [str(trace), "--out", str(tmp_path), "--jobs", "1", "--format", "json"]
    custom = ["--step-prefix", "iter", "--warmup-prefix", "warm", "--phase-names", "fwd, loss ,bwd,opt",
              "--attention-names", "qk,sm,av"]
    assert cli.main(argv + custom) == 0
    assert seen == [RangeNames(warmup_prefix="warm", step_prefix="iter", phases=("fwd", "loss", "bwd", "opt"),
                               regions=("qk", "sm", "av"))]
    assert cli.main(argv + custom) == 0  # the same names: from the cache
    assert cli.main(argv) == 0  # no names given: analyzed again, every role found in the trace
    assert seen[1:] == [RangeNames()]


@pytest.mark.parametrize("option", [["--phase-names", "a,b,c,d,e"], ["--phase-names", "a,b,,c"],
                                    ["--phase-names", "a,a,b,c"], ["--attention-names", "x,y"],
                                    ["--step-prefix", "w", "--warmup-prefix", "w"], ["--step-prefix", ""],
                                    ["--warmup-steps", "-1"]])
def test_bad_range_names_are_usage_errors(option, capsys):
    assert cli.main(["x.sqlite", *option]) == 2
    assert "usage:" in capsys.readouterr().err
