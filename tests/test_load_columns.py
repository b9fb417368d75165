"""How the loader turns table rows into columns: chunked integer reads, row order, id widths and
the capture end that launch calls set."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from analysis.load import launches, load_trace, tables
from analysis.load.export_map import RUNTIME
from analysis.load.launches import LaunchCalls, LaunchJoin
from analysis.load.schema import read_ints, read_ints_and_largest, read_schema, stream_columns
from analysis.load.tables import narrow_ids
from tests.synthetic import build_export


def test_read_ints_is_the_same_in_any_chunk_size_and_below_rowid_one():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER NOT NULL, b INTEGER)")
    rows = [(-5, i, None if i % 3 == 0 else i * 10) for i in range(7)]  # rowids -5..1
    conn.executemany("INSERT INTO t (rowid, a, b) VALUES (? + ?, ?, ?)", [(r[0], r[1], r[1], r[2]) for r in rows])
    schema = read_schema(conn)
    whole = read_ints(conn, schema, "t", ("a", "b", "missing"))
    for chunk_rows in (1, 2, 3, 100):
        parts = read_ints(conn, schema, "t", ("a", "b", "missing"), chunk_rows=chunk_rows)
        for column in whole:
            np.testing.assert_array_equal(parts[column], whole[column])
    np.testing.assert_array_equal(whole["a"], np.arange(7))
    np.testing.assert_array_equal(whole["b"], [-1, 10, 20, -1, 40, 50, -1])
    np.testing.assert_array_equal(whole["missing"], np.full(7, -1))


def test_read_ints_reads_values_sqlite_does_not_print_as_integers_row_by_row():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER, b)")
    conn.executemany("INSERT INTO t (a, b) VALUES (?, ?)", [(1, 5.0), (2, 7), (3, None), (4, 2**62)])
    columns = read_ints(conn, read_schema(conn), "t", ("a", "b"), where="WHERE a > 1")
    np.testing.assert_array_equal(columns["a"], [2, 3, 4])
    np.testing.assert_array_equal(columns["b"], [7, -1, 2**62])
    with_real = read_ints(conn, read_schema(conn), "t", ("a", "b"))
    np.testing.assert_array_equal(with_real["b"], [5, 7, -1, 2**62])


def test_read_ints_on_threads_is_the_same_as_on_one(tmp_path):
    """Slices read by several threads land in rowid order, with a condition that leaves rows out,
    rowids far apart, a gap between slices and values read row by row."""
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER NOT NULL, b)")
        rowids = [*range(-300, 2000), *range(5000, 7000), 2**62]
        conn.executemany("INSERT INTO t (rowid, a, b) VALUES (?, ?, ?)",
                         [(r, r % 1000, 1.5 if r == 6123 else None if r % 7 == 0 else r) for r in rowids])
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    schema = read_schema(conn)
    for where in ("", "WHERE a % 2 = 0"):
        one = read_ints(conn, schema, "t", ("a", "b"), where, chunk_rows=16, workers=1)
        for workers in (2, 3, 8):
            many = read_ints(conn, schema, "t", ("a", "b"), where, chunk_rows=16, workers=workers)
            for column in one:
                np.testing.assert_array_equal(many[column], one[column])
                # sized by the rows kept, not by every row of the slices
                assert (many[column] if many[column].base is None else many[column].base).size == len(one[column])
    kept = np.array([r for r in rowids if r % 1000 % 2 == 0])
    np.testing.assert_array_equal(one["a"], kept % 1000)
    assert len(one["b"]) == len(kept) and (one["b"][kept % 7 == 0] == -1).all()


def test_the_largest_value_read_with_the_columns_is_sqls_max_over_the_rows_kept(tmp_path):
    """In any chunk size and on any number of threads, with chunks that keep no row, NULLs (as -1)
    and a condition; None without rows."""
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER NOT NULL, b INTEGER)")
        conn.executemany("INSERT INTO t (rowid, a, b) VALUES (?, ?, ?)",
                         [(r, r % 10, None if r % 5 == 0 else (r * 7919) % 1000) for r in range(1, 3000)])
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    schema = read_schema(conn)
    for where in ("", "WHERE a = 3", "WHERE b IS NULL", "WHERE a > 10"):
        expected = conn.execute(f"SELECT max(coalesce(b, -1)) FROM t {where}").fetchone()[0]
        columns = read_ints(conn, schema, "t", ("a",), where)
        for chunk_rows, workers in ((16, 1), (16, 3), (1 << 16, 1)):
            read, largest = read_ints_and_largest(conn, schema, "t", ("a",), "b", where, chunk_rows, workers)
            assert largest == expected
            np.testing.assert_array_equal(read["a"], columns["a"])
    assert expected is None  # the last condition keeps no row
    assert read_ints_and_largest(conn, schema, "t", ("a",), None)[1] is None


def test_read_schema_of_some_tables():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER NOT NULL, b INTEGER)")
    conn.execute("CREATE TABLE u (c TEXT)")
    assert read_schema(conn) == {"t": {"a": True, "b": False}, "u": {"c": False}}
    assert read_schema(conn, ("u", "missing")) == {"u": {"c": False}}


def test_kernels_come_back_in_time_order_whatever_the_export_order(tmp_path):
    kernels = [(300, 400, 290, 1, 1, 3), (100, 250, 90, 1, 1, 1), (100, 200, 95, 1, 1, 2)]
    trace = load_trace(build_export(tmp_path / "t.sqlite", kernels=kernels))
    assert trace.kernels[["start_ns", "dur_ns", "launch_start_ns"]].values.tolist() == \
        [[100, 100, 95], [100, 150, 90], [300, 100, 290]]
    assert "correlation_id" not in trace.kernels  # read for the join only


def test_ops_in_order_of_start_but_not_of_duration_on_ties_are_sorted_as_a_whole_sort_would():
    """Ops of several GPUs in order of start, some of equal starts out of duration order: only
    those move, to where sorting the whole table by start, then duration (stable), puts them."""
    rng = np.random.default_rng(3)
    for count in (2, 3, 10, 200):
        start = np.sort(rng.integers(0, count // 2 + 1, count))  # many ties
        table = pd.DataFrame({"start_ns": start, "dur_ns": rng.integers(0, 4, count).astype(np.int32),
                              "name": pd.Categorical(rng.choice(["a", "b"], count)), "row": np.arange(count)})
        expected = table.iloc[np.lexsort((table["dur_ns"], table["start_ns"]))].reset_index(drop=True)
        pd.testing.assert_frame_equal(tables.in_time_order(table.copy()), expected)
    unordered = pd.DataFrame({"start_ns": [5, 1, 1], "dur_ns": [1, 3, 2], "row": [0, 1, 2]})
    assert tables.in_time_order(unordered)["row"].tolist() == [2, 1, 0]


def test_ids_are_narrow_when_they_fit_and_keep_their_value_when_not(tmp_path):
    big_stream = 2**40 + 3
    kernels = [(100, 200, 90, 7, 8, 1, "kernel_a", 0, 7), (300, 400, 290, 7, 8, 2, "kernel_a", 1, big_stream)]
    trace = load_trace(build_export(tmp_path / "t.sqlite", kernels=kernels))
    kernels = trace.kernels
    assert {c: kernels[c].dtype for c in ("device_id", "pid", "launch_tid")} == \
        {"device_id": np.int8, "pid": np.int32, "launch_tid": np.int32}
    assert kernels["launch_start_ns"].tolist() == [90, 290]
    assert kernels["stream_id"].dtype == np.int64 and kernels["stream_id"].tolist() == [7, big_stream]
    assert kernels["pid"].tolist() == [7, 7] and kernels["launch_tid"].tolist() == [8, 8]


def test_capture_ends_with_a_launch_call_that_ends_after_every_kernel(tmp_path):
    trace = load_trace(build_export(tmp_path / "t.sqlite", kernels=[(100, 200, 300, 1, 1, 1)]))
    assert trace.capture_end_ns == 305  # the call starts at 300 and lasts 5 ns


@pytest.mark.parametrize("wide_row", [0, 1])
def test_an_id_column_too_wide_for_int32_is_read_in_int64_and_the_others_stay_narrow(wide_row):
    """A value past 32 bits in the last row (known before the read) or further up (the read starts
    again): that column comes in int64, the other narrow one still in int32, every value kept."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER NOT NULL, b INTEGER NOT NULL)")
    rows = [(1, 3), (2, 5), (3, 7)]
    rows[wide_row * 2] = (rows[wide_row * 2][0], 1 << 40)
    conn.executemany("INSERT INTO t VALUES (?, ?)", rows)
    columns, _ = read_ints_and_largest(conn, read_schema(conn), "t", ("a", "b"), None, chunk_rows=1, narrow=("a", "b"))
    assert (columns["a"].dtype, columns["b"].dtype) == (np.int32, np.int64)
    assert [columns["a"].tolist(), columns["b"].tolist()] == [list(column) for column in zip(*rows)]


