"""Crafted cases of issue 20 around the newer features: Dask, results files, caches, diff, runner, other.

Group numbers are 100 + the issue's group: 101 Dask, 105 results files, 106 caches, 108 diff,
110 runner, 111 other. See :mod:`tests.robust_cases` for what passing means. Dask cases wait a
few seconds at most: they set Dask's connect timeout, which ``--scheduler-timeout`` defaults to.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from analysis.app.cache import TABLES, create_table_sql
from tests import bad_inputs as make
from tests.robust_cases import Case, _analyze_once, _analyzed, _expect, _inputs, _json, _said, _trace, analyze, runner
from tests.robust_cases_traces import TINY
from tests.robust_harness import REPO, Invocation

DASK_TIMEOUT_S = 2
DASK_ENV = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": f"{DASK_TIMEOUT_S}s"}


def _analyze(root: Path, traces, *extra: str, fmt: str = "json") -> list[str]:
    """``analyze-nsys`` of ``traces`` into the sandbox's ``out``."""
    return analyze(traces, *extra, out=str(root / "out"), fmt=fmt)


def _refused(rc: int, *words: str):
    """Check: exit status ``rc`` and an output that says each of ``words``."""
    def check(root: Path, outcome) -> list[str]:
        return _expect((outcome.returncodes[-1] == rc, f"exit status {outcome.returncodes[-1]}")) + \
            _said(*words)(root, outcome)
    return check


# ----------------------------------------------------------------------------- 101 Dask
def _server(reply: bytes | None) -> str:
    """A TCP server on a free local port (a daemon thread) that sends ``reply`` to each connection,
    or never answers (None); its tcp:// address."""
    listener = socket.create_server(("127.0.0.1", 0))
    held = []

    def serve() -> None:
        while True:
            connection, _ = listener.accept()
            held.append(connection)
            if reply is not None:
                with contextlib.suppress(OSError):
                    connection.sendall(reply)
    threading.Thread(target=serve, daemon=True).start()
    return f"tcp://127.0.0.1:{listener.getsockname()[1]}"


def _scheduler_at(address, *words: str):
    def build(root: Path) -> Invocation:
        trace = _trace(root)
        where = address() if callable(address) else address
        return Invocation(_analyze(root, [trace], "--scheduler", where), [trace], ["out"], env=DASK_ENV, timeout_s=40,
                          check=_refused(2, *words))
    return build


def _scheduler_file(content: str):
    def build(root: Path) -> Invocation:
        trace = _trace(root)
        path = root / "scheduler.json"
        path.write_text(content)
        return Invocation(_analyze(root, [trace], "--scheduler-file", str(path)), [trace, path], ["out"], env=DASK_ENV,
                          timeout_s=40, check=_refused(2, str(path)))
    return build


def _cluster(workers: int = 0):
    """A scheduler (threads of this process, reachable by tcp) with ``workers`` in-process workers."""
    import distributed

    return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, protocol="tcp",
                                    host="127.0.0.1", dashboard_address=":0")


def _closing(cluster, check, *processes):
    """``check``, after closing ``cluster`` and killing ``processes``."""
    def closed(root: Path, outcome) -> list[str]:
        for process in processes:
            process.kill()
            process.wait()
        cluster.close()
        return check(root, outcome)
    return closed


def _no_worker(root: Path) -> Invocation:
    trace = _trace(root)
    cluster = _cluster(0)
    return Invocation(_analyze(root, [trace], "--scheduler", cluster.scheduler_address), [trace], ["out"], env=DASK_ENV,
                      timeout_s=40, check=_closing(cluster, _refused(2, "no Dask worker")))


