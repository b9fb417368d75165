"""Crafted cases, groups 5 to 10: what a trace holds, names, denial of service, security, runner.

See :mod:`tests.robust_cases` for the groups and what passing means.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from tests import bad_inputs as make
from tests.robust_cases import KERNEL, RUNTIME, Case, _analyzed, _expect, _inputs, _json, _said, _trace, analyze, runner
from tests.robust_harness import Invocation
from tests.synthetic import global_tid


def _edited(*sql: str, check=None, fmt: str = "json", **settings):
    def build(root: Path) -> Invocation:
        trace = make.edit_export(_trace(root, **settings), *sql)
        return Invocation(analyze([trace], out=str(root / "out"), fmt=fmt), [trace], ["out"],
                          check=check or (lambda r, o: _analyzed(r, o, rc=(0, 1))))
    return build


# ----------------------------------------------------------------------------- 5 wrong numbers
def _sane(noted: str):
    """Check: analyzed, every per-pass figure finite and non-negative, within one step, and a note
    holding ``noted``."""
    def check(root: Path, outcome) -> list[str]:
        problems = _analyzed(root, outcome)
        summary = _json(root, "good.json") or {"phases": {}, "notes": []}
        for phase, figures in summary["phases"].items():
            for key in ("kernel_ms_per_pass", "gpu_span_ms_per_pass", "busy_ms_per_pass"):
                value = figures.get(key)
                if value is not None and not 0 <= value <= 1.0:
                    problems.append(f"{phase} {key} = {value}")
            if figures.get("passes") not in (None, 2):
                problems.append(f"{phase}: {figures.get('passes')} passes, not 2")
        if not any(noted in note for note in summary["notes"]):
            problems.append(f"no note about {noted!r}: {summary['notes']}")
        return problems
    return check


def _timer_not_compared(root: Path, outcome) -> list[str]:
    summary = _json(root, "good.json") or {}
    compared = [p for p, f in summary.get("phases", {}).items() if f.get("python_ms_per_pass") is not None]
    return _analyzed(root, outcome) + _expect((not compared, f"whole capture compared with the step timer: {compared}"))


GROUP_5 = [
    Case(5, "null-kernel-start-end", _edited(f"UPDATE {KERNEL} SET start = NULL, end = NULL WHERE rowid = 3",
                                             check=_sane("kernel"))),
    Case(5, "end-before-start", _edited(f"UPDATE {KERNEL} SET end = start - 4480000 WHERE rowid = 3",
                                        check=_sane("kernel"))),
    Case(5, "huge-timestamp", _edited(f"UPDATE {KERNEL} SET start = 4000000000000000000, "
                                      f"end = 4000000000000000100 WHERE rowid = 3", check=_sane("kernel"))),
    Case(5, "negative-timestamp", _edited(f"UPDATE {KERNEL} SET start = -5000000000000000000, "
                                          f"end = -4999999999999999000 WHERE rowid = 3", check=_sane("kernel"))),
    Case(5, "overlapping-phase-ranges", _edited(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
        f"VALUES (2100000, 2350000, 59, 'forward', {global_tid(5, 6)}, 0)",
        check=_sane("overlap"))),
    Case(5, "no-steps-against-step-timer", _edited(check=_timer_not_compared, with_steps=False)),
]


# ----------------------------------------------------------------------------- 6 name collisions
def _same_stem(root: Path) -> Invocation:
    a = make.runner_trace((root / "in" / "dirA").mkdir(parents=True) or root / "in" / "dirA" / "run.sqlite")
    b = make.runner_trace((root / "in" / "dirB").mkdir(parents=True) or root / "in" / "dirB" / "run.sqlite", steps=3)
    return Invocation(analyze([a, b], out=str(root / "out"), fmt="json,html"), [a, b], ["out"],
                      check=lambda r, o: _expect((len(list((r / "out").glob("*.json"))) == 2, "one json for two traces"),
                                                 (len(list((r / "out").glob("trace-*.html"))) == 2, "one page for two traces")))


def _pipe_and_underscore(root: Path) -> Invocation:
    a = _trace(root, "a|b.sqlite")
    b = _trace(root, "a_b.sqlite", steps=3)
    return Invocation(analyze([a, b], out=str(root / "out"), fmt="json,html"), [a, b], ["out"],
                      check=lambda r, o: _expect((len(list((r / "out").glob("trace-*.html"))) == 2, "one page for two traces")))


def _same_file_twice(root: Path) -> Invocation:
    trace = _trace(root)
    copy = shutil.copy(trace, _inputs(root) / "copy.sqlite")
    return Invocation(analyze([trace, trace, copy], out=str(root / "out"), fmt="json,csv"), [trace, Path(copy)], ["out"],
                      check=lambda r, o: _expect((len((r / "out" / "phases.csv").read_text().splitlines()) == 5
                                                  if (r / "out" / "phases.csv").is_file() else False,
                                                  "one file given three times is counted more than once")))


GROUP_6 = [
    Case(6, "same-name-two-folders", _same_stem),
    Case(6, "pipe-and-underscore", _pipe_and_underscore),
    Case(6, "same-input-three-times", _same_file_twice),
]


# ----------------------------------------------------------------------------- 7 denial of service
def _refused_with(*words: str):
    return lambda r, o: _expect((o.returncodes[-1] == 1, f"exit status {o.returncodes[-1]}")) + _said(*words)(r, o)


GROUP_7 = [
    Case(7, "stringids-view", _edited(
        "ALTER TABLE StringIds RENAME TO real_strings",
        "CREATE VIEW StringIds AS WITH RECURSIVE n(id, value) AS (SELECT 0, 'cudaLaunchKernel' UNION ALL "
        "SELECT id + 1, 'kernel_a' FROM n LIMIT 3000000) SELECT id, value FROM n",
        check=_refused_with("StringIds", "view"))),
    Case(7, "string-id-4e8", lambda root: Invocation(**{**_edited(
        "UPDATE StringIds SET id = 400000000 WHERE id = 1",
        f"UPDATE {KERNEL} SET shortName = 400000000, demangledName = 400000000")(root).__dict__,
        "memory_limit": 2 << 30})),
    Case(7, "nesting-100k-deep", lambda root: Invocation(
        analyze([make.nested_ranges(_inputs(root) / "good.sqlite", 100_000)], out=str(root / "out")),
        [], ["out"], timeout_s=45, check=lambda r, o: _analyzed(r, o))),
    Case(7, "fifo-input", lambda root: Invocation(
        analyze([os.mkfifo(_inputs(root) / "f.sqlite") or _inputs(root) / "f.sqlite"], out=str(root / "out")),
        [], ["out"], timeout_s=30, check=_refused_with("regular file"))),
]


# ----------------------------------------------------------------------------- 8 plausible exports
def _own_line(*words: str):
    return lambda r, o: _expect((o.returncodes[-1] in (0, 1), f"exit status {o.returncodes[-1]}")) + _said(*words)(r, o)


# Deliberately not the export map's StringIds: its value column may hold NULL, as no nsys writes it.
NULLABLE_STRINGS = ("ALTER TABLE StringIds RENAME TO old_strings",
                    "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)",
                    "INSERT INTO StringIds SELECT id, value FROM old_strings", "DROP TABLE old_strings")
GROUP_8 = [
    Case(8, "null-kernel-names", _edited(f"UPDATE {KERNEL} SET shortName = NULL, demangledName = NULL")),
    Case(8, "null-string-value", _edited(*NULLABLE_STRINGS, "UPDATE StringIds SET value = NULL WHERE id = 1")),
    Case(8, "blob-string-value", _edited(*NULLABLE_STRINGS, "UPDATE StringIds SET value = x'00ff41' WHERE id = 1")),
    Case(8, "no-launch-matches", _edited(f"UPDATE {RUNTIME} SET correlationId = correlationId + 100000",
                                         check=_own_line("launch"))),
    Case(8, "no-runtime-table", _edited(f"DROP TABLE {RUNTIME}", check=_own_line("launch"))),
]


# ----------------------------------------------------------------------------- 9 security
CODE_SPANS = re.compile(r"(`+).+?\1")  # shown verbatim by Markdown viewers
LIVE_MARKDOWN = re.compile(r"<script|<img|<b |^#+ Injected", re.MULTILINE | re.IGNORECASE)


def _markdown_injection(root: Path) -> Invocation:
    names = (make.SCRIPT, make.IMG, "evil\n# Injected heading")
    trace = make.runner_trace(_inputs(root) / f"{make.IMG}.sqlite", kernel_names=names)
    broken = _inputs(root) / "<b onmouseover=alert(1)>.sqlite"
    broken.write_text("not a trace\n")

    def check(r: Path, o) -> list[str]:
        pages = list((r / "out").glob("*.md"))
        live = [f"{p.name}: {m.group(0)!r}" for p in pages
                for m in LIVE_MARKDOWN.finditer(CODE_SPANS.sub("", p.read_text()))]
        return _expect((len(pages) > 1, "no Markdown pages"), (not live, f"live markup in Markdown: {live[:4]}"))
    return Invocation(analyze([trace, broken], out=str(root / "out"), fmt="md"), [trace, broken], ["out"], check=check)


def _symlinks_in_out(root: Path) -> Invocation:
    trace = _trace(root)
    (root / "outside").mkdir()
    (root / "out").mkdir()
    for name in ("good.json", "index.md", "index.html", "phases.csv"):
        (root / "outside" / name).write_text("precious\n")
        (root / "out" / name).symlink_to(root / "outside" / name)
    return Invocation(analyze([trace], out=str(root / "out"), fmt="json,md,html,csv"), [trace], ["out"],
                      check=lambda r, o: _expect((o.returncodes[-1] in (0, 1), f"exit status {o.returncodes[-1]}")))


def _symlinked_results_db(root: Path) -> Invocation:
    trace = _trace(root)
    (root / "outside").mkdir()
    (root / "out").mkdir()
    (root / "outside" / "victim.db").write_bytes(b"")
    (root / "out" / "results.db").symlink_to(root / "outside" / "victim.db")
    return Invocation(analyze([trace], out=str(root / "out")), [trace], ["out"],
                      check=lambda r, o: _analyzed(r, o, rc=(0, 1)))


def _runner_name_escape(root: Path) -> Invocation:
    (root / "a" / "b").mkdir(parents=True)
    return Invocation(runner("--sizes", "tiny", "--device", "cpu", "--context-lengths", "8", "--warmup", "0",
                             "--steps", "1", "--name", "../../x", results=str(root / "a" / "b" / "results")),
                      [], ["a/b/results"], check=lambda r, o: _expect((o.returncodes[-1] == 2, f"exit {o.returncodes[-1]}")))


GROUP_9 = [
    Case(9, "markdown-injection", _markdown_injection),
    Case(9, "symlinks-in-out", _symlinks_in_out),
    Case(9, "symlinked-results-db", _symlinked_results_db),
    Case(9, "runner-name-escapes-results-dir", _runner_name_escape),
]


# ----------------------------------------------------------------------------- 10 runner
def _usage_error(*args: str, command: str = "bench"):
    """A runner command line that must end in an argparse-style error (exit 2) before any work."""
    def build(root: Path) -> Invocation:
        argv = ([command] if command != "bench" else []) + list(args)
        return Invocation(runner(*argv, results=str(root / "results")), [], [], timeout_s=90,
                          check=lambda r, o: _expect((o.returncodes[-1] == 2, f"exit {o.returncodes[-1]}"),
                                                     ("error:" in o.output, "no argparse-style error line"),
                                                     (not (r / "results").exists(), "results written")))
    return build


TINY = ("--sizes", "tiny", "--device", "cpu", "--context-lengths", "8")


def _unwritable_results(root: Path) -> Invocation:
    (root / "file").write_text("a file\n")
    return Invocation(runner(*TINY, "--warmup", "0", "--steps", "2", results=str(root / "file" / "results")), [], [],
                      timeout_s=90, check=lambda r, o: _expect((o.returncodes[-1] == 2, f"exit {o.returncodes[-1]}"),
                                                               ("step ms" not in o.output, "the benchmark ran first")))


def _interrupted(command: list[str], results_file: str, after_s: float, once: str | None = None):
    def build(root: Path) -> Invocation:
        def check(r: Path, o) -> list[str]:
            path = r / "results" / results_file
            rows = json.loads(path.read_text())["rows"] if path.is_file() else []
            return _expect((bool(rows), f"no rows kept in {results_file}"),
                           (o.returncodes[-1] == 130, f"exit {o.returncodes[-1]} after Ctrl-C"))
        return Invocation(runner(*command, results=str(root / "results")), [], ["results"],
                          interrupt_after_s=after_s, interrupt_once=once and root / "results" / once,
                          timeout_s=after_s + 300, check=check)
    return build


GROUP_10 = [
    Case(10, "device-cuda-without-gpu", _usage_error("--sizes", "tiny", "--device", "cuda")),
    Case(10, "steps-zero", _usage_error(*TINY, "--steps", "0")),
    Case(10, "warmup-negative", _usage_error(*TINY, "--warmup", "-1")),
    Case(10, "batch-size-zero", _usage_error(*TINY, "--batch-size", "0")),
    Case(10, "context-length-negative", _usage_error("--sizes", "tiny", "--device", "cpu", "--context-lengths", "-8")),
    Case(10, "attention-seq-len-zero", _usage_error("--device", "cpu", "--seq-lens", "0", command="attention")),
    Case(10, "attention-passes-zero", _usage_error("--device", "cpu", "--passes", "0", command="attention")),
    Case(10, "memory-context-zero", _usage_error("--device", "cpu", "--context-lengths", "0", command="memory")),
    Case(10, "compile-context-zero", _usage_error("--device", "cpu", "--sizes", "tiny", "--context-length", "0",
                                                  command="compile")),
    Case(10, "absurd-context-length", _usage_error("--sizes", "tiny", "--device", "cpu",
                                                   "--context-lengths", "2000000000")),
    Case(10, "results-dir-not-writable", _unwritable_results),
    Case(10, "ctrl-c-overhead", _interrupted(["overhead", *TINY, "--warmup", "1", "--steps", "1000000"],
                                             "overhead_steps.json", after_s=45)),
    Case(10, "ctrl-c-bench", _interrupted([*TINY[:4], "--context-lengths", "8", "4096", "--batch-size", "1"],
                                          "bench.json", after_s=2, once="bench.json")),
]

GROUPS_5_TO_10 = GROUP_5 + GROUP_6 + GROUP_7 + GROUP_8 + GROUP_9 + GROUP_10
