"""The kernel-to-range rule on the reference training trace and on hand-made edge cases."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from analysis.core import attribution
from analysis.core.attribution import innermost_ranges, ops_in_window_tables, ops_in_windows, rows_by_key
from analysis.core.phases import OP_KINDS, gpu_ops, label_ops
from analysis.core.range_names import RangeNames
from analysis.load import load_trace
from analysis.load.tables import op_ends, position_dtype

TRAIN = "small_ctx128_train_fp32.sqlite"


def test_backward_collects_autograd_launches(fixture_trace):
    labelled = label_ops(load_trace(fixture_trace(TRAIN)))
    kernels = labelled.ops[(labelled.ops["op_kind"] == "kernel") & labelled.ops["measured"]]
    per_pass = kernels.groupby("phase").size() / 3
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert per_pass["backward"] == 1463
    main_tid = kernels.loc[kernels["phase"] == "forward", "launch_tid"].iloc[0]
    backward = kernels[kernels["phase"] == "backward"]
    assert (backward["launch_tid"] != main_tid).sum() == 1462 * 3


def test_same_thread_rule_reproduces_nsys_gpu_projection(fixture_trace):
    """nsys's nvtx_gpu_proj_sum: `:forward` projects to 790,869,607 ns over 5 passes and
    `:backward` holds 5 GPU ops in all, because it only counts the range's own thread."""
    trace = load_trace(fixture_trace(TRAIN))
    ops = gpu_ops(trace)
    ops = ops.assign(end_ns=op_ends(ops))
    forward = trace.ranges[trace.ranges["name"] == "forward"]
    owner = ops_in_windows(ops, forward, same_thread=True)
    spans = ops[owner >= 0].groupby(owner[owner >= 0]).agg(first=("start_ns", "min"),
                                                             last=("end_ns", "max"))
    assert len(spans) == 5
    assert int((spans["last"] - spans["first"]).sum()) == 790_869_607
    backward = trace.ranges[trace.ranges["name"] == "backward"]
    assert (ops_in_windows(ops, backward, same_thread=True) >= 0).sum() == 5


def test_attention_regions_in_forward(fixture_trace):
    ops = label_ops(load_trace(fixture_trace(TRAIN))).ops
    forward = ops[ops["measured"] & (ops["phase"] == "forward") & (ops["op_kind"] == "kernel")]
    per_pass = forward.groupby("region").size() / 3
    assert per_pass.to_dict() == {"": 824, "computing attention scores": 48,
                                  "computing softmax": 60, "final matmul": 24}


def _ops(launches, tids, pid=1):
    return pd.DataFrame({"pid": pid, "launch_start_ns": launches, "launch_tid": tids})


def test_windows_edges_other_processes_and_unlinked_ops():
    windows = pd.DataFrame({"pid": [1, 1, 2], "tid": [10, 10, 20],
                            "start_ns": [100, 300, 100], "end_ns": [200, 400, 500]})
    ops = pd.DataFrame({"pid": [1, 1, 1, 1, 1, 2, 3],
                        "launch_start_ns": [100, 200, 250, 350, -1, 450, 150],
                        "launch_tid": [10, 11, 10, 12, 10, 20, 30]})
    assert ops_in_windows(ops, windows).tolist() == [0, 0, -1, 1, -1, 2, -1]
    assert ops_in_windows(ops, windows, same_thread=True).tolist() == [0, -1, -1, -1, -1, 2, -1]


def test_launch_after_a_nested_window_closed_belongs_to_the_outer_one():
    # forward [0, 100] holds attention [40, 60]; launches at 50 and 80, and one past both
    windows = pd.DataFrame({"pid": 1, "tid": 7, "start_ns": [0, 40], "end_ns": [100, 60]})
    ops = _ops([50, 80, 100, 101], 7)
    for same_thread in (False, True):
        assert ops_in_windows(ops, windows, same_thread=same_thread).tolist() == [1, 0, 0, -1]


