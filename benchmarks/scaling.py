"""How the analysis grows with trace size: 100k, 1M and 5M kernels by default, to 100M.

    python -m benchmarks.scaling [--source TRACE.sqlite[.xz]] [--sizes 100000 1000000 5000000] [--runs N]

Builds each size with the trace scaler (`nsys_runs.scale_trace`, repeating the measured steps of
the reference training trace, or of `--source`: a two-GPU trace gives two-GPU sizes) into
`.cache/bench/` (reused when present; an `.xz` source is decompressed there once), measures each as
`benchmarks.analysis_speed` does (its read floor up to 20M kernels: the floor holds every row it
reads as Python objects), and prints the figures, the growth from the first size to the second,
and whether the targets hold: 10x the kernels in at most 11x the time; 1M kernels in under 30 s
and 2 GB; 20M kernels in under 1 GiB; 100M kernels analyzed within this machine's memory.
"""
from __future__ import annotations

import argparse
import lzma
import shutil
import sys
import time
from pathlib import Path

from benchmarks.analysis_speed import REPO, format_table, measure
from nsys_runs.scale_trace import scale_trace

DEFAULT_SOURCE = REPO.parent / "shared" / "fixtures" / "nsys" / "small_ctx128_train_fp32.sqlite"
BENCH_DIR = REPO / ".cache" / "bench"
DEFAULT_SIZES = (100_000, 1_000_000, 5_000_000)
MAX_GROWTH_FOR_10X = 11.0
MILLION_KERNEL_LIMIT_S = 30.0
MILLION_KERNEL_LIMIT_BYTES = 2 * 10**9
TWENTY_MILLION_LIMIT_BYTES = 1 << 30
FLOOR_MAX_KERNELS = 20_000_000


def source_export(source: Path) -> Path:
    """``source`` as an uncompressed export: an ``.xz`` one decompressed into `BENCH_DIR` (once)."""
    if source.suffix != ".xz":
        return source
    out = BENCH_DIR / source.stem
    if not out.exists():
        BENCH_DIR.mkdir(parents=True, exist_ok=True)
        part = out.with_name(out.name + ".part")
        with lzma.open(source) as packed, open(part, "wb") as unpacked:
            shutil.copyfileobj(packed, unpacked)
        part.rename(out)
    return out


def scaled_trace(source: Path, kernels: int) -> tuple[Path, float | None]:
    """The scaled trace of `kernels` kernels and its build time (None when it was reused)."""
    out = BENCH_DIR / f"{source.stem}_{kernels}.sqlite"
    if out.exists():
        return out, None
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    scale_trace(source, out, kernels=kernels)
    return out, time.perf_counter() - started


def target_lines(measurements) -> list[str]:
    """One line per target the measured sizes can speak to."""
    lines = []
    by_kernels = sorted(measurements, key=lambda m: m.kernels)
    if len(by_kernels) >= 2:
        small, large = by_kernels[:2]
        kernel_growth = large.kernels / small.kernels
        time_growth = large.analysis_s / small.analysis_s
        allowed = MAX_GROWTH_FOR_10X * kernel_growth / 10
        verdict = "ok" if time_growth <= allowed else "MISSED"
        lines.append(
            f"growth {small.kernels:,} -> {large.kernels:,} kernels ({kernel_growth:.1f}x): "
            f"time {time_growth:.1f}x, memory {large.peak_rss_bytes / small.peak_rss_bytes:.1f}x "
            f"(target <= {allowed:.1f}x time): {verdict}"
        )
    for m in by_kernels:
        if 19_000_000 <= m.kernels <= 21_000_000:
            verdict = "ok" if m.peak_rss_bytes < TWENTY_MILLION_LIMIT_BYTES else "MISSED"
            lines.append(f"20M kernels: {m.peak_rss_bytes / 2**20:,.0f} MiB (target < 1 GiB): {verdict}")
        if m.kernels >= 95_000_000:
            lines.append(f"100M kernels: analyzed in {m.analysis_s:.0f} s, {m.peak_rss_bytes / 2**30:.1f} GiB "
                         f"of this machine's {_machine_bytes() / 2**30:.0f} GiB: ok")
        if 900_000 <= m.kernels <= 1_100_000:
            verdict = "ok" if m.analysis_s < MILLION_KERNEL_LIMIT_S and m.peak_rss_bytes < MILLION_KERNEL_LIMIT_BYTES else "MISSED"
            lines.append(
                f"1M kernels: {m.analysis_s:.1f} s, {m.peak_rss_bytes / 1e9:.2f} GB "
                f"(target < {MILLION_KERNEL_LIMIT_S:.0f} s, < {MILLION_KERNEL_LIMIT_BYTES / 1e9:.0f} GB): {verdict}"
            )
    return lines


def _machine_bytes() -> int:
    """This machine's memory (MemTotal in /proc/meminfo)."""
    with open("/proc/meminfo") as meminfo:
        return next(int(line.split()[1]) * 1024 for line in meminfo if line.startswith("MemTotal:"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE,
                        help="trace with step_<i> ranges to scale (.sqlite or .sqlite.xz)")
    parser.add_argument("--sizes", type=int, nargs="+", default=DEFAULT_SIZES, help="kernel counts to build")
    parser.add_argument("--runs", type=int, default=1, help="analysis runs per size; the fastest counts (default 1)")
    args = parser.parse_args(argv)
    measurements = []
    source = source_export(args.source)
    for kernels in args.sizes:
        trace, build_s = scaled_trace(source, kernels)
        built = "reused" if build_s is None else f"built in {build_s:.1f} s"
        print(f"{trace.name}: {trace.stat().st_size / 2**20:,.0f} MiB, {built}", flush=True)
        measurements.append(measure(trace, args.runs, floor=kernels <= FLOOR_MAX_KERNELS))
    print(format_table(measurements))
    print("\n".join(target_lines(measurements)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
