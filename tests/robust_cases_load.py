"""Crafted cases of the loader's second round (issue 20), run through the command line.

Groups are numbered 20 + the issue's group: 22 optional tables (memory events, GPU metrics),
23 ids far past the row count, 24 ranks, 27 text that reaches a terminal or a page, 29 faults
still open from the first round. See :mod:`tests.robust_cases` for what passing means; these
cases add that no impossible figure (negative bytes, a percentage outside 0–100, a doubled
count) reaches a summary.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from analysis.load.export_map import GPU_METRIC_NAMES, GPU_METRICS, OLD_GPUS
from tests import bad_inputs as make
from tests.robust_cases import KERNEL, RUNTIME, Case, _analyzed, _expect, _inputs, _json, _said, _trace, analyze
from tests.robust_harness import Invocation
from tests.synthetic import ALL_REDUCE, GEMM, build_export, rank_process
from tests.test_memory_ledger import EVENTS, MAIN, RANGES

MEMORY = "CUDA_GPU_MEMORY_USAGE_EVENTS"
LEDGER_CONFIG = {"event": "config", "mode": "train", "d_model": 2, "d_ff": 3}
METRIC_NAMES = ("SMs Active [Throughput %]", "Tensor Active [Throughput %]")
GPU_TYPE = 7
HOST_BIT = 1 << 56  # the top byte of globalTid/globalPid: the hardware (host) id


# ----------------------------------------------------------------------------- makers
def ledger_trace(path: Path) -> Path:
    """The memory ledger's synthetic step (two blocks, exact bytes) with a config mark."""
    mark = (json.dumps(LEDGER_CONFIG), 50, 1, MAIN, make.RUN_MARK_DOMAIN)
    return build_export(path, kernels=[(112, 118, 111, 1, MAIN, 99)], ranges=RANGES, memory_events=EVENTS,
                        marks=[mark])


