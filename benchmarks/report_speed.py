"""`make report`'s command, cold and warm, against the time to merely decompress its traces.

    python -m benchmarks.report_speed [--runs N]

The floor is `xz -dc TRACE > /dev/null` of every shipped trace (`nsys_runs/traces/*.sqlite.xz`),
one after another. Cold: the report command (`analyze-nsys` on those traces and
`nsys_runs/results`, HTML + Markdown + JSON) into an empty output folder with an empty
decompression cache (`CS336_PROFILE_CACHE`); warm: the same command again, as a user re-running
`make report` gets it. Whole processes; the best of `--runs` for each; prints seconds and
multiples of the floor.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.analysis_speed import REPO

TRACES = sorted((REPO / "nsys_runs" / "traces").glob("*.sqlite.xz"))
RESULTS = REPO / "nsys_runs" / "results"


def floor_s() -> float:
    """Wall time to decompress every shipped trace to /dev/null."""
    started = time.perf_counter()
    for trace in TRACES:
        subprocess.run(["xz", "-dc", str(trace)], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def report_s(out: Path, cache: Path) -> float:
    """Wall time of the report command writing into `out`, decompressing into `cache`."""
    command = [sys.executable, "-m", "analysis.cli", *map(str, TRACES), "--results", str(RESULTS),
               "--format", "html,md,json", "--out", str(out)]
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   env={**os.environ, "CS336_PROFILE_CACHE": str(cache)})
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs of each; the fastest counts (default 1)")
    args = parser.parse_args(argv)
    floor = min(floor_s() for _ in range(args.runs))
    cold, warm = float("inf"), float("inf")
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="report_speed_") as tmp:
            out, cache = Path(tmp) / "report", Path(tmp) / "cache"
            cold = min(cold, report_s(out, cache))
            warm = min(warm, report_s(out, cache))
            shutil.rmtree(cache, ignore_errors=True)
    print(f"{len(TRACES)} traces, {sum(t.stat().st_size for t in TRACES) / 2**20:.1f} MiB compressed; {os.cpu_count()} cores")
    print(f"decompress floor (xz -dc): {floor:6.1f} s")
    print(f"report, cold:              {cold:6.1f} s  ({cold / floor:.1f}x the floor; goal <= 8x)")
    print(f"report, warm:              {warm:6.1f} s  ({warm / floor:.1f}x the floor; goal <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
