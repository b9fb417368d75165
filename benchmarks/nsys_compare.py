"""analyze-nsys against nsys's own reports on the same traces, whole processes, median of 3.

    python -m benchmarks.nsys_compare TRACE.sqlite [TRACE.sqlite ...] [--runs 3] [--nsys nsys]

For each trace: `nsys stats` with the three reports that answer the same questions
(`cuda_gpu_kern_sum`, `nvtx_kern_sum`, `nvtx_gpu_proj_sum`, CSV to a temporary folder) and
`analyze-nsys TRACE --format json --no-cache --jobs 1`, each a fresh process timed from the
outside, alternating, `--runs` times; prints the medians and their ratio. Without `nsys` on the
PATH it says so and times analyze-nsys alone.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.analysis_speed import REPO

NSYS_REPORTS = ("cuda_gpu_kern_sum", "nvtx_kern_sum", "nvtx_gpu_proj_sum")


def nsys_command(nsys: str, trace: Path, out: Path) -> list[str]:
    """`nsys stats` with the three reports, CSV files under `out`."""
    reports = [arg for report in NSYS_REPORTS for arg in ("--report", report)]
    return [nsys, "stats", *reports, "--format", "csv",
            "--output", str(out / trace.stem), str(trace)]


def analyzer_command(trace: Path, out: Path) -> list[str]:
    """`analyze-nsys TRACE --format json --no-cache`, one process, as a user types it."""
    return [sys.executable, "-m", "analysis.cli", str(trace), "--format", "json", "--no-cache", "--jobs", "1",
            "--out", str(out)]


def wall_s(command: list[str]) -> float:
    """Wall time of one process; its failure ends the benchmark with its last line."""
    started = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{' '.join(command[:3])} failed on {command[-1]}: {last}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.nsys_compare", description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path, help="nsys SQLite exports")
    parser.add_argument("--runs", type=int, default=3, help="runs of each tool per trace; the median counts")
    parser.add_argument("--nsys", default="nsys", help="nsys executable")
    args = parser.parse_args(argv)
    nsys = shutil.which(args.nsys)
    if nsys is None:
        print(f"{args.nsys} is not on the PATH: analyze-nsys alone")
    print(f"{'trace':<48} {'nsys s':>7} {'analyze-nsys s':>14} {'nsys / analyze-nsys':>20}")
    with tempfile.TemporaryDirectory(prefix="nsys_compare_") as tmp:
        for trace in args.traces:
            nsys_times, ours = [], []
            for _ in range(args.runs):
                if nsys:
                    nsys_times.append(wall_s(nsys_command(nsys, trace, Path(tmp))))
                ours.append(wall_s(analyzer_command(trace, Path(tmp))))
            ours_s = statistics.median(ours)
            theirs = f"{statistics.median(nsys_times):7.2f}" if nsys_times else f"{'-':>7}"
            ratio = f"{statistics.median(nsys_times) / ours_s:19.2f}x" if nsys_times else f"{'-':>20}"
            print(f"{trace.name:<48} {theirs} {ours_s:14.2f} {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
