"""The measured kernels summed per group (NsysInputs.kernel_groups) against the kernel rows they
sum: on random ops (ties, missing names, memory operations, unmeasured rows, several devices, no
rows, one row), every figure made from the groups equals the one made from the rows, and the
groups, totals and per-phase sums equal straightforward sums written out row by row."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.core.classify import classify_name, gemm_precision_mix, uses_tensor_cores
from analysis.core.phases import PHASES, LabelledOps
from analysis.core.structure import REGIONS
from analysis.core.timings import RunRecord
from analysis.trace import nsys_inputs, phase_breakdown
from analysis.trace.nsys_inputs import (
    GROUP_COLUMNS,
    NsysInputs,
    category_ms,
    device_keys,
    device_positions,
    distinct_devices,
    kernel_groups,
    kernel_totals,
    op_classes,
)
from analysis.trace.phase_breakdown import (
    UNPHASED_NOTE_SHARE,
    device_busy_ns,
    device_summaries,
    overall_summary,
    phase_summaries,
    phase_table,
    range_figures,
    unphased_notes,
)
from analysis.trace.question_figures import nsys_b, nsys_c, nsys_d, nsys_e

NAMES = [
    "ampere_sgemm_128x64_tn",
    "sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous "
    "namespace)::SoftMaxForwardEpilogue>(T4 *, const T2 *, int)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>(int, T2, "
    "T3)",
    "triton_red_fused_log_softmax_0",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator ()(at::TensorIterator &)::[lambda(float, float) (instance "
    "1)]>, unsigned int, float, 4>>(T3)",
]
MEMOP_NAMES = ["[CUDA memcpy Host-to-Device]", "[CUDA memset]"]
PIDS = [7, 40000, 105536]  # 40000 and 105536 would share their pid * 65536 in 32 bits: two devices


def random_inputs(seed: int) -> NsysInputs:
    """Random ops in random phase ranges, labelled as ``label_ops`` labels them (an op's phase
    is its phase range's), with their categories."""
    rng = np.random.default_rng(seed)
    count = int(rng.choice([0, 1, int(rng.integers(2, 120)), int(rng.integers(1000, 2000))]))  # more rows than groups
    range_count = int(rng.integers(1, 8))
    ranges = pd.DataFrame({
        "range_id": rng.permutation(50)[:range_count].astype(np.int64),
        "phase": rng.choice(list(PHASES), range_count),
        "measured": rng.random(range_count) < 0.8,
        "start_ns": np.arange(range_count, dtype=np.int64) * 100,
        "cpu_dur_ns": rng.integers(0, 500, range_count),
    })
    range_of_op = rng.integers(-1, range_count, count)
    phase = np.where(range_of_op >= 0, ranges["phase"].to_numpy()[range_of_op], "")
    kind = rng.choice(["kernel", "kernel", "kernel", "memcpy", "memset"], count)
    name = np.where(kind == "kernel", rng.choice([*NAMES, None], count), rng.choice(MEMOP_NAMES, count))
    start = np.sort(rng.integers(0, 1000, count))
    dur = rng.integers(0, 4, count)  # small: ties, and kernels of no time
    ops = pd.DataFrame({
        "start_ns": start, "end_ns": start + dur, "dur_ns": dur,
        "pid": rng.choice(PIDS, count).astype(np.int32), "device_id": rng.integers(0, 2, count).astype(np.int32),
        "stream_id": np.full(count, 7, dtype=np.int32),
        "op_kind": pd.Categorical(kind, categories=["kernel", "memcpy", "memset"]),
        "demangled_name": pd.Categorical(name, categories=[*NAMES, *MEMOP_NAMES, "a name of no row"]),
        "step": pd.Categorical(rng.choice(["s0", "s1"], count)),
        "measured": rng.random(count) < 0.9,
        "phase": pd.Categorical(phase),
        "phase_range_id": np.where(range_of_op >= 0, ranges["range_id"].to_numpy()[range_of_op], -1),
        "region": pd.Categorical(rng.choice(["", *REGIONS], count), categories=["", *REGIONS]),
    })
    category, tensor_core = op_classes(ops)
    measured = ranges[ranges["measured"]]["phase"].value_counts()
    return NsysInputs(ops=ops.assign(category=category, tensor_core=tensor_core), phase_ranges=ranges,
                      measured_passes={p: int(measured[p]) for p in PHASES if measured.get(p, 0)},
                      measured_steps=2, has_steps=True, run=RunRecord(), gpu_name=None, structure=None)


class RowsAsGroups(NsysInputs):
    """NsysInputs whose every measured kernel is a group of its own: what the figures would be
    read from the kernel rows themselves."""

    def kernel_groups(self, phases=None):
        return self.measured_kernels(phases, (*GROUP_COLUMNS, "dur_ns")).assign(calls=1).reset_index(drop=True)


def _same(a, b) -> bool:
    """Equal figures, NaN equal to NaN."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


@pytest.fixture(params=[5, 1 << 20])
def chunk(request, monkeypatch):
    """The rows read at a time by the passes over the ops: a few (folded over many chunks, each
    searched for groups' first rows in slices that do not divide it) or all."""
    monkeypatch.setattr(nsys_inputs, "CHUNK_OPS", request.param)
    monkeypatch.setattr(nsys_inputs, "FIRST_ROW_SLICE", 3 if request.param == 5 else 1 << 16)
    monkeypatch.setattr(phase_breakdown, "CHUNK_OPS", request.param)
    return request.param


def _device_key(pid: int, device_id: int) -> int:
    """The (process, GPU) pair as one number, without wrapping."""
    return int(pid) * 65536 + int(device_id)


@pytest.mark.parametrize("seed", range(40))
def test_groups_sum_the_measured_kernels_row_by_row(seed, chunk):
    inputs = random_inputs(seed)
    ops = inputs.ops
    expected = {}  # group -> [first row, calls, summed ns], in order of first row
    for row in range(len(ops)):
        if not (ops["measured"].iat[row] and ops["op_kind"].iat[row] == "kernel"):
            continue
        key = (_device_key(ops["pid"].iat[row], ops["device_id"].iat[row]), ops["phase"].iat[row],
               ops["region"].iat[row], str(ops["demangled_name"].iat[row]))
        group = expected.setdefault(key, [row, 0, 0])
        group[1] += 1
        group[2] += int(ops["dur_ns"].iat[row])
    groups = kernel_groups(ops, inputs.measured_kernel_rows())
    assert list(groups.columns) == [*GROUP_COLUMNS, "calls", "dur_ns"]
    first_rows = [first for first, _, _ in expected.values()]
    pd.testing.assert_frame_equal(groups[list(GROUP_COLUMNS)],
                                  ops.iloc[first_rows][list(GROUP_COLUMNS)].reset_index(drop=True))
    assert groups["calls"].tolist() == [calls for _, calls, _ in expected.values()]
    assert groups["dur_ns"].tolist() == [ns for _, _, ns in expected.values()]


def test_groups_of_many_names_match_a_groupby():
    """Over 2**15 groups, fewer possible ones than rows: numbered in 32-bit integers."""
    rng = np.random.default_rng(1)
    count, names = 200_000, [f"kernel_{i}" for i in range(3000)]
    ops = pd.DataFrame({
        "pid": np.full(count, 7, dtype=np.int32), "device_id": np.zeros(count, dtype=np.int32),
        "phase": pd.Categorical(rng.choice(list(PHASES), count)),
        "region": pd.Categorical(rng.choice(["", *REGIONS], count)),
        "demangled_name": pd.Categorical(rng.choice(names, count), categories=names),
        "category": pd.Categorical(np.full(count, "other")), "tensor_core": np.zeros(count, dtype=bool),
        "dur_ns": rng.integers(0, 1000, count), "measured": rng.random(count) < 0.9,
        "op_kind": pd.Categorical(np.full(count, "kernel")),
    })
    groups = kernel_groups(ops, ops["measured"].to_numpy())
    rows = ops[ops["measured"]].assign(row=np.flatnonzero(ops["measured"]),
                                       key=lambda rows: rows["pid"].to_numpy() * 65536 + rows["device_id"].to_numpy())
    expected = (rows.groupby(["key", "phase", "region", "demangled_name"], observed=True)
                .agg(first=("row", "min"), calls=("row", "size"), dur_ns=("dur_ns", "sum")).sort_values("first"))
    assert 2**15 < len(expected)
    assert groups["calls"].tolist() == expected["calls"].tolist()
    assert groups["dur_ns"].tolist() == expected["dur_ns"].tolist()
    pd.testing.assert_frame_equal(groups[list(GROUP_COLUMNS)],
                                  ops.iloc[expected["first"]][list(GROUP_COLUMNS)].reset_index(drop=True))


@pytest.mark.parametrize("seed", range(40))
def test_kernel_totals_match_a_sum_per_name(seed):
    inputs = random_inputs(seed)
    rows = inputs.measured_kernels()
    per_name = {}  # name -> [calls, total ns, first row]
    for position, (name, dur) in enumerate(zip(rows["demangled_name"], rows["dur_ns"])):
        if isinstance(name, str):
            total = per_name.setdefault(name, [0, 0, position])
            total[0] += 1
            total[1] += int(dur)
    order = sorted(per_name, key=lambda name: (-per_name[name][1], name))
    for totals in (kernel_totals(rows, 3), kernel_totals(inputs.kernel_groups(), 3)):
        assert totals["kernel"].tolist() == order
        assert totals["calls"].tolist() == [per_name[name][0] for name in order]
        assert totals["total_ns"].tolist() == [per_name[name][1] for name in order]
        assert totals["category"].astype(str).tolist() == [classify_name(name) for name in order]
        assert totals["tensor_core"].tolist() == [uses_tensor_cores(name, classify_name(name)) for name in order]
    pd.testing.assert_frame_equal(kernel_totals(rows, 3), kernel_totals(inputs.kernel_groups(), 3))
    flags = np.random.default_rng(seed).random(len(rows)) < 0.5  # a flag per row, not per name: the first row's
    flagged = kernel_totals(rows.assign(tensor_core=flags), 3)
    assert flagged["tensor_core"].tolist() == [bool(flags[per_name[name][2]]) for name in order]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # shares of a forward pass of no kernel time
def test_figures_from_groups_equal_those_from_the_kernel_rows(seed):
    inputs = random_inputs(seed)
    rows = RowsAsGroups(**{name: getattr(inputs, name) for name in inputs.__dataclass_fields__})
    for phases in (None, ("forward",), ("forward", "backward")):
        pd.testing.assert_series_equal(category_ms(inputs.kernel_groups(phases), 2),
                                       category_ms(rows.kernel_groups(phases), 2))
    assert inputs.gemm_precisions() == rows.gemm_precisions() == gemm_precision_mix(inputs.measured_kernels())
    for figures in (overall_summary, device_summaries, phase_summaries,
                    *(question.figures for question in (nsys_b, nsys_c, nsys_d, nsys_e))):
        assert _same(_outcome(figures, inputs), _outcome(figures, rows)), figures.__module__


def _outcome(figures, inputs: NsysInputs):
    """The figures of ``inputs``, or the type of the error they raise (a device whose kernels
    are all unnamed has no top kernel)."""
    try:
        return figures(inputs) if figures.__name__ != "figures" else figures(inputs, {})
    except IndexError as error:
        return type(error).__name__


@pytest.mark.parametrize("seed", range(40))
def test_a_note_gives_the_measured_kernel_time_in_no_phase_over_its_share(seed):
    """The note appears when the measured kernels in no phase take over the share, with that
    share as the kernel rows give it."""
    inputs = random_inputs(seed)
    ops = inputs.ops
    kernels = ops[ops["measured"] & (ops["op_kind"] == "kernel")]
    total = kernels["dur_ns"].sum()
    share = kernels.loc[kernels["phase"] == "", "dur_ns"].sum() / total if total else 0.0
    notes = unphased_notes(inputs) if inputs.measured_passes else []
    if share > UNPHASED_NOTE_SHARE and inputs.measured_passes:
        assert len(notes) == 1 and notes[0].startswith(f"{share * 100:.1f}% of the measured steps' kernel time")
    else:
        assert notes == []


@pytest.mark.parametrize("seed", range(40))
def test_phase_table_sums_the_ops_of_measured_ranges(seed):
    inputs = random_inputs(seed)
    ops, ranges = inputs.ops, inputs.phase_ranges
    measured_ranges = set(ranges.loc[ranges["measured"], "range_id"])
    in_table = ops[ops["measured"] & ops["phase_range_id"].isin(measured_ranges)]
    table = phase_table(inputs)
    for phase, row in table.iterrows():
        in_phase = in_table[in_table["phase"] == phase]
        is_kernel = in_phase["op_kind"] == "kernel"
        passes = inputs.passes(phase)
        assert row["kernels_per_pass"] == is_kernel.sum() / passes
        assert row["kernel_ms_per_pass"] == in_phase.loc[is_kernel, "dur_ns"].sum() / passes / 1e6
        assert row["memop_ms_per_pass"] == in_phase.loc[~is_kernel, "dur_ns"].sum() / passes / 1e6


@pytest.mark.parametrize("seed", range(40))
def test_range_figures_match_the_ops_row_by_row(seed, chunk):
    inputs = random_inputs(seed)
    ops, range_ids = inputs.ops, pd.Index(inputs.phase_ranges["range_id"])
    figures = range_figures(ops, range_ids)
    for position, range_id in enumerate(range_ids):
        rows = ops[ops["measured"].to_numpy() & (ops["phase_range_id"] == range_id).to_numpy()]
        kernel = (rows["op_kind"] == "kernel").to_numpy()
        covered = set().union(*(range(start, end) for start, end in zip(rows["start_ns"], rows["end_ns"])))
        assert figures["kernels"][position] == kernel.sum()
        assert figures["kernel_ns"][position] == rows["dur_ns"].to_numpy()[kernel].sum()
        assert figures["memop_ns"][position] == rows["dur_ns"].to_numpy()[~kernel].sum()
        assert figures["first_start"][position] == (rows["start_ns"].min() if len(rows) else 0)
        assert figures["last_end"][position] == (rows["end_ns"].max() if len(rows) else 0)
        assert figures["busy"][position] == len(covered)


@pytest.mark.parametrize("seed", range(40))
def test_device_busy_time_is_the_union_of_its_measured_kernels(seed, chunk):
    inputs = random_inputs(seed)
    ops = inputs.ops
    covered = {}  # device key -> the nanoseconds some measured kernel of it covers
    for row in np.flatnonzero(inputs.measured_kernel_rows()):
        key = _device_key(ops["pid"].iat[row], ops["device_id"].iat[row])
        covered.setdefault(key, set()).update(range(ops["start_ns"].iat[row], ops["end_ns"].iat[row]))
    busy = device_busy_ns(inputs)
    assert busy.index.tolist() == sorted(busy.index)
    assert {key: ns for key, ns in busy.items() if key in covered} == {key: len(ns) for key, ns in covered.items()}
    assert not busy.drop(list(covered)).any()  # devices of memory operations or unmeasured kernels only


@pytest.mark.parametrize("chunk", [3, 1 << 20])
def test_device_positions_rank_the_distinct_keys(monkeypatch, chunk):
    """The same in chunks of a few rows as in one: empty, one device, several, and more than are
    found one pass each (FEW_DEVICES)."""
    monkeypatch.setattr(nsys_inputs, "CHUNK_OPS", chunk)
    rng = np.random.default_rng(0)
    for pid, device_id in ((np.array([], dtype=np.int32), np.array([], dtype=np.int32)),
                           (np.full(5, 3), np.full(5, 1)), (rng.integers(0, 3, 200), rng.integers(0, 4, 200)),
                           (rng.integers(0, 2, 50), np.full(50, 2))):
        distinct = distinct_devices(pid, device_id)
        expected_distinct, expected_positions = np.unique(device_keys(pid, device_id), return_inverse=True)
        assert distinct.tolist() == expected_distinct.tolist()
        assert device_positions(distinct, pid, device_id).tolist() == expected_positions.tolist()


def test_device_keys_keep_large_pids_apart_and_in_order():
    """pids read as int32 (as the loader keeps them), large enough to wrap an int32 key."""
    pid = np.array([40_000, 40_000 + 65_536, 40_000, 2_000_000, 7], dtype=np.int32)
    device_id = np.array([1, 1, 0, 3, 2], dtype=np.int32)
    positions = device_positions(distinct_devices(pid, device_id), pid, device_id)
    pairs = sorted(set(zip(pid.tolist(), device_id.tolist())))
    assert positions.tolist() == [pairs.index(pair) for pair in zip(pid.tolist(), device_id.tolist())]


@pytest.mark.parametrize("seed", range(20))
def test_measured_steps_are_the_steps_of_some_measured_op(seed):
    """Steps in runs of ops, some sharing a name with a warm-up run of it, ops of no step (never
    measured, as label_ops labels them); no ops."""
    rng = np.random.default_rng(seed)
    ops = random_inputs(seed).ops
    run_step = rng.choice(["", "s0", "s1", "s2", "s3"], 12)
    run_measured = (rng.random(12) < 0.5) & (run_step != "")
    run = np.sort(rng.integers(0, 12, len(ops)))  # a step's ops come together, in runs
    ops = ops.assign(step=pd.Categorical(run_step[run]), measured=run_measured[run])
    labelled = LabelledOps(ops=ops, phase_ranges=random_inputs(seed).phase_ranges, measured_passes={},
                           has_steps=True, structure=None)
    inputs = NsysInputs.build(labelled, RunRecord(), None)
    assert inputs.measured_steps == len({step for step, measured in zip(ops["step"], ops["measured"]) if measured})


@pytest.mark.parametrize("seed", range(10))
def test_op_classes_match_a_class_per_row(seed):
    ops = random_inputs(seed).ops
    category, tensor_core = op_classes(ops)
    expected = [classify_name(name if isinstance(name, str) else "") if kind == "kernel" else kind
                for kind, name in zip(ops["op_kind"], ops["demangled_name"])]
    assert list(category) == expected
    assert list(category.categories) == sorted(set(expected))
    assert tensor_core.tolist() == [kind == "kernel" and uses_tensor_cores(name if isinstance(name, str) else "", label)
                                    for kind, name, label in zip(ops["op_kind"], ops["demangled_name"], expected)]
