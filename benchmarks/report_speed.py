"""`make report`'s command, cold and warm, against the time to merely decompress its traces.

    python -m benchmarks.report_speed [--runs N]

The floor is `xz -dc TRACE > /dev/null` of every trace `make report` analyzes (`nsys_runs/traces/`
and its `2026/` and `multi_gpu/` folders), one after another. Cold: the report command (`analyze-nsys` on those traces and
`nsys_runs/results`, HTML + Markdown + JSON) into an empty output folder with an empty
decompression cache (`CS336_PROFILE_CACHE`); warm: the same command again, as a user re-running
`make report` gets it. Whole processes; the best of `--runs` for each; prints seconds and
multiples of the floor, and the CPU seconds (user + system, the command's worker processes
included), which a machine busy with other work inflates less than wall time.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.analysis_speed import REPO

# The traces `make report` analyzes (its TRACES): the 2025 handout's, the 2026 handout's, the multi-GPU runs.
TRACES = [trace for folder in ("", "2026", "multi_gpu")
          for trace in sorted((REPO / "nsys_runs" / "traces" / folder).glob("*.sqlite.xz"))]
RESULTS = REPO / "nsys_runs" / "results"


def _timed(command: list[str], **options) -> tuple[float, float]:
    """(wall s, CPU s of it and its children) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, **options)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def floor_s() -> tuple[float, float]:
    """(wall s, CPU s) to decompress every shipped trace to /dev/null."""
    times = [_timed(["xz", "-dc", str(trace)], stdout=subprocess.DEVNULL) for trace in TRACES]
    return sum(t[0] for t in times), sum(t[1] for t in times)


def report_s(out: Path, cache: Path) -> tuple[float, float]:
    """(wall s, CPU s) of the report command writing into `out`, decompressing into `cache`."""
    command = [sys.executable, "-m", "analysis.app.cli", *map(str, TRACES), "--results", str(RESULTS),
               "--format", "html,md,json", "--out", str(out)]
    return _timed(command, cwd=REPO, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                  env={**os.environ, "CS336_PROFILE_CACHE": str(cache)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs of each; the fastest counts (default 1)")
    args = parser.parse_args(argv)
    floor = min(floor_s() for _ in range(args.runs))
    cold, warm = (float("inf"), float("inf")), (float("inf"), float("inf"))
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="report_speed_") as tmp:
            out, cache = Path(tmp) / "report", Path(tmp) / "cache"
            cold = min(cold, report_s(out, cache))
            warm = min(warm, report_s(out, cache))
            shutil.rmtree(cache, ignore_errors=True)
    print(f"{len(TRACES)} traces, {sum(t.stat().st_size for t in TRACES) / 2**20:.1f} MiB compressed; {os.cpu_count()} cores")
    print(f"{'':28} {'wall s':>7} {'x floor':>8} {'CPU s':>7} {'x floor':>8}")
    for label, (wall, cpu), goal in (("decompress floor (xz -dc)", floor, ""), ("report, cold", cold, "goal <= 8x"),
                                     ("report, warm", warm, "goal <= 2x")):
        print(f"{label:28} {wall:7.1f} {wall / floor[0]:7.1f}x {cpu:7.1f} {cpu / floor[1]:7.1f}x  {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