def test_ids_are_narrowed_only_when_every_value_fits():
    fits = narrow_ids(np.array([-1, 0, np.iinfo(np.int32).max], dtype=np.int64))
    assert fits.dtype == np.int32 and fits.tolist() == [-1, 0, np.iinfo(np.int32).max]
    wide = np.array([-1, np.iinfo(np.int32).max + 1], dtype=np.int64)
    assert narrow_ids(wide).dtype == np.int64 and narrow_ids(wide).tolist() == wide.tolist()
    assert narrow_ids(np.array([np.iinfo(np.int32).min - 1], dtype=np.int64)).dtype == np.int64


def test_process_keys_are_int32_when_they_fit_and_show_the_same_pids():
    one_host = (np.array([100, 100, 200, -1], dtype=np.int64) << 24) | 7  # globalTids: pid << 24 | tid
    keys = tables.process_of(one_host)
    assert keys.dtype == np.int32 and keys.tolist() == [100, 100, 200, -1]
    other_host = np.array([(1 << 56) | (100 << 24)], dtype=np.int64)  # hardware bits above the pid
    wide = tables.process_of(np.concatenate([one_host, other_host]))
    assert wide.dtype == np.int64 and wide.tolist() == [100, 100, 200, -1, (1 << 32) | 100]
    shared = tables.shared_pids(wide)
    assert tables.pid_column(keys, shared).tolist() == tables.pid_column(keys.astype(np.int64), shared).tolist() \
        == [100, 100, 200, (1 << 24) - 1]
    assert tables.pid_column(wide, shared).tolist() == [100, 100, 200, (1 << 24) - 1, (1 << 32) | 100]


