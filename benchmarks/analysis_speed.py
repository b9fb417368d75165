"""How long the analysis of a trace takes, against the floor of merely reading its tables.

    python -m benchmarks.analysis_speed TRACE.sqlite [TRACE.sqlite ...] [--runs N]

For each trace: the floor (sqlite3 `fetchall` of the columns the loader reads from the kernel,
runtime API, NVTX and StringIds tables; best of a few runs, the file warm in the page cache), then
`analysis.analyze_trace` in a fresh Python process set up as analyze-nsys sets up the processes
that analyze (glibc's malloc giving large freed blocks back), timed inside that process around the
call, with the process's peak resident memory and its resident memory before the call
(interpreter plus imports). Memory comes from /proc/self/status (VmHWM, VmRSS): getrusage's
ru_maxrss would carry over the parent's peak through fork and exec. With `--runs N` the analysis
runs N times (a fresh process each) and the fastest time and the highest peak are kept, which
steadies the figures on a busy machine. Prints one table row per trace.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from urllib.request import pathname2url

from analysis.load.export_map import KERNELS, NVTX, RUNTIME, STRINGS

REPO = Path(__file__).resolve().parents[1]
# The packages of this checkout that an analyze-nsys process imports.
CHECKOUT_PACKAGES = ("analysis", "cs336_profile")
FLOOR_RUNS = 3
FLOOR_TABLES = tuple((table.name, tuple(column.name for column in table.columns if column.sql_type == "INTEGER"
                                         and (column.required or table is not KERNELS)))  # not the unread short names
                     for table in (KERNELS, RUNTIME, NVTX)) + ((STRINGS.name, tuple(c.name for c in STRINGS.columns)),)


@dataclass(frozen=True)
class Measurement:
    """One trace: its size, the read floor and the full analysis."""

    trace: Path
    kernels: int
    floor_s: float | None  # None where the floor was not read
    analysis_s: float
    peak_rss_bytes: int
    baseline_rss_bytes: int  # before analyze_trace: interpreter and imports

    @property
    def ratio_to_floor(self) -> float | None:
        return None if self.floor_s is None else self.analysis_s / self.floor_s


def compile_checkout() -> str:
    """Compile this checkout's modules, as an install leaves them, and say so: where
    PYTHONDONTWRITEBYTECODE is set, every timed process would otherwise compile each module edited
    since the last compilation again (about 0.1 s for a few dozen)."""
    import compileall

    done = all(compileall.compile_dir(REPO / package, quiet=1) for package in CHECKOUT_PACKAGES)
    return f"this checkout's modules compiled first ({', '.join(CHECKOUT_PACKAGES)}){'' if done else ': some failed'}"


def _memory_bytes(field: str) -> int:
    """A memory figure of this process from /proc/self/status (`VmRSS` now, `VmHWM` peak)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024  # the kernel reports kB
    raise RuntimeError(f"/proc/self/status has no {field}")


def floor_queries(conn: sqlite3.Connection) -> dict[str, str]:
    """The floor's SELECT of each `FLOOR_TABLES` table this export has, of the columns it has."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    queries = {}
    for table, wanted in FLOOR_TABLES:
        if table in tables:
            present = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
            columns = ", ".join(f'"{column}"' for column in wanted if column in present)
            queries[table] = f"SELECT {columns} FROM {table}"
    return queries


def read_only_uri(trace: Path) -> str:
    """The SQLite URI of ``trace`` opened read-only and immutable, as the analyzer opens its inputs."""
    return f"file:{pathname2url(str(trace.resolve()))}?mode=ro&immutable=1"


def read_only(trace: Path) -> closing[sqlite3.Connection]:
    """A connection to ``trace`` (:func:`read_only_uri`), closed at the end of a ``with`` block."""
    return closing(sqlite3.connect(read_only_uri(trace), uri=True))


# A fresh interpreter's read of the floor's columns: sqlite3 alone, or after ``import numpy``
# (what any analyzer built on numpy pays before it does anything with the rows), with OpenBLAS
# asked for one thread as analyze-nsys asks (:func:`analysis.app.engine.one_blas_thread`).
FLOOR_SCRIPT = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], uri=True)
rows = [conn.execute(sql).fetchall() for sql in sys.argv[2:]]
"""


