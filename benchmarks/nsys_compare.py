"""analyze-nsys against nsys's own reports on the same traces, whole processes, median of 3.

    python -m benchmarks.nsys_compare TRACE.sqlite [TRACE.sqlite ...] [--runs 3] [--nsys nsys]

For each trace: `nsys stats` with the three reports that answer the same questions
(`cuda_gpu_kern_sum`, `nvtx_kern_sum`, `nvtx_gpu_proj_sum`, CSV to a temporary folder) and
`analyze-nsys TRACE --format json --no-cache --jobs 1`, each a fresh process timed from the
outside, alternating, `--runs` times; prints the medians and their ratio. Beside them, timed the
same way, the floor of any Python analyzer of the export: a fresh interpreter that reads the
columns the loader reads with `sqlite3` (`benchmarks.analysis_speed`'s floor), and the same after
`import numpy` (the least an analyzer built on numpy does before it reads a row's meaning).
Without `nsys` on the PATH it says so and times analyze-nsys alone. First it prints what a
Python process there starts with: the versions of Python, numpy, pandas and pyarrow, whether
imports find compiled bytecode (a host that sets PYTHONDONTWRITEBYTECODE over packages installed
without it compiles every module at every start), and the yardsticks of a Python analyzer's fixed
cost, timed the same way: an empty interpreter, `import numpy` and `import pandas`.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.analysis_speed import REPO, compile_checkout, floor_command, trace_floor_queries

NSYS_REPORTS = ("cuda_gpu_kern_sum", "nvtx_kern_sum", "nvtx_gpu_proj_sum")


def nsys_command(nsys: str, trace: Path, out: Path) -> list[str]:
    """`nsys stats` with the three reports, CSV files under `out`."""
    reports = [arg for report in NSYS_REPORTS for arg in ("--report", report)]
    return [nsys, "stats", *reports, "--format", "csv",
            "--output", str(out / trace.stem), str(trace)]


def analyzer_command(trace: Path, out: Path) -> list[str]:
    """`analyze-nsys TRACE --format json --no-cache`, one process, as a user types it."""
    return [sys.executable, "-m", "analysis.app.cli", str(trace), "--format", "json", "--no-cache", "--jobs", "1",
            "--out", str(out)]


def wall_s(command: list[str], expected: list[Path]) -> float:
    """Wall time of one process; its failure, or a run that left any of the ``expected`` files
    unwritten (a tool can exit 0 having done nothing), ends the benchmark with its last line."""
    for path in expected:
        path.unlink(missing_ok=True)
    started = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - started
    missing = [path.name for path in expected if not path.is_file()]
    if result.returncode != 0 or missing:
        last = (result.stdout.strip().splitlines() or ["no output"])[-1]
        why = f"exit {result.returncode}" if result.returncode else f"wrote no {', '.join(missing)}"
        raise SystemExit(f"{' '.join(command[:3])} on {command[-1]}: {why}: {last}")
    return elapsed


def environment() -> str:
    """One line on what a Python process here starts with: versions, and where imports find bytecode."""
    def version(name: str) -> str:
        return importlib.metadata.version(name) if importlib.util.find_spec(name) else "none"

    numpy_init = importlib.util.find_spec("numpy").origin
    compiled = os.path.exists(importlib.util.cache_from_source(numpy_init))
    return (f"Python {sys.version.split()[0]}, numpy {version('numpy')}, pandas {version('pandas')}, "
            f"pyarrow {version('pyarrow')}; PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}, "
            f"PYTHONPYCACHEPREFIX={os.environ.get('PYTHONPYCACHEPREFIX', '')!r}; numpy's bytecode "
            f"{'found' if compiled else 'not found'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.nsys_compare", description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path, help="nsys SQLite exports")
    parser.add_argument("--runs", type=int, default=3, help="runs of each tool per trace; the median counts")
    parser.add_argument("--nsys", default="nsys", help="nsys executable")
    args = parser.parse_args(argv)
    nsys = shutil.which(args.nsys)
    if nsys is None:
        print(f"{args.nsys} is not on the PATH: analyze-nsys alone")
    print(compile_checkout())
    print(environment())
    yardsticks = {code: statistics.median(wall_s([sys.executable, "-c", code], []) for _ in range(args.runs))
                  for code in ("pass", "import numpy", "import pandas")}
    print("python -c: " + ", ".join(f"'{code}' {seconds:.2f} s" for code, seconds in yardsticks.items()))
    print(f"{'trace':<48} {'nsys s':>7} {'read s':>7} {'numpy+read s':>12} {'analyze-nsys s':>14} "
          f"{'nsys / analyze-nsys':>20}")
    with tempfile.TemporaryDirectory(prefix="nsys_compare_") as tmp:
        for trace in args.traces:
            queries = trace_floor_queries(trace)
            nsys_times, reads, numpy_reads, ours = [], [], [], []
            for _ in range(args.runs):
                if nsys:
                    reports = [Path(tmp) / f"{trace.stem}_{report}.csv" for report in NSYS_REPORTS]
                    nsys_times.append(wall_s(nsys_command(nsys, trace, Path(tmp)), reports))
                reads.append(wall_s(floor_command(trace, queries), []))
                numpy_reads.append(wall_s(floor_command(trace, queries, numpy=True), []))
                ours.append(wall_s(analyzer_command(trace, Path(tmp)), [Path(tmp) / f"{trace.stem}.json"]))
            ours_s = statistics.median(ours)
            theirs = f"{statistics.median(nsys_times):7.2f}" if nsys_times else f"{'-':>7}"
            ratio = f"{statistics.median(nsys_times) / ours_s:19.2f}x" if nsys_times else f"{'-':>20}"
            print(f"{trace.name:<48} {theirs} {statistics.median(reads):7.2f} {statistics.median(numpy_reads):12.2f} "
                  f"{ours_s:14.2f} {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
