"""Makers of crafted bad inputs: traces, caches, results files and helper programs.

Every maker writes into a folder it is given and returns the path it made; nothing here is a
binary blob checked into the repository. :mod:`tests.robust_cases` puts them together into the
cases of the robustness tests (one group per kind of fault).
"""
from __future__ import annotations

import json
import lzma
import os
import sqlite3
import stat
from pathlib import Path

from tests.synthetic import build_export

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_RESULTS = REPO / "nsys_runs" / "results"
RUN_MARK_DOMAIN = "cs336_profile"
PID = TID = 5
STEP_NS = 1_000_000  # one step lasts 1 ms
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"

CONFIG = {"event": "config", "size": "tiny", "context_length": 8, "batch_size": 2, "mode": "train",
          "dtype": "fp32", "compile": False, "attention": "naive", "device": "cuda",
          "gpu_name": "NVIDIA H100 80GB HBM3", "warmup_steps": 1, "measured_steps": 2,
          "vocab_size": 10000, "d_model": 64, "d_ff": 256, "num_layers": 2, "num_heads": 4,
          "rope_theta": 10000.0, "nvtx_annotations": True}
PHASE_SHARES = (("forward", 0.0, 0.3), ("loss", 0.3, 0.4), ("backward", 0.4, 0.8),
                ("optimizer_step", 0.8, 0.95))


def step_windows(steps: int = 2, warmup: int = 1) -> list[tuple[str, int, int]]:
    """(range name, start, end) of the warm-up then measured steps, back to back."""
    names = [f"warmup_{i}" for i in range(warmup)] + [f"step_{i}" for i in range(steps)]
    return [(name, (i + 1) * STEP_NS, (i + 2) * STEP_NS) for i, name in enumerate(names)]


def runner_trace(path: Path, *, config: dict | None = CONFIG, steps: int = 2, with_steps: bool = True,
                 kernel_names=("kernel_a",), kernel_rows=None, timing_marks: bool = True,
                 extra_ranges=()) -> Path:
    """A small export shaped like the runner's: steps with four phases, two kernels per phase
    (launched from the phase's range), a config mark and a step_timing mark per measured step.
    ``kernel_rows`` replaces the kernels; ``config=None`` leaves the config mark out."""
    ranges, kernels, marks = list(extra_ranges), [], []
    if config is not None:
        marks.append((json.dumps(config), STEP_NS // 2, PID, TID, RUN_MARK_DOMAIN))
    correlation = 0
    for name, start, end in step_windows(steps):
        if with_steps:
            ranges.append((name, start, end, PID, TID, None, 59))
        for phase, lo, hi in PHASE_SHARES:
            p_start, p_end = start + int(lo * STEP_NS), start + int(hi * STEP_NS)
            ranges.append((phase, p_start, p_end, PID, TID, None, 59))
            for k in range(2):
                correlation += 1
                launch = p_start + 1000 + k * 5000
                kernels.append((launch + 2000, launch + 4000, launch, PID, TID, correlation))
        if name.startswith("step_") and timing_marks:
            phases_ms = {phase: (hi - lo) for phase, lo, hi in PHASE_SHARES} | {"step": 1.0}
            marks.append((json.dumps({"event": "step_timing", "step": int(name[5:]), "phases_ms": phases_ms}),
                          end, PID, TID, RUN_MARK_DOMAIN))
    return build_export(path, kernels=kernel_rows if kernel_rows is not None else kernels, ranges=ranges,
                        marks=marks, strings=tuple(kernel_names))


def edit_export(path: Path, *statements: str, params=()) -> Path:
    """Run SQL statements on an export made here (the crafted fault)."""
    with sqlite3.connect(path) as conn:
        for sql in statements:
            conn.execute(sql, params) if params else conn.execute(sql)
    conn.close()
    return path


def xz_of(source: Path, target: Path) -> Path:
    """``target`` = xz of ``source``'s bytes."""
    target.write_bytes(lzma.compress(source.read_bytes(), preset=0))
    return target


def xz_bomb(target: Path, mib: int) -> Path:
    """An ``.sqlite.xz`` whose SQLite header is followed by ``mib`` MiB of zeros (a few KB packed)."""
    header = bytearray(b"SQLite format 3\x00".ljust(100, b"\x00"))
    header[16:18] = (4096).to_bytes(2, "big")
    with lzma.open(target, "wb", preset=0) as out:
        out.write(bytes(header))
        chunk = bytes(1 << 20)
        for _ in range(mib):
            out.write(chunk)
    return target


def timings_json(trace: Path, content) -> Path:
    """``<stem>.timings.json`` beside ``trace`` holding ``content`` (bytes written as is)."""
    path = trace.with_name(trace.name.removesuffix(".xz").removesuffix(".sqlite") + ".timings.json")
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return path


def results_file(folder: Path, name: str, edit=None) -> Path:
    """A copy of an example results file, with ``edit(document)`` applied to its parsed JSON."""
    folder.mkdir(parents=True, exist_ok=True)
    document = json.loads((EXAMPLE_RESULTS / name).read_text())
    if edit is not None:
        edit(document)
    path = folder / name
    path.write_text(json.dumps(document))
    return path


def corrupt_results_db(path: Path, kind: str) -> Path:
    """A results.db that is not one: random ``bytes``, ``truncated``, ``other-schema``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "bytes":
        path.write_bytes(os.urandom(8192))
    elif kind == "truncated":
        whole = path.read_bytes()
        path.write_bytes(whole[: len(whole) // 3])
    elif kind == "other-schema":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE summaries (key INTEGER, payload BLOB, extra REAL)")
            conn.execute("INSERT INTO summaries VALUES (1, x'00ff', 2.5)")
        conn.close()
    return path


def edit_cached_summaries(db: Path, edit) -> Path:
    """Apply ``edit(summary_json_text) -> text`` to every stored summary of a results.db."""
    with sqlite3.connect(db) as conn:
        for key, text in conn.execute("SELECT key, summary_json FROM summaries").fetchall():
            conn.execute("UPDATE summaries SET summary_json = ? WHERE key = ?", (edit(text), key))
    conn.close()
    return db


def fake_nsys(folder: Path, body: str) -> Path:
    """A folder holding an executable ``nsys`` shell script with ``body`` (for PATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nsys"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


def nested_ranges(path: Path, depth: int) -> Path:
    """A runner trace plus ``depth`` push/pop ranges nested inside each other on one thread."""
    extra = [(f"op_{i}", STEP_NS + 10 + i, 2 * STEP_NS - 10 - i, PID, TID, None, 59) for i in range(depth)]
    return runner_trace(path, extra_ranges=extra)
