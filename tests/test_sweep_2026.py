"""The sweep's 2026 side: the fitted context grid, the 2026 nsys options, the option probe."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from nsys_runs.context_fit import largest_fitting_context, profiled_contexts
from nsys_runs.nsys_options import (
    CAPTURE_OPTIONS,
    NSYS_2026_OPTIONS,
    NSYS_PROFILE_OPTIONS,
    merge_options,
    option_groups,
    profile_setup,
    usable_options,
)
from nsys_runs.sweep import TraceConfig, main, runner_command
from tests.test_sweep import fake_nsys  # noqa: F401 - the fixture

# A stand-in for `python -m cs336_profile.run bench`: writes the runner's results file, status OOM
# above FAKE_FIT_LIMIT tokens of context, as the real runner does when a step runs out of memory.
FAKE_RUNNER = textwrap.dedent('''\
    #!{python}
    import os, sys
    from cs336_profile.results import write_results
    args = sys.argv[1:]
    value = lambda flag: args[args.index(flag) + 1]
    context = int(value("--context-lengths"))
    status = "OOM" if context > int(os.environ["FAKE_FIT_LIMIT"]) else "ok"
    with open(os.environ["FAKE_FIT_LOG"], "a") as log:
        log.write(f"{{context}} {{status}} {{'--handout' in args and value('--handout')}}\\n")
    row = {{"status": status, "handout": value("--handout") if "--handout" in args else "2025",
           "d_model": 64, "forward_ms_mean": 1.0 if status == "ok" else None, "peak_memory_bytes": context}}
    write_results(value("--results-dir"), "bench", [row], config={{}}, environment={{"gpu_name": None}},
                  name=value("--name"))
''')


@pytest.mark.parametrize("limit, largest, probed", [
    (2048, 2048, [256, 512, 1024, 2048, 4096]),
    (300, 256, [256, 512]),
    (200, None, [256]),
    (10**9, 16384, [256, 512, 1024, 2048, 4096, 8192, 16384]),
])
def test_context_search_goes_up_until_out_of_memory(limit, largest, probed):
    found, probes = largest_fitting_context(lambda context: context <= limit)
    assert found == largest and [context for context, _ in probes] == probed
    assert [ok for _, ok in probes] == [context <= limit for context in probed]


def test_context_search_backs_off_from_a_start_that_does_not_fit():
    found, probes = largest_fitting_context(lambda context: context <= 1000, start=4096)
    assert found == 512 and probes == [(4096, False), (2048, False), (1024, False), (512, True)]


def test_profiled_contexts_are_three_powers_of_two_above_128_ending_at_the_largest():
    assert profiled_contexts(2048) == [512, 1024, 2048]
    assert profiled_contexts(512) == [256, 512] and profiled_contexts(None) == []


def test_fitted_grid_records_every_probe_and_profiles_three_contexts(tmp_path, fake_nsys, monkeypatch):
    runner = tmp_path / "bin" / "fake_runner"
    runner.write_text(FAKE_RUNNER.format(python=sys.executable))
    runner.chmod(0o755)
    monkeypatch.setenv("FAKE_FIT_LIMIT", "1024")
    monkeypatch.setenv("FAKE_FIT_LOG", str(tmp_path / "fit.log"))
    out = tmp_path / "sweep"
    main(["--out", str(out), "--nsys", str(fake_nsys), "--python", str(runner), "--handout", "2026",
          "--sizes", "tiny", "--modes", "forward", "train", "--fit-contexts", "--subset-sizes", "--device", "cpu",
          "--no-progress"])
    fit = json.loads((out / "fit.json").read_text())["rows"]
    assert [(r["context_length"], r["status"], r["mode"]) for r in fit] == [
        (256, "ok", "train"), (512, "ok", "train"), (1024, "ok", "train"), (2048, "OOM", "train")]
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert [(r["context_length"], r["mode"]) for r in rows] == [
        (256, "forward"), (256, "train"), (512, "forward"), (512, "train"), (1024, "forward"), (1024, "train")]
    assert all(r["stem"].endswith("_2026") and r["handout"] == "2026" and r["d_model"] == 64 for r in rows)
    assert all(line.endswith(" 2026") for line in (tmp_path / "fit.log").read_text().splitlines())
    timings = json.loads((out / "tiny_ctx1024_train_fp32_2026.timings.json").read_text())
    assert (timings["handout"], timings["d_model"]) == ("2026", 64)


def test_2026_runner_command_names_the_handout_and_layer_ranges(tmp_path):
    config = TraceConfig(size="xl", context_length=128, mode="train", dtype="fp32", handout="2026", layer_ranges=True)
    assert config.stem == "xl_ctx128_train_fp32_layers_2026"
    command = runner_command(config, "python3", tmp_path)
    assert command[-3:] == ["--layer-ranges", "--handout", "2026"]


def test_option_sets_with_memory_events_and_capture():
    options, environment = profile_setup("2026", memory_events=True, capture_measured=True)
    assert options[:len(NSYS_2026_OPTIONS)] == NSYS_2026_OPTIONS
    assert options[len(NSYS_2026_OPTIONS):] == ("--cuda-memory-usage=true", *CAPTURE_OPTIONS)
    assert environment == {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync", "NSYS_NVTX_PROFILER_REGISTER_ONLY": "0"}
    options_2025, _ = profile_setup("2025", memory_events=True, capture_measured=False)
    assert "--cuda-memory-usage=false" not in options_2025 and "--cuda-memory-usage=true" in options_2025
    assert profile_setup("2025", False, False) == (NSYS_PROFILE_OPTIONS, {})
    assert merge_options(("-t", "cuda", "--x=1"), ("--trace=nvtx",)) == ("--x=1", "--trace=nvtx")


FAKE_PICKY_NSYS = textwrap.dedent('''\
    #!/bin/sh
    # refuses GPU metrics, as nsys does without the privileges to sample them
    case "$*" in *gpu-metrics*) echo "Illegal --gpu-metrics-devices argument: insufficient privileges" >&2; exit 1;; esac
    # takes backtraces but records none without CPU sampling
    case "$*" in *cudabacktrace*--sample=none*|*--sample=none*cudabacktrace*)
      echo "WARNING: CUDA backtraces will not be collected because CPU sampling is disabled.";; esac
    while [ "$1" != "-o" ]; do shift; done
    touch "$2.sqlite"
''')


def test_refused_options_are_recorded_and_dropped(tmp_path):
    nsys = tmp_path / "nsys"
    nsys.write_text(FAKE_PICKY_NSYS)
    nsys.chmod(0o755)
    options, environment = profile_setup("2026", memory_events=False, capture_measured=True)
    assert "--sample=none" not in options  # backtraces need CPU sampling
    assert option_groups(options)[-1] == CAPTURE_OPTIONS  # tried together
    kept = usable_options(str(nsys), sys.executable, options, environment, tmp_path)
    assert "--gpu-metrics-devices=0" not in kept and set(kept) == set(options) - {"--gpu-metrics-devices=0"}
    rows = json.loads((tmp_path / "nsys_options.json").read_text())["rows"]
    assert rows[-1]["together"] and rows[-1]["options"] == " ".join(kept) and rows[-1]["status"] == "ok"
    failed = [(r["options"], r["error"]) for r in rows if r["status"] != "ok"]
    assert failed == [("--gpu-metrics-devices=0", "Illegal --gpu-metrics-devices argument: insufficient privileges")]


def test_options_nsys_takes_but_ignores_together_are_reported(tmp_path):
    nsys = tmp_path / "nsys"
    nsys.write_text(FAKE_PICKY_NSYS)
    nsys.chmod(0o755)
    kept = usable_options(str(nsys), sys.executable, ("--sample=none", "--cudabacktrace=all"), {}, tmp_path)
    assert kept == ("--sample=none", "--cudabacktrace=all")  # each works alone
    rows = json.loads((tmp_path / "nsys_options.json").read_text())["rows"]
    assert [(r["options"], r["status"]) for r in rows] == [
        ("--sample=none", "ok"), ("--cudabacktrace=all", "ok"), ("--sample=none --cudabacktrace=all", "failed")]
    assert "will not be collected" in rows[-1]["error"]


def test_slim_copy_makes_source_paths_relative_to_the_working_folder(tmp_path):
    import sqlite3
    from contextlib import closing

    from analysis.load.export_map import CAPTURE_METADATA, STRINGS
    from nsys_runs.slim import slim_copy
    export = tmp_path / "trace.sqlite"
    with closing(sqlite3.connect(export)) as db, db:
        db.execute(STRINGS.create_sql())
        db.executemany(f"INSERT INTO {STRINGS.name} VALUES (?, ?)", [
            (1, "/home/u/repo/cs336_profile/model.py"), (2, "/usr/lib/python3.12/threading.py"),
            (3, "/home/u/repo2/x.py"), (4, "/opt/other/y.py")])
        db.execute(CAPTURE_METADATA.create_sql())
        db.execute(f"INSERT INTO {CAPTURE_METADATA.name} VALUES ('PROCESS_0:WORKING_DIR', '/home/u/repo')")
    slim = slim_copy(export, tmp_path / "slim.sqlite", working_folders=("/opt/other",))
    with closing(sqlite3.connect(slim)) as db:
        assert [v for (v,) in db.execute("SELECT value FROM StringIds ORDER BY id")] == [
            "cs336_profile/model.py", "/usr/lib/python3.12/threading.py", "/home/u/repo2/x.py", "y.py"]
        assert db.execute("SELECT COUNT(*) FROM META_DATA_CAPTURE").fetchone() == (0,)
