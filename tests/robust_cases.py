"""The crafted cases of the robustness tests, ten groups, each run through the command line.

Group numbers follow the kinds of fault: 1 results cache, 2 odd values, 3 output folder and
disk, 4 decompression and export caches, 5 wrong numbers, 6 name collisions, 7 denial of
service, 8 plausible exports the loader did not expect, 9 security, 10 the runner.
Every case passes when the command ends without a traceback or an ``unexpected`` line, changes
no input, writes only into its output folders and passes its own checks.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests import bad_inputs as make
from tests.robust_harness import REPO, Invocation, run_case

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"


@dataclass(frozen=True)
class Case:
    group: int
    name: str
    build: Callable[[Path], Invocation]


def analyze(traces, *extra: str, out: str = "out", fmt: str = "json") -> list[str]:
    return ["analysis.app.cli", *map(str, traces), "--out", out, "--format", fmt, "--jobs", "1", *extra]


def runner(*args: str, results: str = "results") -> list[str]:
    return ["cs336_profile.run", *args, "--results-dir", results, "--no-progress"]


def _inputs(root: Path) -> Path:
    folder = root / "in"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _trace(root: Path, name: str = "good.sqlite", **settings) -> Path:
    return make.runner_trace(_inputs(root) / name, **settings)


def _json(root: Path, name: str) -> dict | None:
    path = root / "out" / name
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _expect(*checks: tuple[bool, str]) -> list[str]:
    return [message for ok, message in checks if not ok]


def _analyzed(root: Path, outcome, *, name: str = "good.json", rc=(0,)) -> list[str]:
    return _expect((outcome.returncodes[-1] in rc, f"exit status {outcome.returncodes[-1]}"),
                   (_json(root, name) is not None, f"no readable out/{name}"))


def _site(root: Path, outcome, *, rc=(0, 1)) -> list[str]:
    return _expect((outcome.returncodes[-1] in rc, f"exit status {outcome.returncodes[-1]}"),
                   ((root / "out" / "index.html").is_file(), "no index.html"))


def _said(*words: str):
    """Check: the output holds each of ``words`` (case-insensitive)."""
    def check(root: Path, outcome) -> list[str]:
        return [f"output does not say {w!r}" for w in words if w.lower() not in outcome.output.lower()]
    return check


def _analyze_once(root: Path, traces, fmt: str = "json") -> None:
    env = {**os.environ, "CS336_PROFILE_CACHE": str(root / "cache"), "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", *analyze(traces, out=str(root / "out"), fmt=fmt)], cwd=REPO, env=env,
                   capture_output=True, check=False)


# ----------------------------------------------------------------------------- 1 results cache
def _cached_then(edit_db: Callable[[Path], None], fmt: str = "json", check=None):
    def build(root: Path) -> Invocation:
        trace = _trace(root)
        _analyze_once(root, [trace])
        edit_db(root / "out" / "results.db")
        return Invocation(analyze([trace], out=str(root / "out"), fmt=fmt), [trace], ["out"],
                          check=check or (lambda r, o: _analyzed(r, o)))
    return build


def _drop_key(text: str) -> str:
    summary = json.loads(text)
    summary.pop("overall")
    return json.dumps(summary)


def _forged(text: str) -> str:
    summary = json.loads(text)
    summary["phases"]["forward"]["kernel_ms_per_pass"] = 12345.0
    return json.dumps(summary)


def _not_forged(root: Path, outcome) -> list[str]:
    summary = _json(root, "good.json") or {}
    forward = summary.get("phases", {}).get("forward", {})
    return _analyzed(root, outcome) + _expect((forward.get("kernel_ms_per_pass") != 12345.0,
                                               "a hand-written cache row came out as the trace's figure"))


def _concurrent(root: Path) -> Invocation:
    traces = [_trace(root, f"t{i}.sqlite", steps=2 + i) for i in range(3)]
    return Invocation(analyze(traces, out=str(root / "out")), traces, ["out"], concurrent=2,
                      check=lambda r, o: _expect((o.returncodes == [0, 0], f"exit statuses {o.returncodes}"),
                                                 *[(_json(r, f"t{i}.json") is not None, f"t{i}.json") for i in range(3)]))


def _killed_then_rerun(root: Path) -> Invocation:
    traces = [_trace(root, f"t{i}.sqlite", steps=2 + i) for i in range(4)]
    argv = analyze(traces, out=str(root / "out"), fmt="json,csv")

    def check(r: Path, o) -> list[str]:
        found = [_json(r, f"t{i}.json") for i in range(4)]
        return _expect((o.returncodes[-1] == 0, f"rerun exit status {o.returncodes[-1]}"),
                       *[(s is not None and s["measured_passes"] == 2 + i, f"t{i}.json after rerun")
                         for i, s in enumerate(found)])
    return Invocation(argv, traces, ["out"], kill_after_s=4.0, then=argv, check=check)


GROUP_1 = [
    Case(1, "summary-from-an-older-analyzer", _cached_then(lambda db: make.edit_cached_summaries(db, _drop_key),
                                                           fmt="json,html")),
    Case(1, "random-bytes", _cached_then(lambda db: make.corrupt_results_db(db, "bytes"))),
    Case(1, "truncated", _cached_then(lambda db: make.corrupt_results_db(db, "truncated"))),
    Case(1, "other-schema", _cached_then(lambda db: (db.unlink(), make.corrupt_results_db(db, "other-schema")))),
    Case(1, "non-json-summary", _cached_then(lambda db: make.edit_cached_summaries(db, lambda t: "{not json"))),
    Case(1, "hand-written-row", _cached_then(lambda db: make.edit_cached_summaries(db, _forged), check=_not_forged)),
    Case(1, "two-runs-one-out", _concurrent),
    Case(1, "kill-9-then-rerun", _killed_then_rerun),
]


# ----------------------------------------------------------------------------- 2 odd values
def _odd_config(**changes):
    def build(root: Path) -> Invocation:
        trace = _trace(root, config=make.CONFIG | changes)
        return Invocation(analyze([trace], out=str(root / "out"), fmt="json,html"), [trace], ["out"],
                          check=lambda r, o: _site(r, o) + _analyzed(r, o, rc=(0, 1)))
    return build


def _odd_timings(root: Path) -> Invocation:
    trace = _trace(root, config=None, timing_marks=False)
    side = make.timings_json(trace, {"size": "tiny", "ctx": "abc", "batch": 2, "mode": "train", "forward": 0.3})
    return Invocation(analyze([trace], out=str(root / "out"), fmt="json,html"), [trace, side], ["out"],
                      check=lambda r, o: _site(r, o) + _analyzed(r, o, rc=(0, 1)))


def _odd_results(root: Path) -> Invocation:
    trace = _trace(root)
    bench = make.results_file(root / "results", "bench_fp32.json",
                              lambda d: d["rows"][0].update(step_ms_mean="fast"))
    return Invocation(analyze([trace], "--results", str(root / "results"), out=str(root / "out"), fmt="html"),
                      [trace, bench], ["out"], check=lambda r, o: _site(r, o) + _said("step_ms_mean")(r, o))


GROUP_2 = [
    Case(2, "context-length-abc", _odd_config(context_length="abc")),
    Case(2, "mode-is-a-number", _odd_config(mode=7)),
    Case(2, "size-is-a-list", _odd_config(size=["small"])),
    Case(2, "timings-json-ctx-abc", _odd_timings),
    Case(2, "results-file-string-value", _odd_results),
]


# ----------------------------------------------------------------------------- 3 output folder and disk
def _out_at(make_out: Callable[[Path], Path], rc: int = 2):
    def build(root: Path) -> Invocation:
        trace = _trace(root)
        out = make_out(root)
        return Invocation(analyze([trace], out=str(out)), [trace], [],
                          check=lambda r, o: _expect((o.returncodes[-1] == rc, f"exit status {o.returncodes[-1]}")))
    return build


def _a_file(root: Path) -> Path:
    (root / "file").write_text("not a folder\n")
    return root / "file"


def _full_disk(root: Path) -> Invocation:
    traces = [_trace(root, f"t{i}.sqlite") for i in range(2)]
    return Invocation(analyze(traces, out=str(root / "out"), fmt="json,html"), traces, ["out"],
                      file_size_limit=24 * 1024, check=_said("out"))


def _db_not_writable(root: Path) -> Invocation:
    traces = [_trace(root, f"t{i}.sqlite", steps=2 + i) for i in range(2)]
    (root / "out" / "results.db").mkdir(parents=True)
    return Invocation(analyze(traces, out=str(root / "out")), traces, ["out"],
                      check=lambda r, o: _analyzed(r, o, name="t0.json", rc=(0, 1))
                      + _analyzed(r, o, name="t1.json", rc=(0, 1)) + _said("results.db")(r, o))


def _unreadable_timings(root: Path) -> Invocation:
    trace = _trace(root, config=None, timing_marks=False)
    side = make.timings_json(trace, b"\xff\xfe\x00garbage")
    return Invocation(analyze([trace], out=str(root / "out")), [trace, side], ["out"],
                      check=lambda r, o: _analyzed(r, o))


GROUP_3 = [
    Case(3, "out-under-a-file", _out_at(lambda root: _a_file(root) / "sub")),
    Case(3, "out-is-a-file", _out_at(_a_file)),
    Case(3, "full-disk", _full_disk),
    Case(3, "results-db-not-writable", _db_not_writable),
    Case(3, "unreadable-timings-json", _unreadable_timings),
]


# ----------------------------------------------------------------------------- 4 decompression and export caches
def _cache_files(root: Path) -> list[Path]:
    """Files in the cache folder, its install key (which seals the caches' entries) aside."""
    from analysis.load.local_key import KEY_FILE

    folder = root / "cache"
    return [p for p in folder.rglob("*") if p.is_file() and p.name != KEY_FILE] if folder.is_dir() else []


def _cache_empty(root: Path, outcome) -> list[str]:
    left = _cache_files(root)
    return _expect((not left, f"{len(left)} files ({sum(p.stat().st_size for p in left):,} bytes) left in the cache"))


def _bomb(root: Path) -> Invocation:
    bomb = make.xz_bomb(_inputs(root) / "bomb.sqlite.xz", mib=400)
    return Invocation(analyze([bomb], out=str(root / "out")), [bomb], ["out"],
                      check=lambda r, o: _cache_empty(r, o) + _said("decompress")(r, o))


def _stale_part(root: Path) -> Invocation:
    trace = make.xz_of(_trace(root, "plain.sqlite"), _inputs(root) / "good.sqlite.xz")
    part = root / "cache" / "0123.sqlite.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(bytes(4 << 20))
    stale = time.time() - 3 * 3600
    os.utime(part, (stale, stale))
    return Invocation(analyze([trace], out=str(root / "out")), [trace], ["out"],
                      check=lambda r, o: _analyzed(r, o) + _expect((not part.exists(), "stale .part file kept")))


def _refused_xz(root: Path) -> Invocation:
    notes = _inputs(root) / "notes.txt"
    notes.write_text("kernel,time\n" * 1000)
    packed = make.xz_of(notes, _inputs(root) / "notes.sqlite.xz")
    return Invocation(analyze([packed], out=str(root / "out")), [packed], ["out"], check=_cache_empty)


def _failed_export(root: Path) -> Invocation:
    report = _inputs(root) / "run.nsys-rep"
    report.write_bytes(b"\x00nsys report bytes")
    bin_dir = make.fake_nsys(root / "bin", 'while [ $# -gt 1 ]; do [ "$1" = --output ] && out=$2; shift; done\n'
                                           'printf "half an export" > "$out"\necho "export crashed" >&2\nexit 1')
    argv = analyze([report], out=str(root / "out"))
    return Invocation(argv, [report], ["out"], env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
                      then=argv, check=lambda r, o: _expect((o.output.count("export crashed") == 2,
                                                             "the failed export was reused")))


def _hanging_export(root: Path) -> Invocation:
    report = _inputs(root) / "run.nsys-rep"
    report.write_bytes(b"\x00nsys report bytes")
    bin_dir = make.fake_nsys(root / "bin", "sleep 600")
    return Invocation(analyze([report], "--export-timeout", "5", out=str(root / "out")), [report], ["out"], timeout_s=60,
                      env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
                      check=_said("timeout", "nsys export"))


def _no_cache(root: Path) -> Invocation:
    trace = make.xz_of(_trace(root, "plain.sqlite"), _inputs(root) / "good.sqlite.xz")
    return Invocation(analyze([trace], "--no-cache", out=str(root / "out")), [trace], ["out"],
                      check=lambda r, o: _analyzed(r, o) + _cache_empty(r, o))


def _cache_folder_unusable(root: Path) -> Invocation:
    trace = make.xz_of(_trace(root, "plain.sqlite"), _inputs(root) / "good.sqlite.xz")
    blocker = root / "blocker"
    blocker.write_text("a file where the cache folder should be\n")
    return Invocation(analyze([trace], out=str(root / "out")), [trace], ["out"],
                      env={"CS336_PROFILE_CACHE": str(blocker / "cache")}, check=_said(str(blocker)))


GROUP_4 = [
    Case(4, "xz-bomb", _bomb),
    Case(4, "stale-part-file", _stale_part),
    Case(4, "refused-xz-left-in-cache", _refused_xz),
    Case(4, "failed-export-reused", _failed_export),
    Case(4, "hanging-export", _hanging_export),
    Case(4, "no-cache-bypasses-decompression", _no_cache),
    Case(4, "cache-folder-unusable", _cache_folder_unusable),
]


def params(cases: list[Case], not_fixed: tuple[str, ...] = ()) -> list:
    """pytest parameters of ``cases``; those named in ``not_fixed`` must still fail (strict xfail)."""
    import pytest

    unknown = set(not_fixed) - {case.name for case in cases}
    assert not unknown, f"no such cases: {unknown}"
    return [pytest.param(case, id=case.name, marks=[pytest.mark.xfail(strict=True, reason="not fixed yet")]
                         if case.name in not_fixed else []) for case in cases]


def assert_clean(case: Case, sandbox: Path) -> None:
    """Run ``case`` in ``sandbox``; fail with what went wrong unless it ended cleanly."""
    outcome = run_case(case.build, sandbox)
    assert outcome.clean, outcome.describe()


def all_cases() -> list[Case]:
    """Every case of the ten groups, then those of the loader's second round (groups 22 to 29) and of
    the newer features (groups 101 to 111)."""
    from tests.robust_cases_app import APP_GROUPS
    from tests.robust_cases_load import GROUPS_LOAD
    from tests.robust_cases_traces import GROUPS_5_TO_10

    return GROUP_1 + GROUP_2 + GROUP_3 + GROUP_4 + GROUPS_5_TO_10 + GROUPS_LOAD + APP_GROUPS
