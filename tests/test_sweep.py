"""The nsys sweep driver with a fake nsys: command lines, naming, resume, OOM / failure, slim copies."""
from __future__ import annotations

import json
import lzma
import shutil
import sqlite3
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

from analysis.load.export_map import CAPTURE_METADATA, OS_RUNTIME, OS_RUNTIME_CALLCHAINS, PROFILER_OVERHEAD, STRINGS
from cs336_profile.config import RunConfig
from nsys_runs.nvtx_spans import measured_phase_spans_ms
from nsys_runs.slim import DROPPED_TABLES, compress_xz, slim_copy
from nsys_runs.sweep import NSYS_PROFILE_OPTIONS, RunnerSettings, Sweep, TraceConfig, build_grid, main, nsys_command, runner_command

REPO = Path(__file__).resolve().parents[1]

# A stand-in for `nsys profile`: logs its arguments, writes an export holding one measured forward
# range of 2.5 ms (and one warm-up forward that must not count) and the kernel the analyzer needs to
# accept it, then runs the profiled command.
# FAKE_NSYS_MODE=oom|fail|hang imitates a run that dies of OOM, crashes, or never ends.
FAKE_NSYS = textwrap.dedent('''\
    #!{python}
    import os, sqlite3, subprocess, sys, time
    args = sys.argv[1:]
    if args == ["--version"]:
        print("NVIDIA Nsight Systems version 0.0-fake"); sys.exit(0)
    with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
        log.write(" ".join(args) + "\\n")
    mode = os.environ.get("FAKE_NSYS_MODE", "run")
    if mode == "oom":
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 GiB", file=sys.stderr); sys.exit(1)
    if mode == "fail":
        print("Segmentation fault (core dumped)", file=sys.stderr); sys.exit(139)
    if mode == "hang":
        time.sleep(60)
    output = args[args.index("-o") + 1]
    # This stand-in nsys runs as a script of its own, without the project on its path: it writes
    # the few nsys tables and columns the sweep's check reads by their literal names.
    with sqlite3.connect(output + ".sqlite") as db:
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO StringIds VALUES (1, 'forward')")
        db.execute('CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, text TEXT, '
                   'textId INTEGER, globalTid INTEGER)')
        db.execute('CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, "end" INTEGER, deviceId INTEGER, '
                   'streamId INTEGER, correlationId INTEGER, globalPid INTEGER, shortName INTEGER, demangledName INTEGER)')
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (12000000, 12500000, 0, 7, 1, 0, 1, 1)")
        db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, 7)", [
            (0, 9000000, "warmup_0", None), (1000000, 8000000, None, 1),
            (10000000, 20000000, "step_0", None), (11000000, 13500000, None, 1)])
    sys.exit(subprocess.call(args[args.index("-o") + 2:]))
''')


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    script = tmp_path / "bin" / "nsys"
    script.parent.mkdir()
    script.write_text(FAKE_NSYS.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setenv("FAKE_NSYS_LOG", str(tmp_path / "nsys.log"))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # tiny CPU runs are fastest on one thread
    return script


def invocations(tmp_path: Path) -> list[str]:
    log = tmp_path / "nsys.log"
    return log.read_text().splitlines() if log.exists() else []


CPU = RunnerSettings(warmup=0, steps=1, device="cpu")
TINY = TraceConfig(size="tiny", context_length=8, mode="forward", warmup_steps=0, measured_steps=1, device="cpu")


def test_stems_name_size_context_mode_dtype_and_variants():
    assert TraceConfig(size="small", context_length=128, mode="train").stem == "small_ctx128_train_fp32"
    assert TraceConfig(size="2.7B", context_length=1024, mode="forward", dtype="bf16",
                       compile=True).stem == "2.7B_ctx1024_forward_bf16_compiled"
    assert TraceConfig(size="xl", context_length=256, mode="train", attention="sdpa",
                       emit_nvtx=True).stem == "xl_ctx256_train_fp32_sdpa_emitnvtx"


def test_default_grid_is_the_fp32_grid_plus_a_subset_of_variants():
    grid = build_grid(["small", "medium", "large", "xl", "2.7B"], [128, 256, 512, 1024], ["forward", "train"],
                      ["fp32"], ["small", "medium"], [128, 256], ["bf16", "fp32-compiled"])
    assert len(grid) == 5 * 4 * 2 + 2 * 2 * 2 * 2
    assert len({config.stem for config in grid}) == len(grid)
    assert grid[0].stem == "small_ctx128_forward_fp32" and grid[-1].stem == "medium_ctx256_train_fp32_compiled"
    assert build_grid(["small"], [128], ["train"], ["fp32"], ["small"], [128], ["fp32"]) == [
        TraceConfig(size="small", context_length=128, mode="train")]  # the subset repeats nothing
    assert isinstance(grid[0], RunConfig) and grid[0].batch_size == RunConfig.batch_size
    cpu = build_grid(["tiny"], [8], ["forward"], ["fp32"], settings=CPU)
    assert (cpu[0].device, cpu[0].warmup_steps, cpu[0].measured_steps) == ("cpu", 0, 1)


def test_nsys_command_wraps_the_runner_with_the_documented_options(tmp_path):
    config = TraceConfig(size="small", context_length=256, mode="train", dtype="bf16", compile=True)
    runner = runner_command(config, "python3", tmp_path / "runner")
    command = nsys_command("nsys", tmp_path, config, runner)
    assert command[:2] == ["nsys", "profile"]
    assert " ".join(NSYS_PROFILE_OPTIONS) == ("-t cuda,nvtx,osrt --sample=none --cpuctxsw=none "
                                              "--cuda-memory-usage=false --export=sqlite --force-overwrite=true")
    assert command[2:2 + len(NSYS_PROFILE_OPTIONS)] == list(NSYS_PROFILE_OPTIONS)
    assert command[command.index("-o") + 1] == str(tmp_path / "small_ctx256_train_bf16_compiled")
    assert command[command.index("-o") + 2:] == runner
    assert runner[:4] == ["python3", "-m", "cs336_profile.run", "bench"]
    assert " ".join(runner[4:]) == (
        f"--sizes small --context-lengths 256 --mode train --dtype bf16 --attention naive --warmup 2 --steps 3 "
        f"--batch-size 4 --device cuda --results-dir {tmp_path / 'runner'} --name small_ctx256_train_bf16_compiled "
        f"--no-progress --compile")


def test_sweep_records_a_run_writes_its_files_and_resumes_without_rerunning(tmp_path, fake_nsys):
    out = tmp_path / "sweep"
    (row,) = Sweep(out, str(fake_nsys), CPU, slim=True, compress=True).run([TINY], progress=False)
    assert row["status"] == "ok" and row["returncode"] == 0 and row["error"] is None
    assert row["trace"] == "slim/tiny_ctx8_forward_fp32.sqlite.xz" and (out / row["trace"]).exists()
    assert row["nsys_forward_ms"] == 2.5  # the measured forward range only, not the warm-up one
    assert row["forward_ms_mean"] > 0 and row["step_ms_mean"] >= row["forward_ms_mean"]
    timings = json.loads((out / "tiny_ctx8_forward_fp32.timings.json").read_text())
    assert timings["forward"] == row["forward_ms_mean"] and (timings["ctx"], timings["mode"]) == (8, "forward")
    assert (out / "slim" / "tiny_ctx8_forward_fp32.timings.json").exists()
    assert len(invocations(tmp_path)) == 1

    (again,) = Sweep(out, str(fake_nsys), CPU, slim=True, compress=True).run([TINY], progress=False)
    assert len(invocations(tmp_path)) == 1  # resumed: nothing ran
    assert again == row
    table = json.loads((out / "sweep.json").read_text())
    assert table["experiment"] == "sweep" and [r["stem"] for r in table["rows"]] == ["tiny_ctx8_forward_fp32"]


def test_out_of_memory_process_and_earlier_rows_are_kept_in_the_table(tmp_path, fake_nsys, monkeypatch):
    out = tmp_path / "sweep"
    Sweep(out, str(fake_nsys), CPU).run([TINY], progress=False)
    monkeypatch.setenv("FAKE_NSYS_MODE", "oom")
    big = TraceConfig(size="tiny", context_length=8, mode="train", warmup_steps=0, measured_steps=1, device="cpu")
    (previous, row) = Sweep(out, str(fake_nsys), CPU).run([big], progress=False)
    assert previous["stem"] == "tiny_ctx8_forward_fp32" and previous["status"] == "ok"
    assert row["status"] == "OOM" and row["trace"] is None and row["forward_ms_mean"] is None
    assert row["returncode"] == 1 and "OutOfMemoryError" in row["error"]
    Sweep(out, str(fake_nsys), CPU).run([big], progress=False)
    assert len(invocations(tmp_path)) == 3  # an OOM process left no results: it is tried again


def test_crashed_and_hanging_runs_are_failed(tmp_path, fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_MODE", "fail")
    (crashed,) = Sweep(tmp_path / "a", str(fake_nsys), CPU).run([TINY], progress=False)
    assert (crashed["status"], crashed["returncode"], crashed["error"]) == ("failed", 139, "Segmentation fault (core dumped)")
    monkeypatch.setenv("FAKE_NSYS_MODE", "hang")
    (hung,) = Sweep(tmp_path / "b", str(fake_nsys), CPU, timeout_s=1).run([TINY], progress=False)
    assert hung["status"] == "failed" and hung["error"] == "timed out after 1 s" and hung["wall_s"] < 30


def test_dry_run_prints_the_commands_and_marks_done_configs(tmp_path, fake_nsys, capsys):
    out = tmp_path / "sweep"
    Sweep(out, str(fake_nsys), CPU).run([TINY], progress=False)
    main(["--out", str(out), "--nsys", str(fake_nsys), "--sizes", "tiny", "--context-lengths", "8", "16",
          "--modes", "forward", "--subset-sizes", "--device", "cpu", "--warmup", "0", "--steps", "1", "--dry-run"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["done", "run"]
    assert "-o " + str(out / "tiny_ctx16_forward_fp32") in lines[1]


def test_missing_nsys_is_a_one_line_error(tmp_path):
    with pytest.raises(SystemExit, match="no nsys executable"):
        main(["--out", str(tmp_path), "--nsys", str(tmp_path / "nowhere" / "nsys"), "--sizes", "tiny"])


def _schemas(path: Path) -> dict[str, str]:
    with closing(sqlite3.connect(path)) as db:
        return dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())


def _full_export(slim: Path, out: Path) -> Path:
    """A copy of a slim export given back what slim_copy removes: OS runtime calls with call stacks
    (as many rows as the reference trace had), nsys's overhead ranges, the environment and working
    folder, and an environment interned as one NUL-separated string."""
    shutil.copyfile(slim, out)
    with closing(sqlite3.connect(out)) as db, db:  # the dropped tables' columns: as nsys declares them
        db.execute(f'CREATE TABLE {OS_RUNTIME.name} (start INTEGER NOT NULL, "end" INTEGER NOT NULL, globalTid INTEGER, '
                   'nameId INTEGER NOT NULL, callchainId INTEGER NOT NULL)')
        db.executemany(f"INSERT INTO {OS_RUNTIME.name} VALUES (?, ?, 7, 1, ?)", ((i, i + 5, i) for i in range(35_004)))
        db.execute(f"CREATE TABLE {OS_RUNTIME_CALLCHAINS.name} (id INTEGER NOT NULL, symbol INTEGER NOT NULL, "
                   "stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth))")
        db.executemany(f"INSERT INTO {OS_RUNTIME_CALLCHAINS.name} VALUES (?, 1, ?)", ((i // 2, i % 2) for i in range(55_978)))
        db.execute(f'CREATE TABLE {PROFILER_OVERHEAD.name} (start INTEGER NOT NULL, "end" INTEGER NOT NULL, nameId INTEGER NOT NULL)')
        db.execute(f"INSERT INTO {PROFILER_OVERHEAD.name} VALUES (0, 10, 1)")
        db.executemany(f"INSERT INTO {CAPTURE_METADATA.name} VALUES (?, ?)", [
            ("PROCESS_0:WORKING_DIR", "/home/someone"), ("PROCESS_0:ENVIRONMENT_VARIABLE", "TOKEN=secret")])
        db.execute(f"INSERT INTO {STRINGS.name} (value) VALUES ('HOME=/home/someone' || char(0) || 'TOKEN=secret')")
    return out


def test_slim_copy_drops_unread_tables_and_the_environment_but_keeps_every_schema(fixture_trace, tmp_path):
    export = _full_export(fixture_trace("small_ctx128_train_fp32.sqlite"), tmp_path / "full.sqlite")
    slim = slim_copy(export, tmp_path / "slim.sqlite")
    before, after = _schemas(export), _schemas(slim)
    assert set(before) - set(after) == set(DROPPED_TABLES)
    assert all(after[table] == before[table] for table in after)
    with closing(sqlite3.connect(slim)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone() == (16759,)
        assert db.execute("SELECT COUNT(*) FROM NVTX_EVENTS").fetchone() == (206,)
        assert db.execute("SELECT COUNT(*) FROM META_DATA_CAPTURE WHERE name LIKE '%ENVIRONMENT%' "
                          "OR name LIKE '%WORKING_DIR'").fetchone() == (0,)
        assert db.execute("SELECT COUNT(*) FROM StringIds WHERE instr(CAST(value AS BLOB), X'00') > 0").fetchone() == (0,)
    assert slim.stat().st_size < export.stat().st_size  # VACUUM gives the dropped pages back


def test_compressed_copy_decompresses_to_the_original(tmp_path):
    original = tmp_path / "trace.sqlite"
    original.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 100)
    content = original.read_bytes()
    compressed = compress_xz(original)
    assert compressed.name == "trace.sqlite.xz" and not original.exists()
    assert lzma.decompress(compressed.read_bytes()) == content


def test_phase_spans_of_the_reference_traces(fixture_trace):
    spans = measured_phase_spans_ms(fixture_trace("small_ctx128_train_fp32.sqlite"))
    assert spans == pytest.approx({"forward": 38.252239333, "backward": 38.445931, "optimizer_step": 16.947347})
    assert measured_phase_spans_ms(fixture_trace("small_ctx256_forward_fp32.sqlite")) == {"forward": 20.887439}


def test_the_sweep_forward_span_is_the_analyzers_figure(fixture_trace):
    from analysis import analyze_trace

    path = fixture_trace("small_ctx128_train_fp32.sqlite")
    phases = analyze_trace(path)["phases"]
    assert measured_phase_spans_ms(path) == pytest.approx({p: v["cpu_span_ms_per_pass"] for p, v in phases.items()})


def test_phase_spans_of_an_export_without_nvtx_are_empty(tmp_path):
    path = tmp_path / "empty.sqlite"
    sqlite3.connect(path).close()
    assert measured_phase_spans_ms(path) == {}
