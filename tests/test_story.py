"""The facts several answers share (analysis.questions.shared.story): launch-bound share, the profiler's
overhead from a plain and an nsys run of the same configuration, the unprofiled forward time."""
from __future__ import annotations

import pytest

from analysis.questions.shared import story
from analysis.questions.shared.results_files import read_results_dir
from cs336_profile.results import write_results

ENVIRONMENT = {"device": "cuda", "gpu_name": "NVIDIA H100 80GB HBM3"}


def overhead_row(size, step_ms, forward_ms):
    return {"size": size, "context_length": 128, "mode": "train", "dtype": "fp32", "compile": False,
            "steps_each": 50, "plain_step_ms_median": step_ms, "plain_forward_ms_median": forward_ms,
            "annotated_step_ms_median": step_ms + 1, "annotated_forward_ms_median": forward_ms + 1}


def bench_row(size, warmup_steps, forward_ms_mean, dtype="fp32"):
    return {"size": size, "context_length": 256, "batch_size": 4, "mode": "forward-backward", "dtype": dtype,
            "compile": False, "attention": "naive", "device": "cuda", "warmup_steps": warmup_steps,
            "measured_steps": 10, "status": "ok", "forward_ms_mean": forward_ms_mean}


@pytest.fixture
def results(tmp_path):
    write_results(tmp_path, "overhead", [overhead_row("small", 80.0, 20.0), overhead_row("medium", 100.0, 40.0)],
                  config={}, environment=ENVIRONMENT, name="overhead")
    write_results(tmp_path, "overhead", [overhead_row("small", 120.0, 25.0)], config={}, environment=ENVIRONMENT,
                  name="overhead_nsys")
    write_results(tmp_path, "bench", [bench_row("small", 2, 20.0), bench_row("small", 0, 90.0)], config={},
                  environment=ENVIRONMENT, name="bench_a")
    write_results(tmp_path, "bench", [bench_row("small", 5, 26.0), bench_row("small", 5, 10.0, dtype="bf16")],
                  config={}, environment=ENVIRONMENT, name="bench_b")
    return read_results_dir(tmp_path)


def test_profiler_overhead_pairs_the_plain_and_the_nsys_run_of_one_configuration(results):
    table = story.profiler_overhead(results)
    assert table["size"].tolist() == ["small"]  # medium ran only without nsys
    row = table.iloc[0]
    assert (row["step_ms"], row["step_ms_nsys"], row["forward_ms"], row["forward_ms_nsys"]) == (80.0, 120.0, 20.0, 25.0)
    assert row["step_added_share"] == pytest.approx(0.5)
    assert row["forward_added_share"] == pytest.approx(0.25)


def test_unprofiled_forward_spans_the_runs_with_warm_up_and_matches_a_trace_config(results):
    bench = story.unprofiled_forward(results)
    fp32 = story.bench_match(bench, {"size": "small", "context_length": 256, "dtype": "fp32"})
    # the run without warm-up (90 ms: its first step's one-off cost) is left out
    assert (fp32["bench_forward_ms_min"], fp32["bench_forward_ms_max"], fp32["bench_runs"]) == (20.0, 26.0, 2)
    assert fp32["bench_mode"] == "forward-backward"
    assert story.bench_match(bench, {"size": "small", "context_length": 256, "dtype": "bf16"})["bench_runs"] == 1
    assert story.bench_match(bench, {"size": "small", "context_length": 128}) is None


def test_launch_bound_share_is_idle_over_gpu_span():
    summary = {"trace": "t.sqlite", "config": None,
               "phases": {"forward": {"kernel_ms_per_pass": 3.0, "gpu_span_ms_per_pass": 12.0, "idle_ms_per_pass": 9.0}}}
    assert story.idle_share(summary) == 0.75
    assert story.idle_share(summary, "backward") is None
    table = story.launch_bound([summary, {"trace": "u.sqlite", "phases": {}}])
    assert table["trace"].tolist() == ["t"]
    assert table["launch_bound"].tolist() == [True]