def _latest_starting_holder(launches, starts, ends):
    """The rule spelled out one launch and one window at a time."""
    owners = []
    for t in launches:
        holders = [i for i in range(len(starts)) if t >= 0 and starts[i] <= t <= ends[i]]
        owners.append(max(holders, key=lambda i: (starts[i], i)) if holders else -1)
    return owners


@pytest.mark.parametrize("in_order", [False, True])
@pytest.mark.parametrize("seed", range(20))
def test_windows_match_the_rule_spelled_out(seed, in_order):
    """Random nested and partly overlapping windows, ties on both edges included; launches in
    any order or ascending (as the ops' launches most often are, with ties)."""
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, 60, size=rng.integers(1, 25))
    ends = starts + rng.integers(0, 40, size=len(starts))
    windows = pd.DataFrame({"pid": 1, "start_ns": starts, "end_ns": ends})
    launches = np.append(rng.integers(-1, 110, size=200), np.concatenate([starts, ends]))
    if in_order:
        launches = np.sort(launches)
    assert ops_in_windows(_ops(launches, 7), windows).tolist() == \
        _latest_starting_holder(launches, starts, ends)


@pytest.mark.parametrize("chunk", [7, 1 << 20])
@pytest.mark.parametrize("seed", range(20))
def test_same_thread_windows_match_the_rule_spelled_out(seed, chunk, monkeypatch):
    """Several processes and threads, windows nested, overlapping and touching, launches on the
    edges, before time 0, and on threads without windows: each launch against its own thread's
    windows, one at a time; the ops grouped a few rows at a time or all at once."""
    monkeypatch.setattr(attribution, "CHUNK_OPS", chunk)
    rng = np.random.default_rng(seed)
    count = rng.integers(1, 40)
    span = rng.choice([5, 50, 500])
    starts = rng.integers(-2, span, size=count)
    ends = starts + rng.integers(0, span // 2 + 1, size=count)
    windows = pd.DataFrame({"pid": rng.integers(1, 3, size=count), "tid": rng.integers(7, 10, size=count),
                            "start_ns": starts, "end_ns": ends}).sample(frac=1, random_state=seed)
    launches = np.append(rng.integers(-3, 2 * span, size=300), np.concatenate([starts, ends, ends + 1, starts - 1]))
    ops = pd.DataFrame({"pid": rng.integers(1, 4, size=len(launches)), "launch_start_ns": launches,
                        "launch_tid": rng.integers(7, 11, size=len(launches))})
    expected = []
    for pid, t, tid in ops.itertuples(index=False):
        mine = np.flatnonzero((windows["pid"] == pid).to_numpy() & (windows["tid"] == tid).to_numpy())
        owner = _latest_starting_holder([t], windows["start_ns"].to_numpy()[mine], windows["end_ns"].to_numpy()[mine])[0]
        expected.append(int(mine[owner]) if owner >= 0 else -1)
    assert ops_in_windows(ops, windows, same_thread=True).tolist() == expected
    assert ops_in_windows(ops.iloc[:1], windows, same_thread=True).tolist() == expected[:1]
    assert ops_in_windows(ops.iloc[:0], windows, same_thread=True).tolist() == []
    tables = [windows.iloc[::2], windows.iloc[:0], windows]  # searched together, each as on its own
    labels = [np.arange(len(table) + 1, dtype=np.int16) * 3 + 1 for table in tables]  # the last for "no window"
    for same_thread in (False, True):
        positions = [ops_in_windows(ops, table, same_thread=same_thread) for table in tables]
        assert [found.tolist() for found in ops_in_window_tables(ops, tables, same_thread=same_thread)] == \
            [found.tolist() for found in positions]
        labelled = ops_in_window_tables(ops, tables, same_thread=same_thread, labels=labels)
        assert all(found.dtype == np.int16 for found in labelled)
        assert [found.tolist() for found in labelled] == [label[found].tolist() for label, found in zip(labels, positions)]


@pytest.mark.parametrize("chunk", [3, 1 << 20])
@pytest.mark.parametrize("few_groups", [0, 16, 10_000])
@pytest.mark.parametrize("seed", range(10))
def test_rows_by_key_matches_groupby(seed, few_groups, chunk, monkeypatch):
    """Constant columns, repeated and single values, one row: the rows of each combination, as
    pandas groups them, in order of first appearance, whether the combinations are found by a
    pass each or by a sort, and the distinct values a few rows at a time or all at once."""
    monkeypatch.setattr(attribution, "FEW_GROUPS", few_groups)
    monkeypatch.setattr(attribution, "CHUNK_OPS", chunk)
    monkeypatch.setattr(attribution, "DISTINCT_ROWS", chunk)
    rng = np.random.default_rng(seed)
    count = rng.integers(1, 300)
    columns = [np.full(count, 935, dtype=np.int32), rng.integers(0, rng.integers(1, 400), size=count),
               rng.choice(np.array(["a", "b", "c"], dtype=object), size=count)]
    for picked in ([0], [1], [0, 1], [1, 2], [0, 1, 2], [2, 0]):
        chosen = [columns[i] for i in picked]
        expected = pd.DataFrame({i: c for i, c in enumerate(chosen)}).groupby(list(range(len(chosen)))).indices
        groups = rows_by_key(*chosen)
        assert {key if len(chosen) > 1 else key[0] for key in groups} == set(expected)
        for key, rows in groups.items():
            assert np.array_equal(rows, expected[key if len(chosen) > 1 else key[0]])
        first_seen = [list(pd.unique(column)).index for column in chosen]
        assert list(groups) == sorted(groups, key=lambda key: [index(value) for index, value in zip(first_seen, key)])


def test_deep_nesting_costs_no_walk_per_level():
    """100,000 windows nested in one another, a launch just inside each start and each end:
    the end launches come after every deeper window has closed. A walk up the nest per launch
    (or per window, as for the window after the nest, which ends later than all of it) would
    take 10^10 steps here."""
    depth = 100_000
    level = np.arange(depth)
    windows = pd.DataFrame({"pid": 1, "tid": 7, "start_ns": np.r_[2 * level, 4 * depth + 1],
                            "end_ns": np.r_[4 * depth - 2 * level, 8 * depth]})
    ops = _ops(np.concatenate([2 * level + 1, 4 * depth - 2 * level - 1, [4 * depth + 2]]), 7)
    owner = ops_in_windows(ops, windows, same_thread=True)
    assert np.array_equal(owner, np.concatenate([level, level, [depth]]))
    ranges = windows.assign(range_id=np.arange(depth + 1), kind="push_pop", parent_id=np.r_[level - 1, -1])
    assert np.array_equal(innermost_ranges(ops, ranges), owner)


def test_innermost_range_walks_up_past_closed_siblings():
    # outer [0, 100] holds a [10, 20] and b [30, 40]; b holds c [32, 35]
    ranges = pd.DataFrame({
        "range_id": [0, 1, 2, 3], "name": ["outer", "a", "b", "c"],
        "kind": "push_pop", "start_ns": [0, 10, 30, 32], "end_ns": [100, 20, 40, 35],
        "pid": 1, "tid": 7, "parent_id": [-1, 0, 0, 2]})
    ops = _ops([5, 15, 25, 33, 37, 90, 33, 150], [7, 7, 7, 7, 7, 7, 8, 7])
    assert innermost_ranges(ops, ranges).tolist() == [0, 1, 0, 3, 2, 0, -1, -1]


def test_no_step_ranges_means_whole_capture(external_trace):
    labelled = label_ops(load_trace(external_trace("h100_2gpu_1s.sqlite")), RangeNames())
    assert not labelled.has_steps
    assert labelled.ops["measured"].all()
    assert any("whole capture" in note for note in labelled.notes)
    assert np.array_equal(labelled.ops["phase"].unique(), [""])


def test_per_op_ranges_inside_a_region_do_not_hide_it(tmp_path):
    """With emit_nvtx, an `aten::exp` range sits inside `computing softmax`: the kernel it
    launches still belongs to the softmax region."""
    from tests.synthetic import build_export
    path = build_export(tmp_path / "dense.sqlite", kernels=[
        (1000, 1100, 150, 5, 1, 1), (1200, 1300, 250, 5, 1, 2), (1400, 1500, 350, 5, 1, 3)],
        ranges=[("step_0", 100, 400, 5, 1, 1, 59), ("forward", 110, 390, 5, 1, 1, 59),
                ("computing softmax", 120, 300, 5, 1, 1, 59), ("aten::exp", 140, 160, 5, 1, 1, 59),
                ("aten::add", 340, 360, 5, 1, 1, 59)])
    ops = label_ops(load_trace(path)).ops
    assert ops["region"].tolist() == ["computing softmax", "computing softmax", ""]
    assert ops["phase"].tolist() == ["forward"] * 3


def test_range_names_validate_themselves():
    assert RangeNames(phases=["f", "l", "b", "o"]).phases == ("f", "l", "b", "o")
    assert RangeNames(phases=("f", "l", "b", "o")).phase_roles()["b"] == "backward"
    assert RangeNames(phases=("f", "b", "o")).phase_roles() == {"f": "forward", "b": "backward", "o": "optimizer_step"}
    for bad in ({"phases": ("a", "b", "c", "d", "e")}, {"phases": ("a", "a", "b", "c")},
                {"step_prefix": "w", "warmup_prefix": "w"}, {"step_prefix": ""}, {"regions": ("s", "s", "f")},
                {"warmup_steps": -1}):
        with pytest.raises(ValueError):
            RangeNames(**bad)


def test_custom_names_label_phases_by_role(tmp_path):
    """Ranges named by the caller: ops get the phase and the attention part they stand for."""
    from tests.synthetic import build_export
    path = build_export(tmp_path / "named.sqlite", kernels=[
        (1000, 1100, 150, 5, 1, 1), (1200, 1300, 250, 5, 1, 2), (1400, 1500, 450, 5, 1, 3),
        (1600, 1700, 650, 5, 1, 4)],
        ranges=[("w0", 100, 200, 5, 1, 1, 59), ("fwd", 110, 190, 5, 1, 1, 59),
                ("s0", 200, 500, 5, 1, 1, 59), ("fwd", 210, 300, 5, 1, 1, 59),
                ("sm", 240, 260, 5, 1, 1, 59), ("bwd", 400, 500, 5, 1, 1, 59),
                ("forward", 600, 700, 5, 1, 1, 59)])
    names = RangeNames(warmup_prefix="w", step_prefix="s", phases=("fwd", "l", "bwd", "o"), regions=("qk", "sm", "av"))
    labelled = label_ops(load_trace(path), names)
    # The warm-up step's forward has no backward after it: an inference pass, kept out of the phases.
    assert labelled.ops["phase"].tolist() == ["", "forward", "backward", ""]
    assert labelled.structure.inference_passes == 1
    assert labelled.ops["step"].tolist() == ["w0", "s0", "s0", ""]
    assert labelled.ops["measured"].tolist() == [False, True, True, False]
    assert labelled.ops["region"].tolist() == ["", "computing softmax", "", ""]
    assert labelled.measured_passes == {"forward": 1, "backward": 1}
    assert labelled.phase_ranges["phase"].tolist() == ["forward", "backward"]
    assert labelled.notes == ["no range is named `l`", "no range is named `o`", "no range is named `qk`", "no range is named `av`"]


def test_ops_hold_no_end_and_their_ends_are_the_exports(fixture_trace):
    """An op's end is its start plus its duration (8 bytes an op not held): every kernel's and
    memory operation's end as the export has it."""
    path = fixture_trace(TRAIN)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        exported = sorted(db.execute(" UNION ALL ".join(
            f"SELECT start, end FROM {table}" for table in
            ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"))).fetchall())
    trace = load_trace(path)
    assert "end_ns" not in trace.kernels and "end_ns" not in trace.memops
    ops = gpu_ops(trace)
    assert "end_ns" not in ops
    assert list(zip(ops["start_ns"].tolist(), op_ends(ops).tolist())) == exported
    assert op_ends(ops, [0]).tolist() == [exported[0][1]]


@pytest.mark.parametrize("presorted", [False, True])
@pytest.mark.parametrize("kinds", [("memcpy",), ("memset",), ("memcpy", "memset"), ()])
@pytest.mark.parametrize("kernel_count", [0, 1, 7, 40])
def test_gpu_ops_name_and_kind_each_op_in_start_order(kinds, kernel_count, presorted):
    """op_kind's categories are the kinds present (in OP_KINDS's order); memops are named
    ``[CUDA <kind>]``; rows by start, then end, kernels first on ties; the same whether both tables
    come in time order (merged) or not (sorted). Sizes are int32 where they fit."""
    from types import SimpleNamespace
    rng = np.random.default_rng(kernel_count + len(kinds))
    kernels = pd.DataFrame({"start_ns": rng.integers(0, 5, kernel_count), "dur_ns": rng.integers(0, 8, kernel_count),
                            "demangled_name": pd.Categorical(rng.choice(["gemm", "add"], kernel_count))})
    memop_kinds = [kinds[i % len(kinds)] for i in range(5)] if kinds else []
    size = 64 if kernel_count != 7 else 2**40
    memops = pd.DataFrame({"kind": memop_kinds, "start_ns": rng.integers(0, 5, len(memop_kinds)),
                           "dur_ns": rng.integers(0, 8, len(memop_kinds)), "name": "", "bytes": size})
    if presorted:  # as the loader leaves them; ties on start and end between the tables
        kernels = kernels.sort_values(["start_ns", "dur_ns"], kind="stable").reset_index(drop=True)
        memops = memops.sort_values(["start_ns", "dur_ns"], kind="stable").reset_index(drop=True)
        memop_kinds = memops["kind"].tolist()
    ops = gpu_ops(SimpleNamespace(kernels=kernels, memops=memops))
    assert ops["bytes"].dtype == (np.int64 if size > np.iinfo(np.int32).max and kinds else np.int32)
    ends = np.r_[kernels["start_ns"] + kernels["dur_ns"], memops["start_ns"] + memops["dur_ns"]]
    order = np.lexsort((ends, np.r_[kernels["start_ns"], memops["start_ns"]]))
    kind = np.array(["kernel"] * kernel_count + memop_kinds, dtype=object)[order]
    assert ops["op_kind"].tolist() == kind.tolist()
    assert list(ops["op_kind"].cat.categories) == [k for k in OP_KINDS if k in set(kind)]
    names = np.r_[kernels["demangled_name"].astype(str), [f"[CUDA {k}]" for k in memop_kinds]][order]
    assert ops["demangled_name"].astype(str).tolist() == names.tolist()
    assert ops["bytes"].tolist() == [0 if k == "kernel" else size for k in kind]


def test_positions_are_32_bit_only_where_they_fit():
    assert position_dtype(0) is np.int32
    assert position_dtype(np.iinfo(np.int32).max) is np.int32
    assert position_dtype(np.iinfo(np.int32).max + 1) is np.int64
    ops = pd.DataFrame({"pid": [1, 1], "launch_start_ns": [5, 50]})
    windows = pd.DataFrame({"pid": [1], "start_ns": [0], "end_ns": [10]})
    found = ops_in_windows(ops, windows)
    assert found.dtype == np.int32 and found.tolist() == [0, -1]


@pytest.mark.parametrize("count", [0, 1, 2, 5, 300])
def test_positions_where_in_chunks_are_flatnonzero(monkeypatch, count):
    rng = np.random.default_rng(count)
    values = rng.integers(0, 3, count).astype(np.int8)  # ties everywhere
    others = rng.integers(0, 2, count)
    for chunk in (1, 2, 7, 1 << 20):
        monkeypatch.setattr(attribution, "CHUNK_OPS", chunk)
        for value in (0, 1, 2, 5):
            found = attribution.positions_where_all((values,), (value,))
            assert found.dtype == np.int32 and found.tolist() == np.flatnonzero(values == value).tolist()
            both = attribution.positions_where_all((values, others), (value, 1))
            assert both.tolist() == np.flatnonzero((values == value) & (others == 1)).tolist()
