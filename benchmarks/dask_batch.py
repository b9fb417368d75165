"""A batch of 200 traces through `analyze-nsys`: the local process pool against a Dask cluster.

    python -m benchmarks.dask_batch [--traces 200] [--workers N]

The traces are copies of the four small forward traces shipped in `nsys_runs/traces/`
(decompressed once), under a temporary folder, each made distinct by its SQLite header's
`user_version` (`analyze-nsys` analyzes identical files once). Each run is a whole `analyze-nsys --format json
--no-cache` process: first with its local pool (`--jobs N`), then with `--scheduler ADDRESS` of a
`distributed.LocalCluster` of N single-threaded worker processes started here beforehand (its
start-up is timed apart; a real cluster is up before the batch). Both runs must write the same
JSON. Prints the figures; needs the dask extra.
"""
from __future__ import annotations

import argparse
import logging
import lzma
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from benchmarks.analysis_speed import REPO

SOURCES = tuple(REPO / "nsys_runs" / "traces" / f"small_ctx{ctx}_forward_fp32.sqlite.xz" for ctx in (128, 256, 512, 1024))


def make_batch(folder: Path, count: int) -> list[Path]:
    """`count` traces in `folder`: copies of the sources in turn, each under its own name and with
    its own content (the copy's index as the database's `user_version`, which no analysis reads)."""
    plain = []
    for source in SOURCES:
        target = folder / "sources" / source.name.removesuffix(".xz")
        target.parent.mkdir(parents=True, exist_ok=True)
        with lzma.open(source) as packed, open(target, "wb") as out:
            shutil.copyfileobj(packed, out)
        plain.append(target)
    traces = []
    for index in range(count):
        source = plain[index % len(plain)]
        trace = folder / "batch" / f"{source.stem}_{index:03d}.sqlite"
        trace.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, trace)
        with closing(sqlite3.connect(trace)) as conn:
            conn.execute(f"PRAGMA user_version = {index + 1}")
        traces.append(trace)
    return traces


def run_cli(traces: list[Path], out: Path, *options: str) -> float:
    """Wall time of one whole `analyze-nsys --format json --no-cache` process."""
    command = [sys.executable, "-m", "analysis.app.cli", *map(str, traces), "--format", "json", "--no-cache",
               "--out", str(out), *options]
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dask_batch", description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=200, help="traces in the batch (default 200)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="local processes and Dask workers (default: all cores)")
    args = parser.parse_args(argv)
    try:
        from distributed import LocalCluster
    except ModuleNotFoundError:
        print("needs the dask extra: pip install 'cs336-profile[dask]'", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="dask_batch_") as tmp:
        folder = Path(tmp)
        traces = make_batch(folder, args.traces)
        total_mib = sum(trace.stat().st_size for trace in traces) / 2**20
        print(f"{len(traces)} traces, {total_mib:,.0f} MiB; {args.workers} local processes / Dask workers "
              f"on {os.cpu_count()} cores")
        local_s = run_cli(traces, folder / "local", "--jobs", str(args.workers))
        print(f"local process pool:           {local_s:6.1f} s  ({local_s / len(traces) * 1000:.0f} ms a trace)", flush=True)
        started = time.perf_counter()
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=logging.CRITICAL) as cluster:
            startup_s = time.perf_counter() - started
            dask_s = run_cli(traces, folder / "dask", "--scheduler", cluster.scheduler_address)
        print(f"Dask LocalCluster:            {dask_s:6.1f} s  ({dask_s / len(traces) * 1000:.0f} ms a trace; "
              f"cluster start-up {startup_s:.1f} s apart)")
        same = all((folder / "local" / name).read_bytes() == (folder / "dask" / name).read_bytes()
                   for name in (f"{trace.stem}.json" for trace in traces))
        print(f"same JSON from both:          {'yes' if same else 'NO'}")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
