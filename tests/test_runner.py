"""The bench on the CPU: every mode, OOM as a result, the results files and the CLI."""
from __future__ import annotations

import csv
import json
from datetime import datetime

import pytest
import torch

from cs336_profile import bench
from cs336_profile.bench import ConfigResult, is_out_of_memory, run_config, run_configs
from cs336_profile.results import read_results, write_results
from cs336_profile.run import main
from tests.cpu_torch import tiny


@pytest.mark.parametrize("mode, phases", [
    ("forward", {"forward"}),
    ("forward-backward", {"forward", "loss", "backward"}),
    ("train", {"forward", "loss", "backward", "optimizer_step"}),
])
def test_one_config_in_each_mode_times_exactly_its_phases(mode, phases):
    result = run_config(tiny(mode=mode))
    row = result.summary
    assert row["status"] == "ok" and row["parameters"] == 1_411_392
    for phase in ("forward", "loss", "backward", "optimizer_step"):
        assert (row[f"{phase}_ms_mean"] is not None) == (phase in phases), phase
    assert row["step_ms_mean"] >= sum(row[f"{phase}_ms_mean"] for phase in phases)
    assert row["tokens_per_s"] == pytest.approx(4 * 8 / (row["step_ms_mean"] / 1e3))
    assert row["peak_memory_bytes"] is None  # CPU: no CUDA allocator
    assert [(s["step_kind"], s["step_index"]) for s in result.steps] == [("warmup", 0), ("measured", 0), ("measured", 1)]


def test_bf16_autocast_runs_on_the_cpu():
    assert run_config(tiny(dtype="bf16", measured_steps=1)).summary["status"] == "ok"


def test_out_of_memory_is_recorded_and_the_next_config_runs(monkeypatch):
    real_step = bench.run_step

    def step_that_runs_out_of_memory(run, workload, range_name):
        if run.context_length == 16:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return real_step(run, workload, range_name)

    monkeypatch.setattr(bench, "run_step", step_that_runs_out_of_memory)
    first, second = run_configs([tiny(context_length=16), tiny(context_length=8)], progress=False)
    assert first.summary["status"] == "OOM"
    measurements = [key for key in first.summary if key.endswith(("_ms_mean", "_ms_std", "_bytes"))]
    assert measurements and all(first.summary[key] is None for key in measurements)
    assert first.summary["tokens_per_s"] is None and first.steps == []
    assert second.summary["status"] == "ok" and len(second.steps) == 3
    assert first.summary.keys() == second.summary.keys()


def test_other_errors_are_not_hidden(monkeypatch):
    def broken_step(*_):
        raise RuntimeError("shape mismatch")
    monkeypatch.setattr(bench, "run_step", broken_step)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        run_config(tiny())


def test_out_of_memory_is_recognized_when_raised_from_another_error():
    try:
        try:
            raise torch.OutOfMemoryError("CUDA out of memory")
        except torch.OutOfMemoryError as oom:
            raise RuntimeError("compilation failed") from oom
    except RuntimeError as wrapped:
        assert is_out_of_memory(wrapped)
    assert not is_out_of_memory(RuntimeError("index out of range"))


def test_results_files_hold_the_same_rows_and_nulls_for_non_finite(tmp_path):
    rows = [{"status": "ok", "forward_ms_mean": 1.5, "forward_ms_std": float("nan")},
            {"status": "OOM", "forward_ms_mean": None, "forward_ms_std": None}]
    path = write_results(tmp_path, "demo", rows, config={"a": 1}, environment={"gpu_name": None})
    document = json.loads(path.read_text())
    assert set(document) == {"experiment", "created", "environment", "config", "rows"}
    assert document["experiment"] == "demo" and document["config"] == {"a": 1}
    datetime.fromisoformat(document["created"])
    assert document["rows"][0]["forward_ms_std"] is None
    with open(tmp_path / "demo.csv") as file:
        table = list(csv.DictReader(file))
    assert [row["status"] for row in table] == ["ok", "OOM"] and table[1]["forward_ms_mean"] == ""


def test_bench_command_is_the_default_and_writes_summary_and_step_files(tmp_path, capsys):
    main(["--sizes", "tiny", "--context-lengths", "8", "16", "--mode", "forward", "--warmup", "0",
          "--steps", "2", "--device", "cpu", "--results-dir", str(tmp_path), "--name", "demo", "--no-progress"])
    summary, steps = read_results(tmp_path / "demo.json"), read_results(tmp_path / "demo_steps.json")
    assert summary["experiment"] == "bench" and steps["experiment"] == "bench_steps"
    assert {"torch", "cuda", "gpu_name", "nvtx", "python"} <= set(summary["environment"])
    assert summary["config"]["sizes"] == ["tiny"] and summary["config"]["warmup"] == 0
    assert [(r["context_length"], r["status"], r["config_index"]) for r in summary["rows"]] == [(8, "ok", 0), (16, "ok", 1)]
    assert len(steps["rows"]) == 4 and {r["step_kind"] for r in steps["rows"]} == {"measured"}
    out = capsys.readouterr().out
    assert "forward ms" in out
    # the runner ends by saying where its results went, once per file pair
    assert out.splitlines()[-2:] == [f"results: {tmp_path / 'demo.json'} and demo.csv beside it",
                                     f"results: {tmp_path / 'demo_steps.json'} and demo_steps.csv beside it"]


def test_results_are_saved_after_every_configuration(tmp_path):
    saved = []
    run_configs([tiny(measured_steps=1), tiny(measured_steps=1, context_length=4)], progress=False,
                on_result=lambda results: saved.append(len(results)))
    assert saved == [1, 2]


def test_run_config_rejects_bad_settings():
    with pytest.raises(ValueError, match="mode"):
        tiny(mode="inference")
    with pytest.raises(ValueError, match="emit_nvtx needs a CUDA device"):
        tiny(emit_nvtx=True)


def test_config_result_rows_are_json_ready():
    result = run_config(tiny(measured_steps=1))
    assert isinstance(result, ConfigResult)
    json.dumps(result.summary)
    json.dumps(result.steps)
