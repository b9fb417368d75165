"""What the table cache saves: whole `analyze-nsys` processes on one trace, reading its export or its cached tables.

    python -m benchmarks.table_cache TRACE.sqlite [TRACE.sqlite ...] [--runs N]

For each trace, four `analyze-nsys TRACE --format json --jobs 1` processes in a row, timed from
outside (wall clock of the whole process, imports included), into a fresh output folder and a
fresh cache folder (`CS336_PROFILE_CACHE`):

1. `--no-cache`: the export read, nothing kept;
2. cold: the export read, its tables and summary stored (`<out>/trace-tables/`, `<out>/results.db`);
3. warm tables: `results.db` removed first, so the analysis runs again as after a change of
   analysis code or range names, its tables read from `<out>/trace-tables/`;
4. results cache: the same command again, the summary served from `results.db`.

With `--runs N` the four are repeated N times (fresh folders each) and each one's fastest time
kept, which steadies the figures on a busy machine. Prints the times, the speed-up of 3 over 2,
and the table entry's size against the trace's.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.analysis_speed import REPO

TABLES_FOLDER = "trace-tables"  # analysis.app.cli.TRACE_TABLES
RESULTS_DB = "results.db"  # analysis.app.cli.RESULTS_DB
MIB = 1 << 20


def timed_run(trace: Path, out: Path, cache_home: Path, *options: str) -> float:
    """Wall seconds of one `analyze-nsys` process; raises when it fails."""
    command = [sys.executable, "-m", "analysis.app.cli", str(trace), "--out", str(out), "--format", "json",
               "--jobs", "1", *options]
    env = {**os.environ, "CS336_PROFILE_CACHE": str(cache_home), "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def measure(trace: Path) -> dict[str, float]:
    """The four runs' seconds and the table entry's size in bytes (``entry_bytes``)."""
    with tempfile.TemporaryDirectory(prefix="table-cache-bench-") as scratch:
        out, cache_home = Path(scratch) / "out", Path(scratch) / "cache"
        figures = {"no_cache_s": timed_run(trace, out, cache_home, "--no-cache"),
                   "cold_s": timed_run(trace, out, cache_home)}
        (out / RESULTS_DB).unlink()
        figures["warm_tables_s"] = timed_run(trace, out, cache_home)
        figures["results_cache_s"] = timed_run(trace, out, cache_home)
        figures["entry_bytes"] = folder_bytes(out / TABLES_FOLDER)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.table_cache", description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path, help="nsys SQLite exports")
    parser.add_argument("--runs", type=int, default=1, help="repetitions; the fastest of each run counts (default 1)")
    args = parser.parse_args(argv)
    print("| trace | size | --no-cache | cold | warm tables | × faster | results cache | table entry |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for trace in args.traces:
        runs = [measure(trace) for _ in range(args.runs)]
        m = {name: min(run[name] for run in runs) for name in runs[0]}
        size = trace.stat().st_size
        print(f"| {trace.name} | {size / MIB:,.0f} MiB | {m['no_cache_s']:.1f} s | {m['cold_s']:.1f} s | "
              f"{m['warm_tables_s']:.1f} s | {m['cold_s'] / m['warm_tables_s']:.1f}× | {m['results_cache_s']:.1f} s | "
              f"{m['entry_bytes'] / MIB:,.0f} MiB ({m['entry_bytes'] / size:.0%}) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
