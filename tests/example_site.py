"""The example sites the report and browser tests read: the one the README's quick start renders
(the committed example traces of both handouts and the multi-GPU runs, and the results, in
``nsys_runs/``) and one from the reference traces beside the repository with results files that
the runner writes here on the CPU at tiny scale, plus a sweep table with an out-of-memory
configuration. Each is built once per test session."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis import analyze_trace
from analysis.app.answers import report_data
from analysis.report import render_report
from cs336_profile.results import write_results
from tests.conftest import REPO

EXAMPLES = REPO / "nsys_runs"
# The trace folders `make report` reads: the 2025 handout, the 2026 handout, the multi-GPU runs.
EXAMPLE_TRACE_FOLDERS = ("traces", "traces/2026", "traces/multi_gpu")
FIXTURE_TRACES = ("small_ctx128_train_fp32.sqlite", "small_ctx256_forward_fp32.sqlite", "attention_bench.sqlite")
# One configuration of the sweep that ran out of memory: the grid must say so.
SWEEP_OOM_ROW = {"stem": "small_ctx1024_train_fp32", "size": "small", "context_length": 1024, "mode": "train",
                 "dtype": "fp32", "compile": False, "attention": "naive", "status": "OOM"}
REFUSED = {"trace": "broken.sqlite", "error": "not an nsys export: the file is not SQLite"}


def cpu_results(results_dir: Path) -> Path:
    """Results files of the runner at tiny scale on the CPU (bench, warm-up variants, bf16, mixed
    precision, attention, memory), plus a sweep table with one out-of-memory configuration."""
    run = pytest.importorskip("cs336_profile.run")
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread avoids contention with parallel test workers
    try:
        _run_experiments(run.main, ["--device", "cpu", "--results-dir", str(results_dir), "--no-progress"])
    finally:
        torch.set_num_threads(threads)
    write_results(results_dir, "sweep", [SWEEP_OOM_ROW], config={}, environment={})
    return results_dir


def _run_experiments(run, common: list[str]) -> None:
    bench = ["bench", "--sizes", "tiny", "--context-lengths", "16", "--warmup", "1", "--steps", "2"]
    for extra in ([], ["--warmup", "0", "--name", "bench_warmup0"], ["--dtype", "bf16", "--name", "bench_bf16"]):
        run(bench + extra + common)
    run(["mixed-precision"] + common)
    run(["attention", "--implementations", "eager", "sdpa", "--head-dims", "16", "--seq-lens", "32", "64",
         "--passes", "3", "--warmup-passes", "1"] + common)
    run(["memory", "--size", "tiny", "--context-lengths", "16", "--dtypes", "fp32"] + common)


def example_inputs(kind: str, tmp_path: Path, fixture_dir: Path | None = None) -> tuple[list[Path], Path]:
    """(traces, results folder) of the ``examples`` site, or of the ``reference`` site (the traces
    of ``fixture_dir``, tests/data unpacked)."""
    if kind == "examples":
        traces = [path for folder in EXAMPLE_TRACE_FOLDERS for path in sorted((EXAMPLES / folder).glob("*.sqlite.xz"))]
        if not traces or not (EXAMPLES / "results").is_dir():
            pytest.skip("no committed examples in nsys_runs/")
        return traces, EXAMPLES / "results"
    traces = [fixture_dir / name for name in FIXTURE_TRACES]
    return traces, cpu_results(tmp_path / "results")


def render_example_site(out_dir: Path, work_dir: Path, kind: str = "examples", fixture_dir: Path | None = None) -> Path:
    """Render HTML and Markdown from the ``kind`` inputs into ``out_dir``."""
    traces, results_dir = example_inputs(kind, work_dir, fixture_dir)
    summaries = [analyze_trace(path) for path in traces]
    render_report(report_data(summaries, results_dir), [REFUSED], out_dir)
    return out_dir
