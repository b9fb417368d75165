"""The shared pieces behind the issue-20 loader fixes, tested directly: the integer reader (rows,
not rowids; values that are not integers), the process key with host bits, and the one
sanitiser of text for terminals and pages."""
from __future__ import annotations

import sqlite3
from contextlib import closing

import numpy as np
import pytest

from analysis.core.text import printable
from analysis.load import load_trace
from analysis.load.memory_events import read_memory_events
from analysis.load.schema import MISSING, read_ints, read_schema
from analysis.load.tables import pid_column, process_of, shared_pids
from tests.synthetic import build_export


def _table(rows) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER, b INTEGER NOT NULL)")
    conn.executemany("INSERT INTO t (rowid, a, b) VALUES (?, ?, ?)", rows)
    return conn


@pytest.mark.parametrize("far", [4 * 10**18, -4 * 10**18, 5 * 10**9, 2**63 - 1, -(2**63)])
def test_read_ints_memory_follows_rows_not_the_rowid_span(far):
    conn = _table([(1, 10, 1), (2, 20, 2), (far, 30, 3)])
    columns = read_ints(conn, read_schema(conn), "t", ("a", "b"), chunk_rows=2)
    assert sorted(columns["a"].tolist()) == [10, 20, 30]
    held = columns["b"] if columns["b"].base is None else columns["b"].base  # the memory the column keeps
    assert len(columns["b"]) == 3 and held.size <= 3


def test_read_ints_gives_missing_for_text_null_and_fractions_even_in_not_null_columns():
    conn = _table([(1, "abc", 1), (2, 2.5, 2), (3, 3.0, 3), (4, None, 4), (5, 7, 5)])
    conn.execute("PRAGMA writable_schema = ON")  # nsys declares NOT NULL; a damaged file breaks it
    conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'a INTEGER', 'a INTEGER NOT NULL') WHERE name = 't'")
    conn.commit()
    conn.execute("PRAGMA writable_schema = OFF")
    columns = read_ints(conn, read_schema(conn), "t", ("a", "b"))
    assert columns["a"].tolist() == [MISSING, MISSING, 3, MISSING, 7]
    assert columns["b"].tolist() == [1, 2, 3, 4, 5]


def test_equal_pids_on_two_hosts_stay_two_processes_and_others_keep_their_pid():
    host_a, host_b = (1 << 48) | (100 << 24) | 7, (1 << 56) | (1 << 48) | (100 << 24) | 7
    other = (1 << 48) | (300 << 24) | 1
    keys = process_of(np.array([host_a, host_b, other, -1]))
    shared = shared_pids(keys)
    assert shared.tolist() == [100]
    shown = pid_column(keys, shared)
    assert shown[0] != shown[1] and shown[2] == 300 and shown[3] == 0xFFFFFF
    assert pid_column(process_of(np.array([host_a, other])), shared_pids(process_of(np.array([host_a, other])))).tolist() == [100, 300]


def test_printable_escapes_what_acts_and_keeps_what_shows():
    hostile = "H100\n\x1b[2J\x07\u202egnp.exe\tünïcode"
    assert printable(hostile) == "H100\\n\\x1b[2J\\x07\\u202egnp.exe\tünïcode"
    assert printable(hostile, one_line=False).startswith("H100\n\\x1b")
    assert printable("plain text, 1.5 ms") == "plain text, 1.5 ms"


def test_memory_events_show_pids_as_the_trace_does_when_hosts_share_one(tmp_path):
    events = [(10, 1, 100, True, None, 1, 0, 0), (20, 2, 100, True, None, 1, 0, 0)]
    path = build_export(tmp_path / "t.sqlite", kernels=[(1, 2, 0, 1, 1, 9)], memory_events=events)
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE CUDA_GPU_MEMORY_USAGE_EVENTS SET globalPid = globalPid + {1 << 56} WHERE address = 2")
    conn.close()
    alone = load_trace(path).memory_events
    assert alone["pid"].tolist() == [1, 1]  # no other table shares the pid: the 24-bit pid, as nsys shows
    with closing(sqlite3.connect(path)) as conn:
        shared = read_memory_events(conn, read_schema(conn), [], shared_pids=(1,))
    assert shared["pid"].tolist() == [(1 << 24) | 1, (1 << 32) | (1 << 24) | 1]