def _other_code_worker(root: Path) -> Invocation:
    """A worker started from a copy of the code whose analysis differs by one comment."""
    copy = root / "other-code"
    for package in ("analysis", "cs336_profile"):
        shutil.copytree(REPO / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "analysis" / "core" / "phases.py").write_text((copy / "analysis" / "core" / "phases.py").read_text() + "\n# changed\n")
    trace = _trace(root)
    cluster = _cluster(0)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
                               "--nthreads", "1", "--no-dashboard", "--local-directory", str(root / "worker")],
                              cwd=copy, env={**os.environ, "PYTHONPATH": str(copy)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with cluster.get_client() as client:
        client.wait_for_workers(1, timeout=60)  # a worker importing pandas and torch: a few seconds

    def check(r: Path, outcome) -> list[str]:
        db = r / "out" / "results.db"
        return _expect((_json(r, "good.json") is None, "a summary of other analysis code was written"),
                       ("other analysis code" in outcome.output, "no line about the worker's code"),
                       (not db.exists() or b"summary_json" not in db.read_bytes()
                        or _cached_rows(db) == 0, "a summary of other analysis code was cached"))
    return Invocation(_analyze(root, [trace], "--scheduler", cluster.scheduler_address), [trace], ["out", "worker"],
                      env=DASK_ENV, timeout_s=90, check=_closing(cluster, check, worker))


def _cached_rows(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT count(*) FROM summaries").fetchone()[0]


GROUP_DASK = [
    Case(101, "silent-port", _scheduler_at(lambda: _server(None), "did not answer")),
    Case(101, "web-server-reply", _scheduler_at(lambda: _server(b"HTTP/1.1 200 OK\r\n\r\n" * 50), "Dask scheduler")),
    Case(101, "tls-without-certificates", _scheduler_at("tls://127.0.0.1:9", "tls://127.0.0.1:9")),
    Case(101, "ucx-not-installed", _scheduler_at("ucx://127.0.0.1:9", "ucx://127.0.0.1:9")),
    Case(101, "scheduler-file-not-json", _scheduler_file("{")),
    Case(101, "scheduler-file-a-list", _scheduler_file("[]")),
    Case(101, "scheduler-file-address-a-number", _scheduler_file('{"address": 5}')),
    Case(101, "cluster-without-workers", _no_worker),
    Case(101, "worker-runs-other-code", _other_code_worker),
]


# ----------------------------------------------------------------------------- 105 results files
IMPOSSIBLE = re.compile(r"\bnan\b|\binf\b|infinity|e\+\d{2,3}\b|\d{19,}|(?:\d{1,3},){6,}\d{3}|-123\.4", re.IGNORECASE)


def _pages_hold_no_impossible_number(root: Path, outcome) -> list[str]:
    """Check: no page (HTML or Markdown) shows NaN, Infinity, 1e308 or the crafted -123.456."""
    found = []
    for page in [*root.joinpath("out").rglob("*.html"), *root.joinpath("out").rglob("*.md")]:
        for match in IMPOSSIBLE.finditer(re.sub(r"<[^>]+>", " ", page.read_text(errors="replace"))):
            found.append(f"{page.name} shows {match.group(0)!r}")
    return found[:5]


def _report_with(make_results, *words: str, rc=(0,)):
    """A report of a good trace with the results folder ``make_results(folder)`` made."""
    def build(root: Path) -> Invocation:
        trace = _trace(root)
        folder = root / "results"
        inputs = make_results(folder)
        def check(r: Path, o) -> list[str]:
            return _expect((o.returncodes[-1] in rc, f"exit status {o.returncodes[-1]}"),
                           ((r / "out" / "index.html").is_file(), "no index.html")) + \
                _pages_hold_no_impossible_number(r, o) + _said(*words)(r, o)
        return Invocation(_analyze(root, [trace], "--results", str(folder), fmt="html,md"), [trace, *inputs], ["out"],
                          timeout_s=60, check=check)
    return build


def _example_results_with(name: str, **values):
    """The example results folder, every row of ``name`` holding ``values`` (column -> value; the
    questions that print them need the other files too)."""
    def make_results(folder: Path) -> list[Path]:
        shutil.copytree(make.EXAMPLE_RESULTS, folder)
        return [make.results_file(folder, name, lambda d: [row.update(values) for row in d["rows"]])]
    return make_results


def _deep(folder: Path) -> list[Path]:
    folder.mkdir(parents=True)
    (folder / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    return [folder / "deep.json", make.results_file(folder, "bench_fp32.json")]


def _fifo(folder: Path) -> list[Path]:
    folder.mkdir(parents=True)
    os.mkfifo(folder / "pipe.json")
    return [make.results_file(folder, "bench_fp32.json")]


def _sweep_without_stem(folder: Path) -> list[Path]:
    def edit(document: dict) -> None:
        for row in document["rows"][:2]:
            row.pop("stem", None)
    return [make.results_file(folder, "sweep.json", edit)]


def _results_a_file(root: Path) -> Invocation:
    trace = _trace(root)
    results = make.results_file(root / "results", "bench_fp32.json")
    return Invocation(_analyze(root, [trace], "--results", str(results), fmt="html"), [trace, results], ["out"],
                      check=_refused(2, "not a folder"))


GROUP_RESULTS = [
    Case(105, "nan-in-rows", _report_with(_example_results_with("memory.json", peak_memory_bytes=float("nan")),
                                          "not a finite number")),
    Case(105, "infinity-in-rows", _report_with(_example_results_with("memory.json", peak_memory_bytes=float("-inf")),
                                               "not a finite number")),
    Case(105, "1e308-in-rows", _report_with(_example_results_with("memory.json", peak_memory_bytes=1e308),
                                            "beyond any measurement")),
    Case(105, "negative-time", _report_with(_example_results_with("bench_fp32.json", forward_ms_mean=-123.456,
                                                                  step_ms_mean=-123.456), "negative")),
    Case(105, "deeply-nested-json", _report_with(_deep, "deep.json")),
    Case(105, "fifo-named-json", _report_with(_fifo, "pipe.json")),
    Case(105, "sweep-rows-without-stem", _report_with(_sweep_without_stem, "sweep.json")),
    Case(105, "results-is-a-file", _results_a_file),
]


# ----------------------------------------------------------------------------- 106 caches
def _unkeyed_checksum(db: Path, edit) -> Path:
    """Edit every cached summary and give it the checksum an unkeyed hash of key and JSON would have."""
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        for key, text in conn.execute("SELECT key, summary_json FROM summaries").fetchall():
            forged = edit(json.loads(text))
            checksum = hashlib.sha256(f"{key}\0{forged}".encode()).hexdigest()
            conn.execute("UPDATE summaries SET summary_json = ?, checksum = ? WHERE key = ?", (forged, checksum, key))
    return db


def _forge(summary: dict) -> str:
    summary["phases"]["forward"]["kernel_ms_per_pass"] = 12345.0
    return json.dumps(summary)


def _off_schema(summary: dict) -> str:
    summary["phases"] = "not phases"
    return json.dumps(summary)


def _served_true(root: Path, outcome) -> list[str]:
    forward = ((_json(root, "good.json") or {}).get("phases") or {}).get("forward") or {}
    return _analyzed(root, outcome) + _expect((forward.get("kernel_ms_per_pass") not in (12345.0, None),
                                               "a hand-edited cache row came out as the trace's figure"))


def _cached_row(edit, check):
    def build(root: Path) -> Invocation:
        trace = _trace(root)
        _analyze_once(root, [trace])
        _unkeyed_checksum(root / "out" / "results.db", edit)
        return Invocation(_analyze(root, [trace], fmt="json,html"), [trace], ["out"], check=check)
    return build


def _hard_linked_db(root: Path) -> Invocation:
    trace = _trace(root)
    victim = _inputs(root) / "precious.db"  # another folder's results database, of this layout
    with contextlib.closing(sqlite3.connect(victim)) as conn:
        for table in TABLES:
            conn.execute(create_table_sql(table))
    (root / "out").mkdir()
    os.link(victim, root / "out" / "results.db")
    return Invocation(_analyze(root, [trace]), [trace, victim], ["out"],
                      check=lambda r, o: _analyzed(r, o) + _said("hard link")(r, o))


def _xz_input(root: Path) -> Path:
    return make.xz_of(_trace(root, "plain.sqlite"), _inputs(root) / "good.sqlite.xz")


def _planted_copy(root: Path) -> Invocation:
    packed = _xz_input(root)
    planted = root / "cache" / f"{hashlib.sha256(packed.read_bytes()).hexdigest()}.sqlite"
    planted.parent.mkdir(parents=True)
    make.runner_trace(planted, steps=5)
    return Invocation(_analyze(root, [packed]), [packed], ["out"],
                      check=lambda r, o: _analyzed(r, o) + _expect(
                          ((_json(r, "good.json") or {}).get("measured_passes") == 2,
                           "the planted copy was analyzed as the input")))


def _cut_short_copy(root: Path) -> Invocation:
    packed = _xz_input(root)
    _analyze_once(root, [packed])
    (root / "out" / "results.db").unlink()
    copy = root / "cache" / f"{hashlib.sha256(packed.read_bytes()).hexdigest()}.sqlite"
    copy.write_bytes(copy.read_bytes()[: copy.stat().st_size // 3])
    return Invocation(_analyze(root, [packed]), [packed], ["out"], check=lambda r, o: _analyzed(r, o))


GROUP_CACHES = [
    Case(106, "row-edited-checksum-recomputed", _cached_row(_forge, _served_true)),
    Case(106, "cached-summary-off-schema", _cached_row(_off_schema, lambda r, o: _analyzed(r, o))),
    Case(106, "results-db-hard-link", _hard_linked_db),
    Case(106, "planted-decompressed-copy", _planted_copy),
    Case(106, "cut-short-decompressed-copy", _cut_short_copy),
]


# ----------------------------------------------------------------------------- 108 diff
def _diff(second):
    def build(root: Path) -> Invocation:
        trace = _trace(root)
        other = second(root, trace)
        return Invocation(["analysis.app.cli", "diff", str(trace), str(other), "--out", str(root / "out")], [trace, other], ["out"],
                          check=lambda r, o: _expect((o.returncodes[-1] == 0, f"exit status {o.returncodes[-1]}"),
                                                     ((r / "out" / "diff.json").is_file(), "no diff.json")))
    return build


GROUP_DIFF = [
    Case(108, "diff-a-with-itself", _diff(lambda root, trace: trace)),
    Case(108, "diff-a-with-a-copy", _diff(lambda root, trace: Path(shutil.copy(trace, _inputs(root) / "copy.sqlite")))),
]


# ----------------------------------------------------------------------------- 110 runner
def _runner_refuses(*args: str, env: dict | None = None, words=("error:",)):
    """A runner command line that must end in a usage error (exit 2) before any results are written."""
    def build(root: Path) -> Invocation:
        return Invocation(runner(*args, results=str(root / "results")), [], [], env=env or {}, timeout_s=90,
                          check=lambda r, o: _refused(2, *words)(r, o) + _expect(
                              (not (r / "results").exists(), "results written")))
    return build


def _free_port() -> str:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return str(probe.getsockname()[1])


def _lone_rank(root: Path) -> Invocation:
    env = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": _free_port()}
    return Invocation(runner(*TINY, "--parallel", "ddp-naive", "--join-timeout", "2", results=str(root / "results")),
                      [], ["results"], env=env, timeout_s=60, check=_refused(1, "not complete within 2 s"))


def _ctrl_c_launched_ranks(root: Path) -> Invocation:
    """Two CPU ranks through the launcher; Ctrl-C once the first configuration's rows are written."""
    argv = ["cs336_profile.launch", "--nproc-per-node", "2", "--parallel", "ddp-naive", "--sizes", "tiny",
            "--device", "cpu", "--context-lengths", "8", "2048", "--batch-size", "1", "--warmup", "0",
            "--results-dir", str(root / "results"), "--no-progress"]

    def check(r: Path, o) -> list[str]:
        path = r / "results" / "bench.json"
        rows = json.loads(path.read_text())["rows"] if path.is_file() else []
        return _expect((bool(rows), "no rows kept"), (o.returncodes[-1] == 130, f"exit {o.returncodes[-1]} after Ctrl-C"))
    return Invocation(argv, [], ["results"], interrupt_after_s=2, interrupt_once=root / "results" / "bench.json",
                      timeout_s=120, check=check)


LAUNCHER = {"WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29999"}

GROUP_RUNNER = [
    Case(110, "checkpoint-every-above-layers", _runner_refuses(*TINY, "--checkpoint-every", "3")),
    Case(110, "checkpoint-every-forward-only", _runner_refuses(*TINY, "--checkpoint-every", "1", "--mode", "forward")),
    Case(110, "parallel-without-launcher", _runner_refuses(*TINY, "--parallel", "ddp-naive")),
    Case(110, "rank-abc", _runner_refuses(*TINY, "--parallel", "ddp-naive", env={"RANK": "abc", **LAUNCHER})),
    Case(110, "rank-past-world-size", _runner_refuses(*TINY, "--parallel", "ddp-naive", env={"RANK": "2", **LAUNCHER})),
    Case(110, "name-with-escape-sequence", _runner_refuses(*TINY, "--name", "bench\x1b[2J\x1b]0;owned\x07")),
    Case(110, "name-with-right-to-left-override", _runner_refuses(*TINY, "--name", "txt.\u202ejson")),
    Case(110, "lone-rank-of-two", _lone_rank),
    Case(110, "ctrl-c-launched-ranks", _ctrl_c_launched_ranks),
]


# ----------------------------------------------------------------------------- 111 other
def _export_leaves_no_orphan(root: Path) -> Invocation:
    report = _inputs(root) / "run.nsys-rep"
    report.write_bytes(b"\x00nsys report bytes")
    child = root / "pids" / "child.pid"
    child.parent.mkdir()
    bin_dir = make.fake_nsys(root / "bin", f"sleep 300 &\necho $! > {child}\nsleep 300")

    def check(r: Path, o) -> list[str]:
        alive = child.is_file() and _alive(int(child.read_text()))
        return _said("timeout")(r, o) + _expect((not alive, "nsys's child still runs after the export timeout"))
    return Invocation(_analyze(root, [report], "--export-timeout", "2"), [report], ["out", "pids"], timeout_s=60,
                      env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, check=check)


def _alive(pid: int) -> bool:
    """Whether ``pid`` (the fake nsys's child) runs, a zombie not counted; killed here when it does,
    so no test leaves it behind."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state != "Z":
        os.kill(pid, 9)
    return state != "Z"


def _out_dangling_link(root: Path) -> Invocation:
    trace = _trace(root)
    (root / "out").symlink_to(root / "nowhere")
    return Invocation(_analyze(root, [trace]), [trace], [], check=_refused(2, "does not exist"))


GROUP_OTHER = [
    Case(111, "export-timeout-leaves-no-orphan", _export_leaves_no_orphan),
    Case(111, "out-a-dangling-link", _out_dangling_link),
]

APP_GROUPS = GROUP_DASK + GROUP_RESULTS + GROUP_CACHES + GROUP_DIFF + GROUP_RUNNER + GROUP_OTHER
