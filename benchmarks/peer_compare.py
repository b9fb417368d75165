"""analyze-nsys against nsys-ai (a DuckDB + Parquet cache analyzer of the same exports), whole processes, cold and warm.

    python -m benchmarks.peer_compare TRACE.sqlite [TRACE.sqlite ...] [--runs 3]
        [--peer-python PEER_VENV/bin/python] [--analyzer PATH/analyze-nsys] [--modes MODE ...]

For each trace, each a fresh process timed from the outside, alternating, `--runs` rounds, the
median kept, with the CPU time and the peak resident memory of the process and its children
(GNU `/usr/bin/time`; for two processes the summed times and the larger peak):

- floor: `sqlite3` `fetchall` of the columns the loader reads (`benchmarks.analysis_speed`'s
  floor) in a fresh interpreter that imports nothing else;
- nsys-ai cold, its cache (`TRACE.nsys-cache`, written beside the trace) removed first, and warm,
  the same again with that cache present: two processes that answer analyze-nsys's kernel summary
  and NVTX attribution, `nsys-ai skill run top_kernels TRACE --format json` and
  `nsys-ai skill run nvtx_layer_breakdown TRACE --format json -p auto_depth=false` (every NVTX
  depth, phases included); the cold pair builds the Parquet export and then the NVTX kernel map;
- analyze-nsys cold: `analyze-nsys TRACE --format json --no-cache`;
- analyze-nsys first: the same without `--no-cache` into a fresh output folder, which stores the
  trace's tables (`<out>/trace-tables/`, where the analyzer has that cache) and its summary;
- analyze-nsys warm: the same again with `<out>/results.db` removed first, so the analysis runs
  again from the stored tables, as after a change of analysis code or range names. Where the
  analyzer keeps no tables for the trace (one without the table cache, or a trace too small to be
  worth keeping) this is "-": its second analysis reads the export again, as cold;
- analyze-nsys renamed: the same with `--warmup-steps K`, K new in each round (1, 2, ...), and
  `<out>` as the runs above left it, `results.db` included: the summary is made again from the
  stored tables, as when a user asks for other range names, and the input's hash is the one
  `results.db` keeps ("-" as for warm where no tables are kept);
- analyze-nsys again: the same command once more with `<out>` as the runs above left it, as a user
  repeats a command: the summary is served from `<out>/results.db` (the peer's warm run repeats
  its command over its own cache the same way).

`--modes` times only some of these (e.g. the warm ones on a trace too large to time cold often;
a warm mode whose cold one is not chosen builds its cache once, untimed). Prints three rows per
trace as it is done: median wall seconds, median CPU seconds (user + system, which a busy machine
disturbs less), peak MiB.

nsys-ai runs from the interpreter given by `--peer-python` (its own virtual environment; without
it the peer columns are "-"). It reads an export through DuckDB's `sqlite` extension, which DuckDB
downloads on first use; offline, install it from a file first (`INSTALL '<path>'` in that DuckDB).
Without it nsys-ai falls back to plain `sqlite3`, writes its indexes into the trace, builds no cache
and leaves some fields empty: this benchmark checks for the extension first, and stops if a peer
run changes a trace. Each trace is linked into a temporary folder, so the peer's cache is written
there and not beside the input.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.analysis_speed import REPO, compile_checkout, floor_command, kernel_count, trace_floor_queries

PEER_QUERIES = (("top_kernels",), ("nvtx_layer_breakdown", "-p", "auto_depth=false"))
PEER_CACHE_SUFFIX = ".nsys-cache"  # nsys_ai.parquet_cache._cache_dir_for
TABLES_FOLDER = "trace-tables"  # analysis.app.cli.TRACE_TABLES
RESULTS_DB = "results.db"  # analysis.app.cli.RESULTS_DB
MODES = ("floor", "peer cold", "peer warm", "ours cold", "ours first", "ours warm", "ours renamed", "ours again")
MIB = 1 << 20
TIME = "/usr/bin/time"  # GNU time: the peak RSS and CPU time of a process and its reaped children

@dataclass
class Run:
    """One timed process (or pair): its wall and CPU seconds and the peak resident bytes of its tree."""

    wall_s: float
    cpu_s: float
    peak_rss_bytes: int


@dataclass
class TraceRuns:
    """Every round's runs of one trace, by mode."""

    trace: Path
    kernels: int
    floor_queries: list[str]
    runs: dict[str, list[Run]] = field(default_factory=lambda: {mode: [] for mode in MODES})

    def median_s(self, mode: str) -> float | None:
        return statistics.median(run.wall_s for run in self.runs[mode]) if self.runs[mode] else None

    def median_cpu_s(self, mode: str) -> float | None:
        return statistics.median(run.cpu_s for run in self.runs[mode]) if self.runs[mode] else None

    def peak_mib(self, mode: str) -> float | None:
        return max(run.peak_rss_bytes for run in self.runs[mode]) / MIB if self.runs[mode] else None


