"""A sweep-sized batch: 40 traces through `analyze-nsys --format json`, cold, then from the cache.

    python -m benchmarks.many_traces [--jobs N]

The 40 traces are the two reference traces (training, forward only), each with 0 to 19 extra
copies of its measured steps (`nsys_runs.scale_trace`), so all 40 differ in content and size;
they are built once into `.cache/bench/sweep/`. The command runs twice on a fresh output folder:
the first run analyzes every trace (in parallel, `--jobs` processes), the second must take all of
them from `<out>/results.db`, which the benchmark checks (no entry is written again).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import sqlite_utils

from benchmarks.analysis_speed import REPO
from nsys_runs.scale_trace import scale_trace

FIXTURES = REPO.parent / "shared" / "fixtures" / "nsys"
SOURCES = ("small_ctx128_train_fp32.sqlite", "small_ctx256_forward_fp32.sqlite")
COPIES_PER_SOURCE = 20  # extra step copies 0..19 for each source: 40 traces
SWEEP_DIR = REPO / ".cache" / "bench" / "sweep"
REPORT_DIR = REPO / ".cache" / "bench" / "sweep_report"


def sweep_traces() -> list[Path]:
    """The 40 traces, built when missing."""
    SWEEP_DIR.mkdir(parents=True, exist_ok=True)
    traces = []
    for name in SOURCES:
        source = FIXTURES / name
        for repeat in range(COPIES_PER_SOURCE):
            out = SWEEP_DIR / f"{source.stem}_x{repeat:02d}.sqlite"
            if not out.exists():
                scale_trace(source, out, repeat=repeat)
            traces.append(out)
    return traces


def run_cli(traces: list[Path], jobs: int | None) -> float:
    """Wall time of one `analyze-nsys --format json` run over `traces`."""
    command = [sys.executable, "-m", "analysis.app.cli", *map(str, traces), "--format", "json", "--out", str(REPORT_DIR)]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def cache_entries() -> dict[str, int]:
    """key -> rowid of every entry in the results database (an entry written again gets a new rowid)."""
    db = sqlite_utils.Database(REPORT_DIR / "results.db")
    return {row["key"]: row["rowid"] for row in db.query("SELECT rowid, key FROM traces")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.many_traces", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, help="parallel processes for analyze-nsys (default: its own)")
    args = parser.parse_args(argv)
    traces = sweep_traces()
    total_mib = sum(trace.stat().st_size for trace in traces) / 2**20
    print(f"{len(traces)} traces, {total_mib:,.0f} MiB, in {SWEEP_DIR.relative_to(REPO)}")
    shutil.rmtree(REPORT_DIR, ignore_errors=True)
    cold_s = run_cli(traces, args.jobs)
    entries = cache_entries()
    cached_s = run_cli(traces, args.jobs)
    rewritten = sum(cache_entries().get(key) != rowid for key, rowid in entries.items())
    outputs = len(list(REPORT_DIR.glob("*.json")))
    print(f"first run (analyzes all):     {cold_s:6.1f} s, {len(entries)} cache entries, {outputs} JSON files")
    print(f"second run (from the cache):  {cached_s:6.1f} s, {len(entries) - rewritten} of {len(entries)} entries reused")
    return 0 if rewritten == 0 and len(entries) == len(traces) else 1


if __name__ == "__main__":
    sys.exit(main())