def floor_command(trace: Path, queries: list[str], numpy: bool = False) -> list[str]:
    """The command line of a fresh interpreter that reads the floor's ``queries`` of ``trace``
    (:func:`floor_queries`), importing numpy first where ``numpy``."""
    first = "import os; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); import numpy" if numpy else ""
    return [sys.executable, "-c", first + FLOOR_SCRIPT, read_only_uri(trace), *queries]


def trace_floor_queries(trace: Path) -> list[str]:
    """The floor's SELECTs for this trace (:func:`floor_queries`)."""
    with read_only(trace) as conn:
        return list(floor_queries(conn).values())


def read_floor_s(trace: Path) -> tuple[float, int]:
    """Best time of `FLOOR_RUNS` plain reads of the needed columns, and the kernel count."""
    with read_only(trace) as conn:
        queries = floor_queries(conn)
        best_s, kernels = float("inf"), 0
        for _ in range(FLOOR_RUNS):
            started = time.perf_counter()
            rows = {table: conn.execute(sql).fetchall() for table, sql in queries.items()}
            best_s = min(best_s, time.perf_counter() - started)
            kernels = len(rows.get(KERNELS.name, ()))
            del rows
        return best_s, kernels


def _analyze_here(trace: Path) -> dict:
    """Child-process side: run the analysis once and report its time and memory, in a process set
    up as analyze-nsys sets up those that analyze (malloc giving large freed blocks back:
    :func:`analysis.app.engine.returned_memory`)."""
    from analysis import analyze_trace
    from analysis.app.engine import returned_memory

    returned_memory()
    baseline_rss_bytes = _memory_bytes("VmRSS")
    started = time.perf_counter()
    analyze_trace(trace)
    return {
        "analysis_s": time.perf_counter() - started,
        "peak_rss_bytes": _memory_bytes("VmHWM"),
        "baseline_rss_bytes": baseline_rss_bytes,
    }


def analyze_in_subprocess(trace: Path) -> dict:
    """Run `analyze_trace(trace)` in a fresh interpreter; its time and memory figures."""
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.analysis_speed", "--child", str(trace)],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"analysis of {trace} failed:\n{result.stderr.strip()}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def kernel_count(trace: Path) -> int:
    """The kernels of a trace: the rows of its export's kernel table."""
    with read_only(trace) as conn:
        return conn.execute(f"SELECT count(*) FROM {KERNELS.name}").fetchone()[0]


def measure(trace: Path, runs: int = 1, floor: bool = True) -> Measurement:
    """Floor first (it also warms the page cache), then the full analysis: best time of `runs`.
    Without ``floor`` only the kernels are counted: the floor's `fetchall` holds every row read as
    Python objects (about 3 GiB at 5M kernels)."""
    floor_s, kernels = read_floor_s(trace) if floor else (None, kernel_count(trace))
    results = [analyze_in_subprocess(trace) for _ in range(runs)]
    return Measurement(
        trace,
        kernels,
        floor_s,
        analysis_s=min(result["analysis_s"] for result in results),
        peak_rss_bytes=max(result["peak_rss_bytes"] for result in results),
        baseline_rss_bytes=min(result["baseline_rss_bytes"] for result in results),
    )


def format_table(measurements: list[Measurement]) -> str:
    """The figures as a fixed-width text table."""
    width = max([40, *(len(m.trace.name) for m in measurements)])
    header = f"{'trace':<{width}} {'kernels':>10} {'floor s':>8} {'analysis s':>10} {'ratio':>6} {'peak MiB':>9} {'base MiB':>9}"
    lines = [header, "-" * len(header)]
    for m in measurements:
        lines.append(
            f"{m.trace.name:<{width}} {m.kernels:>10,} {_figure(m.floor_s, 8, 2)} {m.analysis_s:>10.2f} "
            f"{_figure(m.ratio_to_floor, 6, 1)} "
            f"{m.peak_rss_bytes / 2**20:>9.0f} {m.baseline_rss_bytes / 2**20:>9.0f}"
        )
    return "\n".join(lines)


def _figure(value: float | None, width: int, decimals: int) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{decimals}f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.analysis_speed", description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path, help="nsys SQLite exports")
    parser.add_argument("--runs", type=int, default=1, help="analysis runs per trace; the fastest counts (default 1)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_analyze_here(args.traces[0])))
        return 0
    print(format_table([measure(trace, args.runs) for trace in args.traces]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