def with_metrics(path: Path, value: int = 40) -> Path:
    """Add GPU metrics to an export: both metrics sampled every 10 µs over the first 5 ms at
    ``value`` % (SMs) and half of it (tensor pipes)."""
    rows = [(t, GPU_TYPE, m, value if m == 0 else value // 2) for t in range(0, 5_000_000, 10_000) for m in (0, 1)]
    return make.edit_export(
        path,
        GPU_METRIC_NAMES.create_sql(),
        *[f"INSERT INTO {GPU_METRIC_NAMES.name} VALUES ({GPU_TYPE}, {i}, '{name}')"
          for i, name in enumerate(METRIC_NAMES)],
        GPU_METRICS.create_sql(),
        f"INSERT INTO {GPU_METRICS.name} VALUES " + ", ".join(map(str, rows)))


def rank_trace(path: Path, *, pids=(100, 200), devices=(0, 1), ranks=(0, 1), world_size=2,
               steps=(True, True)) -> Path:
    """Two ranks (:func:`tests.synthetic.rank_process`); ``steps[i]`` False drops rank i's step ranges."""
    parts = [rank_process(pid, device, rank, 0, [(520, 550)], {"size": "tiny", "mode": "train"})
             for pid, device, rank in zip(pids, devices, ranks)]
    ranges = [r for part, keep in zip(parts, steps) for r in part[0] if keep or not r[0].startswith("step_")]
    path = build_export(path, ranges=ranges, marks=[m for part in parts for m in part[1]],
                        kernels=[k for part in parts for k in part[2]], strings=(GEMM, ALL_REDUCE))
    return make.edit_export(path, "UPDATE NVTX_EVENTS SET text = replace(text, '\"world_size\": 2', "
                                  f"'\"world_size\": {json.dumps(world_size)}') WHERE eventType = 34")


def same_pid_on_another_host(path: Path, pid: int, moved: int) -> Path:
    """Give process ``moved`` the pid ``pid`` on another host: what two containerized ranks look like."""
    shift = f"- ({moved - pid} << 24) + {HOST_BIT}"
    where = "WHERE ((col >> 24) & 16777215) = " + str(moved)
    edits = [(KERNEL, "globalPid"), (RUNTIME, "globalTid"), ("NVTX_EVENTS", "globalTid"), ("NVTX_EVENTS", "endGlobalTid")]
    return make.edit_export(path, *[f"UPDATE {table} SET {col} = {col} {shift} {where.replace('col', col)}"
                                    for table, col in edits])


# ----------------------------------------------------------------------------- checks
def _figures(value, path: str = ""):
    """(path, number) of every number in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _figures(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _figures(item, f"{path}[{index}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


def _impossible(summary: dict) -> list[str]:
    """Figures no trace can have: non-finite, negative bytes or times, shares outside 0–1,
    percentages outside 0–100."""
    found = []
    for path, value in _figures({k: summary.get(k) for k in ("memory_ledger", "gpu_metrics", "phases", "overall")}):
        if not math.isfinite(value):
            found.append(f"{path} = {value}")
        elif re.search(r"bytes|_ms|passes|kernels", path) and "change" not in path and value < 0:
            found.append(f"{path} = {value}")
        elif path.endswith("_pct") and not 0 <= value <= 100:
            found.append(f"{path} = {value}")
    answer = re.sub(r"changes by -", "", (summary.get("memory_ledger") or {}).get("answer") or "")
    if re.search(r"-[\d,.]+ (MiB|GiB)", answer):
        found.append("a negative amount of memory in the mem-f answer")
    return found


def _kept(*noted: str, same_as: str | None = None, keys=("memory_ledger", "gpu_metrics")):
    """Check: bad.json analyzed, no impossible figure, a note holding each of ``noted``; with
    ``same_as`` the ``keys`` equal those of that trace's JSON (a fault the loader must undo)."""
    def check(root: Path, outcome) -> list[str]:
        problems = _analyzed(root, outcome, name="bad.json")
        summary = _json(root, "bad.json") or {}
        problems += _impossible(summary)
        notes = " ".join(summary.get("notes", []))
        problems += [f"no note about {word!r}: {summary.get('notes')}" for word in noted if word not in notes]
        if same_as is not None:
            clean = _json(root, same_as) or {}
            problems += [f"{key} differs from {same_as}" for key in keys
                         if _compared(summary, key) != _compared(clean, key)]
        return problems
    return check


def _compared(summary: dict, key: str):
    """What a crafted copy must share with its clean trace: the memory ledger but its timeline,
    the GPU metrics' means per phase (fewer samples change only the sampling rate)."""
    record = summary.get(key) or {}
    if key == "gpu_metrics":
        return record.get("phases")
    return {k: v for k, v in record.items() if k != "timeline"}


def _pair(make_bad, check, make_clean=ledger_trace):
    """A case analyzing a clean trace and a crafted copy (``bad.sqlite``) in one batch."""
    def build(root: Path) -> Invocation:
        clean = make_clean(_inputs(root) / "clean.sqlite")
        bad = make_bad(make_clean(_inputs(root) / "bad.sqlite"))
        return Invocation(analyze([clean, bad], out=str(root / "out")), [clean, bad], ["out"], check=check)
    return build


def _memory(*sql: str, noted=("memory event",), same=False):
    return _pair(lambda p: make.edit_export(p, *sql),
                 _kept(*noted, same_as="clean.json" if same else None))


def _metrics_trace(path: Path) -> Path:
    return with_metrics(make.runner_trace(path))


def _metrics(*sql: str, noted=("GPU metrics",), same=False):
    return _pair(lambda p: make.edit_export(p, *sql), _kept(*noted, same_as="clean.json" if same else None),
                 make_clean=_metrics_trace)


# ----------------------------------------------------------------------------- 22 optional tables
GROUP_22 = [
    Case(22, "memory-null-bytes", _memory(f"UPDATE {MEMORY} SET bytes = NULL WHERE rowid = 4")),
    Case(22, "memory-text-address", _memory(f"UPDATE {MEMORY} SET address = 'abc' WHERE rowid = 4")),
    Case(22, "memory-null-start", _memory(f"UPDATE {MEMORY} SET start = NULL WHERE rowid = 4")),
    Case(22, "memory-negative-bytes", _memory(f"UPDATE {MEMORY} SET bytes = -4398046511104 WHERE rowid = 4")),
    Case(22, "memory-overflowing-bytes", _memory(f"UPDATE {MEMORY} SET bytes = 9223372036854775807 WHERE rowid IN (4, 5)")),
    Case(22, "memory-unknown-operation", _memory(f"UPDATE {MEMORY} SET memoryOperationType = 7 WHERE rowid = 4")),
    Case(22, "memory-events-twice", _memory(f"INSERT INTO {MEMORY} SELECT * FROM {MEMORY}", noted=("twice",), same=True)),
    Case(22, "metrics-null-values", _metrics("UPDATE GPU_METRICS SET value = NULL WHERE rowid % 4 = 1", same=True)),
    Case(22, "metrics-text-values", _metrics("UPDATE GPU_METRICS SET value = 'n/a' WHERE rowid % 4 = 1", same=True)),
    Case(22, "metrics-out-of-range", _metrics("UPDATE GPU_METRICS SET value = 250 WHERE rowid % 8 = 1",
                                              "UPDATE GPU_METRICS SET value = -3 WHERE rowid % 8 = 5", same=True)),
    Case(22, "metrics-samples-twice", _metrics("INSERT INTO GPU_METRICS SELECT * FROM GPU_METRICS "
                                               "WHERE timestamp < 2000000", noted=("twice",), same=True)),
]


# ----------------------------------------------------------------------------- 23 ids far past the row count
def _far_row(table: str, rowid: int, *, metrics: bool = False):
    """One extra row of ``table`` (a copy of its first, 50 ms after the steps) at ``rowid``."""
    def build(root: Path) -> Invocation:
        trace = _trace(root, "bad.sqlite")
        if metrics:
            with_metrics(trace)
        time = "timestamp" if table == "GPU_METRICS" else "start"
        shifted = ", ".join(f"{c} + 50000000" if c in (time, "end", "rawTimestamp") else c
                            for c in _columns(trace, table))
        make.edit_export(trace, f"INSERT INTO {table} (rowid, {', '.join(_columns(trace, table))}) "
                                f"SELECT {rowid}, {shifted} FROM {table} WHERE rowid = 1")
        return Invocation(analyze([trace], out=str(root / "out")), [trace], ["out"], memory_limit=3 << 30,
                          timeout_s=60, check=lambda r, o: _analyzed(r, o, name="bad.json"))
    return build


def _columns(trace: Path, table: str) -> list[str]:
    import sqlite3

    with sqlite3.connect(trace) as conn:
        names = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    conn.close()
    return names


GROUP_23 = [
    Case(23, "kernel-rowid-4e18", _far_row(KERNEL, 4_000_000_000_000_000_000)),
    Case(23, "kernel-rowid-minus-4e18", _far_row(KERNEL, -4_000_000_000_000_000_000)),
    Case(23, "runtime-rowid-4e18", _far_row(RUNTIME, 4_000_000_000_000_000_000)),
    Case(23, "kernel-rowid-5e9", _far_row(KERNEL, 5_000_000_000)),
    Case(23, "metrics-rowid-5e9", _far_row("GPU_METRICS", 5_000_000_000, metrics=True)),
]


# ----------------------------------------------------------------------------- 24 ranks
def _ranks(make_trace, *checks):
    def build(root: Path) -> Invocation:
        trace = make_trace(_inputs(root) / "bad.sqlite")
        return Invocation(analyze([trace], out=str(root / "out"), fmt="json,html"), [trace], ["out"],
                          check=lambda r, o: _analyzed(r, o, name="bad.json")
                          + [p for c in checks for p in c(_json(r, "bad.json") or {})])
    return build


def _rank_numbers(expected: list[int]):
    def check(summary: dict) -> list[str]:
        ranks = (summary.get("communication") or {}).get("ranks") or []
        found = [r["rank"] for r in ranks]
        passes = [r["passes"] for r in ranks]
        return _expect((found == expected, f"ranks {found}, not {expected}"),
                       (all(p == 2 for p in passes), f"passes per rank {passes}, not 2"))
    return check


def _noted(*words: str):
    def check(summary: dict) -> list[str]:
        notes = " ".join(summary.get("notes", [])).lower()
        return [f"no note about {w!r}: {summary.get('notes')}" for w in words if w.lower() not in notes]
    return check


def _lost_rank(root: Path) -> Invocation:
    both = rank_trace(_inputs(root) / "both.sqlite")
    one = make.edit_export(rank_trace(_inputs(root) / "one.sqlite"),
                           f"DELETE FROM {KERNEL} WHERE ((globalPid >> 24) & 16777215) = 200")
    out = root / "out"
    return Invocation(["analysis.app.cli", "diff", str(both), str(one), "--out", str(out)], [both, one], ["out"],
                      check=lambda r, o: _lost_rank_check(out))


def _lost_rank_check(out: Path) -> list[str]:
    try:
        diff = json.loads((out / "diff.json").read_text())
    except (OSError, ValueError):
        return ["no readable diff.json"]
    return _expect((not diff["overall"].get("faster"), "a lost rank judged a speed-up"),
                   ("rank" in diff.get("why", "").lower(), f"the diff does not say a rank is missing: {diff.get('why')}"))


GROUP_24 = [
    Case(24, "equal-pids-on-two-hosts", _ranks(lambda p: same_pid_on_another_host(
        rank_trace(p, devices=(0, 0)), 100, 200), _rank_numbers([0, 1]), _noted("host"))),
    Case(24, "duplicate-rank-numbers", _ranks(lambda p: rank_trace(p, ranks=(0, 0)), _noted("same rank"))),
    Case(24, "rank-missing-against-world-size", _ranks(lambda p: rank_trace(p, world_size=4), _noted("world_size"))),
    Case(24, "rank-without-steps", _ranks(lambda p: rank_trace(p, steps=(True, False)), _noted("world_size 2"))),
    Case(24, "rank-abc", _ranks(lambda p: rank_trace(p, ranks=(0, "abc")), _noted("rank"))),
    Case(24, "world-size-zero", _ranks(lambda p: rank_trace(p, world_size=0), _noted("world_size"))),
    Case(24, "diff-with-a-lost-rank", _lost_rank),
]


# ----------------------------------------------------------------------------- 27 text reaching terminals and pages
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
FORGED = "good.sqlite: analyzed fine"


def _no_raw_controls(root: Path, outcome) -> list[str]:
    """Check: no control character in the output, no forged line, none in any page or figure."""
    lines = outcome.output.splitlines()
    problems = _expect((not CONTROL.search(outcome.output), f"control characters on stderr: {outcome.output[-300:]!r}"),
                       (not any(line.startswith(FORGED) for line in lines), "a forged line on stderr"))
    for page in (root / "out").rglob("*.*") if (root / "out").is_dir() else ():
        if page.suffix in (".html", ".md", ".svg") and CONTROL.search(page.read_text(errors="replace")):
            problems.append(f"control characters in {page.name}")
    return problems


def _hostile_tables(root: Path) -> Invocation:
    path = _inputs(root) / "tables.sqlite"
    make.edit_export(path, f'CREATE TABLE "a\n{FORGED}\x1b[2J\x07" (x INTEGER)')
    return Invocation(analyze([path], out=str(root / "out")), [path], ["out"], check=_no_raw_controls)


def _hostile_version(root: Path) -> Invocation:
    trace = make.edit_export(make.edit_export(_trace(root), f"ALTER TABLE {KERNEL} DROP COLUMN demangledName"),
                             "UPDATE META_DATA_EXPORT SET value = ?", params=(f"2025\n{FORGED}\x1b]0;owned\x07",))
    return Invocation(analyze([trace], out=str(root / "out")), [trace], ["out"], check=_no_raw_controls)


def _hostile_file_name(root: Path) -> Invocation:
    path = _inputs(root) / f"x\n{FORGED}\x1b[31m.sqlite"
    path.write_text("not a trace\n")
    return Invocation(analyze([path], out=str(root / "out")), [path], ["out"], check=_no_raw_controls)


def _hostile_gpu_name(root: Path) -> Invocation:
    trace = make.edit_export(
        _trace(root), OLD_GPUS.create_sql(),
        f"INSERT INTO {OLD_GPUS.name} VALUES (0, 'NVIDIA H100\x1b[2J\x07\u202egnp.exe', 132, 85000000000, 1980000000)",
        "UPDATE META_DATA_EXPORT SET value = '2025.3\x1b]8;;http://x\x07link\x1b]8;;\x07'")
    return Invocation(analyze([trace], out=str(root / "out"), fmt="json,html,md"), [trace], ["out"],
                      check=lambda r, o: _no_raw_controls(r, o) + _analyzed(r, o))


def _hostile_kernel_name(root: Path) -> Invocation:
    trace = _trace(root, kernel_names=("gemm_\x1b[2J\u202elenrek\x07",))
    return Invocation(analyze([trace], out=str(root / "out"), fmt="json,html,md"), [trace], ["out"],
                      check=lambda r, o: _no_raw_controls(r, o) + _analyzed(r, o))


def _no_dtype(root: Path) -> Invocation:
    without = {k: v for k, v in make.CONFIG.items() if k not in ("dtype", "compile")} | {"context_length": 16}
    traces = [_trace(root, "t0.sqlite"), _trace(root, "t1.sqlite", config=without)]

    def check(r: Path, o) -> list[str]:
        pages = " ".join(p.read_text() for p in (r / "out").glob("*.md")) if (r / "out").is_dir() else ""
        return _expect(("nsys-c" in pages or "Among" in pages, "no nsys-c answer"),
                       ("nan runs" not in pages, "'Among nan runs' in a page"))
    return Invocation(analyze(traces, out=str(root / "out"), fmt="json,md"), traces, ["out"], check=check)


GROUP_27 = [
    Case(27, "table-name-with-escapes", _hostile_tables),
    Case(27, "product-version-with-escapes", _hostile_version),
    Case(27, "file-name-with-escapes", _hostile_file_name),
    Case(27, "gpu-name-and-version-with-escapes", _hostile_gpu_name),
    Case(27, "kernel-name-with-escapes", _hostile_kernel_name),
    Case(27, "runs-without-dtype", _no_dtype),
]


# ----------------------------------------------------------------------------- 29 still open
def _edited(*sql: str, check=None):
    def build(root: Path) -> Invocation:
        trace = make.edit_export(_trace(root, "bad.sqlite"), *sql)
        return Invocation(analyze([trace], out=str(root / "out")), [trace], ["out"],
                          check=check or (lambda r, o: _analyzed(r, o, name="bad.json", rc=(0, 1))))
    return build


def _declared_not_null(table: str, column: str) -> tuple[str, ...]:
    """SQL that declares ``table.column`` NOT NULL after the fact (nsys's declaration, broken data)."""
    return ("PRAGMA writable_schema = ON",
            f"UPDATE sqlite_master SET sql = replace(sql, '{column} INTEGER,', '{column} INTEGER NOT NULL,') "
            f"WHERE name = '{table}'")


def _own_line_rc(rc: int, *words: str):
    return lambda r, o: _expect((o.returncodes[-1] == rc, f"exit status {o.returncodes[-1]}")) + _said(*words)(r, o)


def _out_not_creatable(root: Path) -> Invocation:
    trace = _trace(root)
    return Invocation(analyze([trace], out=str(root / ("x" * 300) / "out")), [trace], [],
                      check=_own_line_rc(2, "--out"))


def _timings_unreadable(root: Path) -> Invocation:
    trace = _trace(root, config=None, timing_marks=False)
    side = trace.with_name("good.timings.json")
    side.symlink_to("/proc/self/mem")  # a regular file whose every read fails (EIO), even for root
    return Invocation(analyze([trace], out=str(root / "out")), [trace], ["out"],
                      check=lambda r, o: _analyzed(r, o) + _expect(("results.db" not in o.output, "blamed on results.db")))


def _ctrl_c(root: Path) -> Invocation:
    traces = [_trace(root, f"t{i}.sqlite", steps=2 + i) for i in range(60)]
    return Invocation(analyze(traces, out=str(root / "out")), traces, ["out"], interrupt_after_s=0.2,
                      interrupt_once=root / "out" / "t1.json", timeout_s=90,
                      check=lambda r, o: _expect((o.returncodes[-1] == 130, f"exit status {o.returncodes[-1]} after Ctrl-C")))


GROUP_29 = [
    Case(29, "null-correlation-ids", _edited(f"UPDATE {KERNEL} SET correlationId = NULL",
                                             f"UPDATE {RUNTIME} SET correlationId = NULL",
                                             check=_own_line_rc(1, "launch call"))),
    Case(29, "null-global-pids", _edited(f"UPDATE {KERNEL} SET globalPid = NULL", check=_own_line_rc(1, "launch call"))),
    Case(29, "null-in-a-not-null-column", _edited(f"UPDATE {KERNEL} SET deviceId = NULL WHERE rowid = 2",
                                                  *_declared_not_null(KERNEL, "deviceId"))),
    Case(29, "stringids-column-renamed", _edited("ALTER TABLE StringIds RENAME COLUMN value TO text",
                                                 check=_own_line_rc(1, "StringIds", "value"))),
    Case(29, "null-range-start", _edited("UPDATE NVTX_EVENTS SET start = NULL WHERE text = 'loss' AND start > 3000000",
                                         check=lambda r, o: _analyzed(r, o, name="bad.json")
                                         + _noted("start")(_json(r, "bad.json") or {}))),
    Case(29, "trigger-named-like-a-table", _edited(
        f"CREATE TRIGGER CUPTI_ACTIVITY_KIND_MEMCPY AFTER INSERT ON {KERNEL} BEGIN SELECT 1; END",
        check=lambda r, o: _analyzed(r, o, name="bad.json"))),
    Case(29, "out-not-creatable", _out_not_creatable),
    Case(29, "timings-json-unreadable", _timings_unreadable),
    Case(29, "ctrl-c-analyze", _ctrl_c),
]

GROUPS_LOAD = GROUP_22 + GROUP_23 + GROUP_24 + GROUP_27 + GROUP_29