def first_launch_rows(ops: pd.DataFrame, launches: pd.DataFrame) -> list[int]:
    """The first launch call of each op's (process, correlation id), or -1: the join, row by row."""
    first = {}
    for row, key in enumerate(zip(launches["pid"], launches["correlation_id"])):
        first.setdefault(key, row)
    return [first.get(key, -1) if key[1] >= 0 else -1 for key in zip(ops["pid"], ops["correlation_id"])]


def streamed_join(tables_: list[pd.DataFrame], launches: pd.DataFrame, chunk: int, parts: int, rng) -> LaunchJoin:
    """``launches`` joined as the call table's slices hand them over: cut into ``parts`` slices in
    row order, each into chunks of ``chunk`` calls, the chunks of different slices interleaved at
    random (as threads hand them over) while each slice's come in order."""
    join = LaunchJoin(tables_)
    global_tid = (launches["pid"].to_numpy(np.int64) << 24) | launches["tid"].to_numpy(np.int64)
    columns = (launches["start_ns"].to_numpy(np.int64), global_tid, launches["correlation_id"].to_numpy(np.int64))
    bounds = np.linspace(0, len(launches), parts + 1).astype(int)
    queues = [[slice(low, min(low + chunk, high)) for low in range(low_part, high, chunk)]
              for low_part, high in zip(bounds[:-1], bounds[1:])]
    while any(queues):
        part = rng.choice([i for i, queue in enumerate(queues) if queue])
        rows = queues[part].pop(0)
        join.add(int(part), *(column[rows] for column in columns))
    return join