def run_process(command: list[str], env: dict[str, str] | None = None, cwd: Path = REPO) -> tuple[Run, str]:
    """Run one process to its end under `/usr/bin/time`: its `Run` and its standard output. Raises on
    a non-zero exit with the last line of its standard error."""
    with tempfile.NamedTemporaryFile("w+") as usage, tempfile.TemporaryFile("w+") as out, \
            tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        result = subprocess.run([TIME, "-f", "%M %U %S", "-o", usage.name, *command],
                                stdout=out, stderr=err, cwd=cwd, env=env, check=False)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
        peak_kib, user_s, system_s = usage.read().split()[-3:]  # a failed command's line comes first
    if result.returncode != 0:
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{' '.join(command[:4])}...: exit {result.returncode}: {last}")
    return Run(elapsed, float(user_s) + float(system_s), int(peak_kib) * 1024), stdout


def floor_run(trace: Path, queries: list[str]) -> Run:
    """A fresh interpreter reading the floor's columns."""
    return run_process(floor_command(trace, queries))[0]


def check_peer(peer_python: str) -> None:
    """Stop unless the peer's DuckDB loads its sqlite extension: without it nsys-ai queries the
    export through plain sqlite3 opened for writing (it adds its indexes to the file) and keeps no
    cache, so neither its figures nor the traces would stay what they are."""
    loads = subprocess.run([peer_python, "-c", "import duckdb; duckdb.connect().execute('LOAD sqlite_scanner')"],
                           capture_output=True, text=True, check=False)
    if loads.returncode != 0:
        last = (loads.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{peer_python}: DuckDB cannot load its sqlite extension ({last}); install it "
                         "from a local file: INSTALL '<path>/sqlite_scanner.duckdb_extension'")


def peer_pair(peer_python: str, linked: Path) -> Run:
    """The two nsys-ai processes in a row: their summed wall time and the larger peak. Stops when
    they changed the trace."""
    before = linked.stat()
    runs = []
    for query in PEER_QUERIES:
        run, stdout = run_process([peer_python, "-m", "nsys_ai", "skill", "run", query[0], str(linked),
                                   "--format", "json", *query[1:]], cwd=linked.parent)
        if not isinstance(json.loads(stdout), list):
            raise SystemExit(f"nsys-ai {query[0]} on {linked.name} printed no JSON rows")
        runs.append(run)
    after = linked.stat()
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise SystemExit(f"nsys-ai wrote into {linked.resolve()}")
    return Run(sum(run.wall_s for run in runs), sum(run.cpu_s for run in runs),
               max(run.peak_rss_bytes for run in runs))


def remove_peer_cache(linked: Path) -> None:
    """nsys-ai's cache of a trace and its build lock, so that the next run is cold."""
    cache = linked.with_suffix(PEER_CACHE_SUFFIX)
    shutil.rmtree(cache, ignore_errors=True)
    for lock in linked.parent.glob(f"{cache.name}*"):
        lock.unlink()


def analyzer_run(analyzer: list[str], trace: Path, out: Path, env: dict[str, str], *options: str) -> Run:
    """One `analyze-nsys TRACE --format json` process into `out`; fails when it wrote no JSON."""
    json_path = out / f"{trace.stem}.json"
    json_path.unlink(missing_ok=True)
    run, _ = run_process([*analyzer, str(trace), "--format", "json", "--out", str(out), *options], env=env)
    if not json_path.is_file():
        raise SystemExit(f"analyze-nsys on {trace.name} wrote no {json_path.name}")
    return run


