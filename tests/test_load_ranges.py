"""The loader leaves op-level NVTX ranges in the file: a dense trace (a range around every API call,
as emit_nvtx makes) gives the summary of the same trace without them."""
from __future__ import annotations

import shutil
import sqlite3

from analysis import analyze_trace
from analysis.load import RangeFilter, load_trace, nvtx
from analysis.load.nvtx import OP_LEVEL

TRAIN = "small_ctx128_train_fp32.sqlite"


def _dense_copy(source, target):
    """``source`` plus two nested push/pop ranges around each runtime API call, on its thread."""
    shutil.copyfile(source, target)
    with sqlite3.connect(target) as conn:
        calls = conn.execute("SELECT start, end, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchall()
        rows = [row for i, (start, end, tid) in enumerate(calls)
                for row in ((start - 2, end + 2, 59, f"aten::op{i % 7}, seq = {i}", tid),
                            (start - 1, end + 1, 59, "aten::inner", tid))]
        conn.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, ?, ?, ?)", rows)
    return len(rows)


def test_a_dense_trace_gives_the_summary_of_its_plain_twin(fixture_trace, tmp_path):
    plain = fixture_trace(TRAIN)
    dense = tmp_path / TRAIN
    added = _dense_copy(plain, dense)
    timings = plain.with_suffix(".timings.json")  # the run record of this trace without marks
    shutil.copyfile(timings, tmp_path / timings.name)
    everything = load_trace(dense)
    assert len(everything.ranges) == len(load_trace(plain).ranges) + added
    read = load_trace(dense, RangeFilter())
    wanted = [not (isinstance(name, str) and OP_LEVEL.search(name)) for name in everything.ranges["name"]]
    columns = ["name", "kind", "start_ns", "end_ns", "pid", "tid"]
    assert read.ranges[columns].equals(everything.ranges.loc[wanted, columns].reset_index(drop=True))
    assert len(read.ranges) <= len(everything.ranges) - added
    assert read.marks.equals(everything.marks)
    summary, twin = analyze_trace(dense), analyze_trace(plain)
    assert {key: value for key, value in summary.items() if key != "trace_sha256"} == \
        {key: value for key, value in twin.items() if key != "trace_sha256"}


def test_op_level_names_are_skipped_in_text_and_in_registered_strings(fixture_trace, tmp_path):
    """Names written inline (``text``) and registered ones (``textId``) are filtered alike."""
    trace = tmp_path / TRAIN
    shutil.copyfile(fixture_trace(TRAIN), trace)
    with sqlite3.connect(trace) as conn:
        conn.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)",
                         [(900001, "aten::mm, seq = 4"), (900002, "my forward block")])
        conn.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid) VALUES (1, 2, 59, ?, ?, 0)",
                         [("aten::add", None), ("autograd::engine::evaluate_function: MmBackward0", None),
                          (None, 900001), (None, 900002), ("warmup (sizes = [[1]])", None), ("forward: mine", None)])
    names = set(load_trace(trace, RangeFilter()).ranges["name"])
    assert {"my forward block", "forward: mine"} <= names
    assert not names & {"aten::add", "aten::mm, seq = 4", "autograd::engine::evaluate_function: MmBackward0",
                        "warmup (sizes = [[1]])"}


def test_ranges_and_marks_read_a_few_rows_at_a_time_are_those_read_at_once(fixture_trace, tmp_path, monkeypatch):
    """The NVTX rows are turned into columns a chunk at a time: chunks of 7 rows, with names inline
    and registered, an open range and a domain, give the tables of one chunk."""
    trace = tmp_path / TRAIN
    shutil.copyfile(fixture_trace(TRAIN), trace)
    with sqlite3.connect(trace) as conn:
        conn.execute("INSERT INTO StringIds (id, value) VALUES (900002, 'my forward block')")
        conn.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid, domainId) "
                         "VALUES (?, ?, 59, ?, ?, 0, ?)",
                         [(1, 2, None, 900002, 0), (3, None, "still open", None, 0), (5, 6, "in a domain", None, 7)])
        conn.execute("INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES (0, 75, 'mine', 0, 7)")
    whole = load_trace(trace, RangeFilter())
    assert len(whole.ranges) > 7 and {"my forward block", "still open", "in a domain"} <= set(whole.ranges["name"])
    monkeypatch.setattr(nvtx, "READ_CHUNK_ROWS", 7)
    chunked = load_trace(trace, RangeFilter())
    assert chunked.ranges.equals(whole.ranges)
    assert chunked.marks.equals(whole.marks)
    assert whole.ranges.loc[whole.ranges["name"] == "in a domain", "domain"].tolist() == ["mine"]