@pytest.mark.parametrize("count", [0, 1, 2, 7, 50])
def test_streamed_launch_join_is_the_join_row_by_row(count):
    """Calls sharing a key (the first in row order wins, whichever slice's chunk comes first),
    missing ids, processes of other hosts, ops of two tables: the rows of the join row by row."""
    rng = np.random.default_rng(count)
    launches = pd.DataFrame({"start_ns": rng.integers(0, 100, count * 2), "pid": rng.choice([1 << 30, 3], count * 2),
                             "tid": rng.integers(0, 5, count * 2),
                             "correlation_id": rng.integers(-1, count + 1, count * 2)})  # ties
    tables_ = [pd.DataFrame({"start_ns": np.arange(n), "dur_ns": np.ones(n, dtype=np.int32),
                             "pid": rng.choice([1 << 30, 3, 4], n), "correlation_id": rng.integers(-1, count + 2, n)})
               for n in (count, count // 2)]
    calls = LaunchCalls(np.zeros(0, np.int64), 0 if count else None, 0, 0)
    for chunk, parts in ((1, 1), (2, 3), (3, 2), (1 << 20, 1)):
        joined = streamed_join(tables_, launches, chunk, parts, rng).joined(tables_, calls)
        for ops, table in zip(tables_, joined):
            expected = first_launch_rows(ops, launches)
            hit = np.array(expected) >= 0
            calls_of = [row for row in expected if row >= 0]
            assert table["launch_start_ns"][hit].tolist() == launches["start_ns"].to_numpy()[calls_of].tolist()
            assert table["launch_tid"][hit].tolist() == launches["tid"].to_numpy()[calls_of].tolist()
            assert (table.loc[~hit, ["launch_start_ns", "launch_tid"]] == -1).all().all()
            assert table["launch_tid"].dtype == (np.int32 if count else np.int64)


@pytest.mark.parametrize("bits, packed", [(33, True), (59, False)])
def test_streamed_launch_join_of_wide_keys_is_the_join_row_by_row(bits, packed):
    """Correlation ids past 32 bits, packed above the rows while key and row fit 63 bits (a
    hundred million ops' ids), else held apart: the same rows."""
    rng = np.random.default_rng(5)
    correlation = rng.integers(-1, 20, 40) + np.int64(1 << bits)
    launches = pd.DataFrame({"start_ns": rng.integers(0, 100, 40), "pid": np.full(40, 3),
                             "tid": rng.integers(0, 5, 40), "correlation_id": correlation})
    ops = pd.DataFrame({"start_ns": np.arange(30), "dur_ns": np.ones(30, dtype=np.int32), "pid": rng.choice([3, 4], 30),
                        "correlation_id": rng.choice(np.append(correlation, [-1, 1 << (bits + 1)]), 30)})
    join = streamed_join([ops], launches, 7, 2, rng)
    assert join.packed == packed
    joined = join.joined([ops], LaunchCalls(np.zeros(0, np.int64), 0, 0, 0))[0]
    expected = first_launch_rows(ops, launches)
    assert joined["launch_start_ns"].tolist() == [launches["start_ns"][row] if row >= 0 else -1 for row in expected]


def test_launch_calls_are_streamed_from_the_export_in_slices(tmp_path):
    """The join from a database file read by several threads: every op finds its call, and what
    is kept of the calls is their processes and the span of their times."""
    kernels = [(100 + 10 * i, 105 + 10 * i, 95 + 10 * i, 7, 8, i + 1) for i in range(3000)]
    path = build_export(tmp_path / "t.sqlite", kernels=kernels)
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    schema = read_schema(conn)
    strings = tables.StringTable(conn, schema)
    ops = tables.with_durations(tables.read_kernels(conn, schema, strings))  # whole process keys, as the loader joins them
    joined, calls = launches.join_launch_calls(conn, schema, strings, None, [ops])
    assert joined[0]["launch_start_ns"].tolist() == [k[2] for k in kernels]
    assert calls.processes.tolist() == ops["pid"].unique().tolist()
    assert (calls.first_start_ns, calls.last_start_ns) == (95, 95 + 10 * 2999)


@pytest.mark.parametrize("count", [0, 1, 5, 40])
def test_durations_are_int32_where_every_one_fits_and_the_same_in_chunks(monkeypatch, count):
    rng = np.random.default_rng(count)
    start = np.sort(rng.integers(0, 1 << 40, count))
    for longest in (5, np.iinfo(np.int32).max, np.iinfo(np.int32).max + 1):
        end = start + rng.integers(0, longest, count, endpoint=True)
        if count:
            end[-1] = start[-1] + longest
        ops = pd.DataFrame({"start_ns": start, "end_ns": end, "device_id": np.zeros(count, dtype=np.int32)})
        for chunk in (1, 3, 1 << 20):
            monkeypatch.setattr(tables, "JOIN_CHUNK_OPS", chunk)
            timed = tables.with_durations(ops)
            assert list(timed.columns) == ["start_ns", "dur_ns", "device_id"]  # in place of the ends
            wide = count and longest > np.iinfo(np.int32).max  # no rows: every duration fits
            assert timed["dur_ns"].dtype == (np.int64 if wide else np.int32)
            assert timed["dur_ns"].tolist() == (end - start).tolist()


def test_narrow_columns_are_read_in_int32_and_in_int64_when_a_value_does_not_fit(tmp_path):
    """Several threads and chunks; a value past 32 bits in one chunk makes the whole read int64."""
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER NOT NULL, b)")
        conn.executemany("INSERT INTO t (a, b) VALUES (?, ?)", [(i, None if i % 5 == 0 else -i) for i in range(3000)])
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    schema = read_schema(conn)
    wide = read_ints(conn, schema, "t", ("a", "b"), chunk_rows=16, workers=1)
    for workers in (1, 3):
        narrow = read_ints_and_largest(conn, schema, "t", ("a", "b"), None, chunk_rows=16, workers=workers,
                                       narrow=("b",))[0]
        assert narrow["a"].dtype == np.int64 and narrow["b"].dtype == np.int32
        assert narrow["b"].tolist() == wide["b"].tolist()
    conn.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE t SET b = ? WHERE a = 2500", (1 << 40,))
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    for workers in (1, 3):
        read = read_ints_and_largest(conn, schema, "t", ("a", "b"), None, chunk_rows=16, workers=workers,
                                     narrow=("b",))[0]
        assert read["b"].dtype == np.int64 and read["b"][2500] == 1 << 40 and read["b"][2499] == -2499


def test_streamed_columns_are_the_read_columns_in_slices_each_in_order(tmp_path):
    """A table read by several threads a chunk at a time: every row once, each slice's chunks in
    rowid order, slices numbered in rowid order, and the largest value of the scan."""
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER, "
                     "globalTid INTEGER, correlationId INTEGER, nameId INTEGER)")
        conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)",
                         [(i, None if i % 7 == 0 else 2 * i, 5, i, 1) for i in range(3000)])
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    schema = read_schema(conn)
    for workers in (1, 3):
        parts: dict[int, list[np.ndarray]] = {}
        largest = stream_columns(conn, schema, RUNTIME, ("start_ns", "correlation_id"), "end_ns", "",
                                 lambda part, columns: parts.setdefault(part, []).append(columns["start_ns"]),
                                 chunk_rows=16, workers=workers)
        assert largest == 2 * 2999 and sorted(parts) == list(range(len(parts)))
        assert len(parts) == workers
        assert np.concatenate([np.concatenate(parts[p]) for p in sorted(parts)]).tolist() == list(range(3000))
    conn.close()


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_kernel_names_coded_in_chunks_are_the_lookup(monkeypatch, chunk):
    """Ids of either width, repeated, unknown (None) and missing (-1): the categorical's values are
    the lookup's, its categories in the ids' order."""
    monkeypatch.setattr(tables, "JOIN_CHUNK_OPS", chunk)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    conn.executemany("INSERT INTO StringIds VALUES (?, ?)", [(9, "b"), (4, "a"), (12, "c")])
    strings = tables.StringTable(conn, read_schema(conn))
    for ids in (np.array([12, 4, 4, 9, 7, -1, 12], dtype=np.int64), np.array([9, 9], dtype=np.int32),
                np.array([], dtype=np.int64)):
        coded = strings.categorical(ids.copy())
        assert [None if pd.isna(v) else v for v in coded] == list(strings.lookup(ids))
        assert list(coded.categories) == [v for v in ("a", "b", "c") if v in set(strings.lookup(ids))]