def measure_round(result: TraceRuns, modes: tuple[str, ...], analyzer: list[str], peer_python: str | None,
                  work: Path, env: dict[str, str]) -> None:
    """One round of the chosen modes on one trace, appended to `result`; a warm mode whose cache
    is missing (its cold mode not chosen) builds it first, untimed."""
    trace, linked, out = result.trace, work / result.trace.name, work / "out"
    if "floor" in modes:
        result.runs["floor"].append(floor_run(trace, result.floor_queries))
    if peer_python and "peer cold" in modes:
        remove_peer_cache(linked)
        result.runs["peer cold"].append(peer_pair(peer_python, linked))
    if peer_python and "peer warm" in modes:
        if not linked.with_suffix(PEER_CACHE_SUFFIX).is_dir():
            peer_pair(peer_python, linked)
        if not linked.with_suffix(PEER_CACHE_SUFFIX).is_dir():
            raise SystemExit(f"nsys-ai built no {PEER_CACHE_SUFFIX} for {trace.name}")
        result.runs["peer warm"].append(peer_pair(peer_python, linked))
    if "ours cold" in modes:
        cold_out = work / "out-no-cache"
        shutil.rmtree(cold_out, ignore_errors=True)
        result.runs["ours cold"].append(analyzer_run(analyzer, trace, cold_out, env, "--no-cache"))
    if "ours first" in modes:
        shutil.rmtree(out, ignore_errors=True)
        result.runs["ours first"].append(analyzer_run(analyzer, trace, out, env))
    if "ours warm" in modes:
        if not (out / TABLES_FOLDER).is_dir():
            shutil.rmtree(out, ignore_errors=True)
            analyzer_run(analyzer, trace, out, env)
        if (out / TABLES_FOLDER).is_dir():  # else this analyzer keeps no table cache
            (out / RESULTS_DB).unlink(missing_ok=True)
            result.runs["ours warm"].append(analyzer_run(analyzer, trace, out, env))
    if "ours renamed" in modes:
        if not (out / TABLES_FOLDER).is_dir():
            shutil.rmtree(out, ignore_errors=True)
            analyzer_run(analyzer, trace, out, env)
        if (out / TABLES_FOLDER).is_dir():
            warmup_steps = str(len(result.runs["ours renamed"]) + 1)  # a summary no earlier round asked for
            result.runs["ours renamed"].append(analyzer_run(analyzer, trace, out, env, "--warmup-steps", warmup_steps))
    if "ours again" in modes:
        if not (out / RESULTS_DB).is_file():
            shutil.rmtree(out, ignore_errors=True)
            analyzer_run(analyzer, trace, out, env)
        result.runs["ours again"].append(analyzer_run(analyzer, trace, out, env))


# Each mode's column: as wide as its head, and at least 10 characters.
WIDTHS = {mode: max(10, len(mode)) for mode in MODES}


def header() -> str:
    """The column heads of `trace_rows`."""
    return f"{'trace':<40} {'kernels':>11} {'figure':<9} " + " ".join(f"{mode:>{WIDTHS[mode]}}" for mode in MODES)


def trace_rows(result: TraceRuns) -> list[str]:
    """Three rows of one trace: median wall seconds, median CPU seconds, peak MiB."""
    rows = []
    for name, figure, digits in (("wall s", TraceRuns.median_s, 2), ("CPU s", TraceRuns.median_cpu_s, 2),
                                 ("peak MiB", TraceRuns.peak_mib, 0)):
        cells = " ".join(f"{value:>{WIDTHS[mode]}.{digits}f}" if (value := figure(result, mode)) is not None
                         else f"{'-':>{WIDTHS[mode]}}" for mode in MODES)
        first = (f"{result.trace.name:<40} {result.kernels:>11,}" if not rows else f"{'':<40} {'':>11}")
        rows.append(f"{first} {name:<9} {cells}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peer_compare", description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path, help="nsys SQLite exports (.sqlite)")
    parser.add_argument("--runs", type=int, default=3, help="rounds per trace; the median counts (default 3)")
    parser.add_argument("--peer-python", help="the Python of a virtual environment with nsys-ai installed")
    parser.add_argument("--analyzer", help="the analyze-nsys executable (default: this checkout's, "
                                           "`python -m analysis.app.cli`)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=MODES, metavar="MODE",
                        help=f"what to time, among: {', '.join(repr(mode) for mode in MODES)} (default: all)")
    args = parser.parse_args(argv)
    analyzer = [args.analyzer] if args.analyzer else [sys.executable, "-m", "analysis.app.cli"]
    if args.peer_python:
        check_peer(args.peer_python)
    print(compile_checkout())
    print(header())
    print("-" * len(header()))
    with tempfile.TemporaryDirectory(prefix="peer_compare_") as tmp:
        work = Path(tmp)
        env = {**os.environ, "CS336_PROFILE_CACHE": str(work / "input-cache")}
        for trace in args.traces:
            (work / trace.name).symlink_to(trace.resolve())
            result = TraceRuns(trace, kernel_count(trace), trace_floor_queries(trace))
            for _ in range(args.runs):
                measure_round(result, tuple(args.modes), analyzer, args.peer_python, work, env)
            remove_peer_cache(work / trace.name)
            print("\n".join(trace_rows(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
