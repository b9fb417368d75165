"""Label every GPU operation with its step, phase and fine-grained region.

Steps, warm-up, phases and attention parts are found by :mod:`analysis.core.structure`; only
operations launched inside measured steps are *measured*. Phases (``forward``, ``loss``,
``backward``, ``optimizer_step``) and steps collect launches from every thread of their process;
regions (attention parts) are the innermost ranges on the launching thread. The rule itself lives
in :mod:`analysis.core.attribution`.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.core.attribution import innermost_ranges, ops_in_window_tables, ops_in_windows, positions_where_all
from analysis.core.codes import counted_rows, lookup, row_starts
from analysis.core.range_names import RangeNames
from analysis.core.structure import PROFILED_WINDOW, REGIONS, RunStructure, find_structure
from analysis.core.structure_text import family_label
from analysis.load import Trace
from analysis.load.tables import narrow_ids, sorted_by, with_columns
from cs336_profile import contract

# The phases of a step, in order; ``LabelledOps`` labels ops and phase ranges with these names
# whatever their ranges are called in the trace (:mod:`analysis.core.structure` finds them).
PHASES = contract.PHASES
# Kinds of GPU operation (``op_kind``), in the order of their categories.
OP_KINDS = ("kernel", "memcpy", "memset")
# The column of :func:`trace_ops`: the ``range_id`` of the innermost range on each op's launching
# thread (-1 for none), read by the labelling of attention parts and dropped there.
INNERMOST_RANGE = "innermost_range_id"
# The columns of the ops that finding the structure and labelling read.
LABELLING_COLUMNS = ("start_ns", "dur_ns", "pid", "launch_start_ns", "launch_tid", "op_kind", "demangled_name")


@dataclass
class LabelledOps:
    """GPU operations with their labels; see docs/architecture.md for the columns."""

    ops: pd.DataFrame
    phase_ranges: pd.DataFrame
    measured_passes: dict[str, int]
    has_steps: bool
    structure: RunStructure
    notes: list[str] = field(default_factory=list)
    # For each kernel launched in no step (index: its row in ``ops``), the family of the outermost
    # range on its launching thread that holds no step (``rollout``, ``evaluate``), "" for none.
    unstepped_holders: pd.Series = field(default_factory=lambda: pd.Series(dtype=object))
    # Processes whose forward passes ran on several GPUs from one thread: one model split across
    # them (model parallelism), each pass holding every GPU's work (:func:`_split_models`).
    split_models: tuple[int, ...] = ()
    # The launch columns of the rows :func:`label_ops`' ``launch_rows`` chose, indexed by their row
    # in ``ops``, which no longer holds them; None where none were asked for.
    launches: pd.DataFrame | None = None


def gpu_ops(trace: Trace, *, move: bool = False, columns: Collection[str] | None = None) -> pd.DataFrame:
    """Kernels and memory operations in one table sorted by start, with ``op_kind`` and ``bytes``;
    with ``columns``, only those of the kernels' columns and ``bytes`` (``op_kind`` always). As
    the loader's tables, they hold durations, not ends (:func:`analysis.load.tables.op_ends`).

    Built column by column (one ordering, no whole-table copies): at millions of kernels the table
    is the largest thing the analysis holds. With ``move``, the trace's kernel and
    memory-operation tables move into it (the trace keeps empty ones), each column released once
    moved, so the table is never held twice."""
    kernels, memops = trace.kernels, trace.memops
    if move:  # shallow copies: a column dropped from them is freed unless someone else holds the table
        kernels = kernels.copy(deep=False)
        trace.kernels, trace.memops = kernels.iloc[:0].copy(), memops.iloc[:0].copy()
    kernel_count = len(kernels)
    memop_at, memop_order, place = _merged_order(kernels, memops)
    # The memops' names, made once per kind present (the categories sorted, as pd.Categorical sorts them).
    memop_kind_codes, memop_kinds = pd.factorize(memops["kind"].astype(str))
    kind_names = "[CUDA " + memop_kinds + "]"
    name_categories = kind_names.sort_values()
    memop_names = pd.Categorical.from_codes(name_categories.get_indexer(kind_names)[memop_kind_codes],
                                            categories=name_categories)
    kept = set(kernels.columns) | {"bytes"} if columns is None else set(columns)
    order = list(kernels.columns)
    table = {}
    # The columns left out go first: moved, each is freed before the kept ones are placed beside it;
    # then the widest, whose placed copy beside the moved column is the largest, while the least is held.
    for column in sorted(order, key=lambda name: (name in kept, -_row_bytes(kernels[name]))):
        kernel_column = kernels.pop(column) if move else kernels[column]
        if column not in kept:
            continue
        if column == "demangled_name":
            table[column] = _with_memop_names(kernel_column.array, memop_names, place)
        else:
            table[column] = place(kernel_column.to_numpy(), memops[column].to_numpy())
        del kernel_column
    table = {column: table[column] for column in order if column in table}  # in the kernels' order
    total = kernel_count + len(memops)
    is_memcpy = np.asarray(memop_kinds == "memcpy", dtype=bool)[memop_kind_codes]
    used = [kernel_count > 0, is_memcpy.any(), not is_memcpy.all()]  # the kinds present, in OP_KINDS's order
    code = (np.cumsum(used) - 1).astype(np.int8)
    kind_codes = np.full(total, code[0])
    kind_codes[memop_at] = np.where(is_memcpy, code[1], code[2])[memop_order]
    table["op_kind"] = pd.Categorical.from_codes(kind_codes, categories=pd.Index(OP_KINDS)[used])
    if "bytes" in kept:
        memop_bytes = narrow_ids(memops["bytes"].to_numpy(np.int64))  # 32 bits where every size fits
        table["bytes"] = np.zeros(total, dtype=memop_bytes.dtype)
        table["bytes"][memop_at] = memop_bytes[memop_order]
    return pd.DataFrame(table, copy=False)


def _row_bytes(column: pd.Series) -> int:
    """Bytes a row of ``column`` takes (a categorical's: its code's)."""
    return column.array.codes.itemsize if isinstance(column.dtype, pd.CategoricalDtype) else column.dtype.itemsize


def _with_memop_names(kernel_names: pd.Categorical, memop_names: pd.Categorical, place: Callable) -> pd.Categorical:
    """The kernels' and memops' names as one categorical placed by ``place`` (:func:`_merged_order`),
    its categories the kernels' then the memops' new ones (as ``union_categoricals`` orders them):
    the kernels' codes are kept as they are, where pandas' union recodes them through a 64-bit
    copy of every code."""
    categories = kernel_names.categories.append(memop_names.categories)
    categories = categories[~categories.duplicated()]
    memop_codes = categories.get_indexer(memop_names.categories)[memop_names.codes]
    code_type = np.min_scalar_type(-len(categories))
    return pd.Categorical.from_codes(place(kernel_names.codes.astype(code_type, copy=False), memop_codes.astype(code_type)),
                                     categories=categories)


def _merged_order(kernels: pd.DataFrame, memops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, Callable]:
    """Where the kernels and memory operations go in one table sorted by start, then end (kernels
    first on ties, each table's rows in their order): the memops' rows in it, which memop each
    holds, and a function that places a kernel column and a memop column into one column so.

    Both tables sorted by start and end already (the loader sorts them) are merged: each memop
    goes after the kernels that sort no later, the kernel columns fill the other rows, and no sort
    order or concatenated copy of a column is made. Else both are concatenated and sorted."""
    # On equal starts, durations order ops as their ends do.
    kernel_start, kernel_dur = kernels["start_ns"].to_numpy(), kernels["dur_ns"].to_numpy()
    memop_start, memop_dur = memops["start_ns"].to_numpy(), memops["dur_ns"].to_numpy()
    if not (sorted_by(kernel_start, kernel_dur) and sorted_by(memop_start, memop_dur)):
        order = np.lexsort((np.concatenate([kernel_dur, memop_dur]), np.concatenate([kernel_start, memop_start])))
        memop_at = np.flatnonzero(order >= len(kernels))
        return memop_at, order[memop_at] - len(kernels), lambda kernel, memop: np.concatenate([kernel, memop])[order]
    before = np.searchsorted(kernel_start, memop_start, side="left")  # kernels that start earlier
    same_start = np.searchsorted(kernel_start, memop_start, side="right")
    for memop in np.flatnonzero(same_start > before):  # and those of the same start that end no later
        before[memop] += np.searchsorted(kernel_dur[before[memop]:same_start[memop]], memop_dur[memop], side="right")
    memop_at = before + np.arange(len(memops))
    is_kernel = np.ones(len(kernels) + len(memops), dtype=bool)
    is_kernel[memop_at] = False

    def place(kernel: np.ndarray, memop: np.ndarray) -> np.ndarray:
        merged = np.empty(len(is_kernel), dtype=np.result_type(kernel, memop))
        merged[is_kernel] = kernel
        merged[memop_at] = memop
        return merged

    return memop_at, np.arange(len(memops)), place


def trace_ops(trace: Trace, *, move: bool = False) -> pd.DataFrame:
    """What the labelling reads of the trace's operations whatever the range names: :func:`gpu_ops`
    of the kernels' columns (no ``bytes``: nothing after the labelling reads the ops' sizes, 4 B
    an op) with :data:`INNERMOST_RANGE` (:func:`analysis.core.attribution.innermost_ranges`), the
    table :func:`label_ops` takes as ``ops`` (and a re-analysis from kept tables keeps)."""
    ops = gpu_ops(trace, move=move, columns=list(trace.kernels.columns))
    # Joined without a copy (with_columns): a column set on the table would be copied into it.
    return with_columns(ops, **{INNERMOST_RANGE: narrow_ids(innermost_ranges(ops, trace.ranges))})


def label_ops(trace: Trace, names: RangeNames = RangeNames(), *, move_tables: bool = False,
              ops: pd.DataFrame | None = None, columns: Collection[str] | None = None,
              launch_rows: Callable[[pd.DataFrame], np.ndarray] | None = None) -> LabelledOps:
    """Find the run's structure (``names``: the roles the user named) and label every operation;
    with ``move_tables`` the trace's kernel and memory-operation tables move into the labelled
    ops (:func:`gpu_ops`), the trace keeping empty ones. ``ops``: the trace's operations as
    :func:`trace_ops` made them (the trace's own tables then unread), labelled in place. With
    ``columns`` (those the caller reads), the ops hold only them, those the labelling reads
    (:data:`LABELLING_COLUMNS`) and the labels, and of the launch columns only those the caller
    reads once the labelling has read them last: at millions of ops each column left out is tens
    of MB for the whole analysis. ``launch_rows``: a function of the ops giving the rows (a mask)
    whose launch columns the caller reads though ``columns`` leaves them out, kept in
    ``LabelledOps.launches``."""
    wanted = None if columns is None else {*columns, *LABELLING_COLUMNS}
    if ops is None:
        ops = gpu_ops(trace, move=move_tables, columns=wanted)
    elif wanted is not None:
        for column in [c for c in ops.columns if c not in wanted and c != INNERMOST_RANGE]:
            del ops[column]
    structure = find_structure(trace.ranges, ops, names, trace.host_calls)
    notes = list(structure.notes)
    ranges = trace.ranges
    # The attention part of each op first, while the ops hold no other label: its search over
    # every range of the launching thread is the labelling's largest.
    innermost = ops.pop(INNERMOST_RANGE).to_numpy() if INNERMOST_RANGE in ops else None
    region = _regions(ops, ranges, structure.regions, innermost)
    step_windows, phase_windows = structure.steps, structure.phases
    has_steps, profiled = structure.has_steps, structure.profiled
    # Each op's labels come straight from the search, in as few bytes as hold them (no window
    # position per op on the way), and join the ops without a copy (with_columns): at millions of
    # ops each is tens of MB. Steps first: whether each op's launch is in a measured step, and in a
    # step at all (its step's name says so, unless some step is unnamed).
    step_names, step_codes = _label_codes(step_windows["name"])
    unnamed_step = bool((step_names[step_codes[:-1]] == "").any())
    tables, labels = [step_windows], [step_codes]
    if has_steps:
        tables.append(step_windows)
        labels.append(np.append(step_windows["measured"].to_numpy(dtype=bool), False))
        if unnamed_step:
            tables.append(step_windows)
            labels.append(np.append(np.ones(len(step_windows), dtype=bool), False))
    step, *stepped = ops_in_window_tables(ops, tables, labels=labels)
    holders = pd.Series(dtype=object)
    if has_steps:  # the few kernels in no step, found a chunk at a time: no whole-column temporaries
        measured = stepped[0]
        unstepped = positions_where_all((stepped[1],), (False,)) if unnamed_step else \
            positions_where_all((step,), (step_codes[-1],))
        del stepped
        unstepped = unstepped[(ops["op_kind"].iloc[unstepped] == "kernel").to_numpy()].astype(np.int64)
        holders = _unstepped_holders(ops, unstepped, ranges, step_windows, innermost)
    else:
        measured = ops_in_windows(ops, profiled) >= 0 if profiled is not None else np.ones(len(ops), dtype=bool)
        analyzed = f"only {PROFILED_WINDOW} is" if profiled is not None else "the whole capture is"
        notes.append(f"no steps: {analyzed} analyzed ({structure.step_rule})")
    del innermost
    launches = _launches_of(ops, launch_rows(ops)) if launch_rows is not None else None
    if columns is not None and "launch_tid" not in columns and not _several_devices(ops):
        del ops["launch_tid"]  # read last by the holders' search (several GPUs: by _split_models too)
    # The phase window of each op as its position (16 bits below 32,768 windows), its name and
    # range id looked up once the launches are let go, not held beside them.
    phase_window = ops_in_windows(ops, phase_windows)
    if columns is not None and "launch_start_ns" not in columns:
        del ops["launch_start_ns"]  # read last by the phases' search
    phase_names, phase_codes = _label_codes(phase_windows["name"])
    phase = lookup(phase_codes, phase_window)
    phase_range_id = lookup(narrow_ids(np.append(phase_windows["range_id"].to_numpy(), -1)), phase_window)
    del phase_window
    ops = with_columns(ops, step=pd.Categorical.from_codes(step, categories=step_names), measured=measured,
                       phase=pd.Categorical.from_codes(phase, categories=phase_names), phase_range_id=phase_range_id,
                       region=region)
    del step, measured, phase, phase_range_id, region
    phase_ranges = _phase_ranges(phase_windows, step_windows, has_steps, profiled)
    parent = phase_windows["parent_id"].to_numpy(dtype=np.int64)
    phase_ranges["parent_name"] = np.where(parent >= 0, ranges["name"].to_numpy(dtype=object)[np.maximum(parent, 0)], "") \
        if len(ranges) else ""
    split_models = _split_models(ops)
    if columns is not None and "launch_tid" not in columns and "launch_tid" in ops:
        del ops["launch_tid"]  # read last by _split_models
    ops, phase_ranges = _passes_per_device(ops, phase_ranges, split_models)
    measured = phase_ranges[phase_ranges["measured"]]
    counts = measured["phase"].value_counts()
    passes = {p: int(counts[p]) for p in PHASES if counts.get(p, 0)}
    if not len(phase_windows) and structure.source != "kernels":  # else the step rule says why the kernels' are left out
        notes.append("no phases found: no phase ranges, no PyTorch labels, and no backward launched from another thread")
    return LabelledOps(ops=ops, phase_ranges=phase_ranges, measured_passes=passes,
                       has_steps=has_steps, structure=structure, notes=notes, unstepped_holders=holders,
                       split_models=split_models, launches=launches)


def _launches_of(ops: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """The launch columns of the ``rows`` (a mask) of ``ops``, indexed by their row."""
    positions = np.flatnonzero(rows)
    return pd.DataFrame({column: ops[column].to_numpy()[positions] for column in ("launch_start_ns", "launch_tid")},
                        index=positions)


def _unstepped_holders(ops: pd.DataFrame, rows: np.ndarray, ranges: pd.DataFrame, steps: pd.DataFrame,
                       innermost: np.ndarray | None = None) -> pd.Series:
    """For the kernels at ``rows`` (launched in no step), the family label of the outermost range
    on the launching thread that holds no step's start (what the user named the work between
    steps: ``rollout``, ``evaluate``; a range around the whole run is passed over), "" when no
    range holds the launch. ``innermost``: each op's :data:`INNERMOST_RANGE` where the ops came
    with it, else found for these kernels."""
    if not len(rows) or not len(ranges):
        return pd.Series([""] * len(rows), index=rows, dtype=object)
    innermost = innermost[rows] if innermost is not None else innermost_ranges(ops.iloc[rows], ranges)
    step_starts = {pid: np.sort(group.to_numpy()) for pid, group in steps.groupby("pid")["start_ns"]}
    starts, ends = ranges["start_ns"].to_numpy(), ranges["end_ns"].to_numpy()
    pids, parents, range_names = ranges["pid"].to_numpy(), ranges["parent_id"].to_numpy(), ranges["name"].to_numpy()

    def holds_step(r: int) -> bool:
        mine = step_starts.get(pids[r])
        return mine is not None and np.searchsorted(mine, ends[r], "right") > np.searchsorted(mine, starts[r], "left")

    def outermost(r: int) -> str:
        if r < 0 or holds_step(r):
            return ""
        while parents[r] >= 0 and not holds_step(parents[r]):
            r = parents[r]
        return family_label(str(range_names[r]))

    found = np.unique(innermost)
    label = dict(zip(found.tolist(), (outermost(int(r)) for r in found)))
    return pd.Series([label[r] for r in innermost.tolist()], index=rows, dtype=object)


# A process's forward kernels launched this much or more from threads that launch onto one GPU
# alone: a replica per GPU (torch.nn.DataParallel runs each in a thread of its own), not one model
# split across the GPUs (whose forward pass one thread launches onto every GPU in turn).
REPLICA_THREAD_SHARE = 0.5


def _several_devices(ops: pd.DataFrame) -> bool:
    """Whether ``ops`` ran on more than one GPU number."""
    devices = ops["device_id"].to_numpy() if "device_id" in ops else np.zeros(0)
    return bool(len(devices)) and devices.min() != devices.max()


def _split_models(ops: pd.DataFrame) -> tuple[int, ...]:
    """The processes whose forward passes ran on several GPUs launched mostly from threads that
    launch onto more than one of them: one model split across the GPUs (naive model or pipeline
    parallelism), whose pass is every GPU's work, not a replica per GPU (:func:`_passes_per_device`)."""
    if "launch_tid" not in ops or not _several_devices(ops):
        return ()
    forward = (ops["phase"] == "forward").to_numpy() & (ops["op_kind"] == "kernel").to_numpy()
    # The forward kernels' distinct (process, thread, GPU) with how many each launched, sorted.
    launches, kernels = counted_rows([ops[column].to_numpy() for column in ("pid", "launch_tid", "device_id")], forward)
    gpus_of_thread = np.diff(np.append(row_starts([launches[:, 0], launches[:, 1]]), len(launches)))  # a row per GPU
    one_gpu_thread = np.repeat(gpus_of_thread == 1, gpus_of_thread)
    pids, gpus = np.unique(np.unique(launches[:, [0, 2]], axis=0)[:, 0], return_counts=True)
    split = []
    for pid in pids[gpus > 1]:
        mine = launches[:, 0] == pid
        if kernels[mine & one_gpu_thread].sum() / kernels[mine].sum() < REPLICA_THREAD_SHARE:
            split.append(int(pid))
    return tuple(split)


def _passes_per_device(ops: pd.DataFrame, phase_ranges: pd.DataFrame, split_models: tuple[int, ...] = ()
                       ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A pass per GPU of a phase range whose ops ran on several GPUs of its process (one process
    driving a replica per GPU, as ``torch.nn.DataParallel`` does): such a range becomes one row of
    ``phase_ranges`` per GPU (new ids after the largest, its ``device_id`` set), and its ops take
    their GPU's id, so per-pass figures are per rank, as they are for a process per GPU. Every
    other range keeps its id and ``device_id`` -1 (all its process's GPUs: one), as do the ranges
    of ``split_models`` (:func:`_split_models`: one pass over every GPU). The ops are left as they
    are when every op ran on one GPU, or no range's ops ran on two."""
    phase_ranges = phase_ranges.assign(device_id=np.full(len(phase_ranges), -1, dtype=np.int64))
    if "device_id" not in ops or not len(ops):
        return ops, phase_ranges
    devices = ops["device_id"].to_numpy()
    if devices.min() == devices.max():
        return ops, phase_ranges
    range_of = ops["phase_range_id"].to_numpy()
    found, _ = counted_rows([range_of, devices], range_of >= 0)  # each range's GPUs
    pairs = np.unique((found[:, 0] << 16) | found[:, 1])  # CUDA ordinals fit 16 bits
    ranges, count = np.unique(pairs >> 16, return_counts=True)
    ranges = ranges[count > 1]
    if split_models:  # a split model's pass is every GPU's work
        spanning = phase_ranges.loc[phase_ranges["pid"].isin(split_models), "range_id"].to_numpy()
        ranges = ranges[~np.isin(ranges, spanning)]
    split = np.isin(pairs >> 16, ranges)
    if not split.any():
        return ops, phase_ranges
    first_id = int(max(phase_ranges["range_id"].max(), range_of.max())) + 1
    new_ids = np.full(len(pairs), -1, dtype=np.int64)
    new_ids[split] = np.arange(first_id, first_id + int(split.sum()))
    held = np.flatnonzero(range_of >= 0)
    renamed = new_ids[np.searchsorted(pairs, (range_of[held].astype(np.int64) << 16) | devices[held].astype(np.int64))]
    range_of = range_of.astype(np.int64)
    range_of[held[renamed >= 0]] = renamed[renamed >= 0]
    rows = [phase_ranges[~phase_ranges["range_id"].isin(ranges)]]
    for key, new_id in zip(pairs[split], new_ids[split]):
        row = phase_ranges[phase_ranges["range_id"].to_numpy() == key >> 16]
        rows.append(row.assign(range_id=new_id, device_id=int(key & 0xFFFF)))
    phase_ranges = pd.concat(rows, ignore_index=True).sort_values(["start_ns", "device_id"], kind="stable")
    return with_columns(ops, phase_range_id=narrow_ids(range_of)), phase_ranges.reset_index(drop=True)


def _label_codes(window_names: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The categories of the windows' names and ``""`` (for no window), sorted, and the code of each
    window's name, then of ``""`` last: the labels of :func:`ops_in_window_tables` that name each
    op's window, in as few bytes as hold them."""
    categories, codes = np.unique(np.append(window_names.to_numpy(dtype=object).astype(str), ""),
                                  return_inverse=True)
    return categories, codes.astype(np.min_scalar_type(-len(categories)))


def _regions(ops: pd.DataFrame, ranges: pd.DataFrame, parts: pd.Series, innermost: np.ndarray | None = None
             ) -> pd.Categorical:
    """For each op, the attention part (:data:`REGIONS`) of the nearest same-thread range
    enclosing its launch that is one (``parts``: part by ``range_id``; ``""`` when none). Finer
    ranges inside a region (per-op ranges) do not hide it. ``innermost``: each op's
    :data:`INNERMOST_RANGE` where the ops came with it, else searched for."""
    categories = ["", *REGIONS]
    if not len(ranges) or parts.empty:
        return pd.Categorical.from_codes(np.zeros(len(ops), dtype=np.int8), categories=categories)
    code = np.zeros(len(ranges) + 1, dtype=np.int8)  # the last one for "no range"
    code[parts.index.to_numpy(np.int64)] = pd.Categorical(parts, categories=REGIONS).codes + 1
    region_of_range = _nearest_named(code[:-1] > 0, ranges["parent_id"].to_numpy())
    code_of_range = code[np.append(region_of_range, -1)]  # the region's code, by range and for "no range"
    if innermost is not None:  # kept with the trace's operations (:func:`trace_ops`)
        return pd.Categorical.from_codes(lookup(code_of_range, innermost), categories=categories)
    # Each op's code straight from the search: no range id per op on the way.
    return pd.Categorical.from_codes(innermost_ranges(ops, ranges, code_of_range), categories=categories)


def _nearest_named(named: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """For each range, the id of itself or its nearest ancestor with ``named`` set, else -1.

    Pointer jumping: each range points at itself when named, else at its parent; following
    the pointers twice per round doubles the distance covered, so ``log2(depth)`` rounds."""
    pointer = np.where(named, np.arange(len(named)), parent)
    while True:
        going_on = pointer >= 0
        going_on[going_on] = ~named[pointer[going_on]]
        if not going_on.any():
            return pointer
        pointer[going_on] = pointer[pointer[going_on]]


def _phase_ranges(phase_windows: pd.DataFrame, step_windows: pd.DataFrame, has_steps: bool,
                  profiled: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per phase-range instance, with its step and whether it was measured (without
    steps: every one, or those starting in ``profiled``, the program's profiling windows)."""
    starts = phase_windows.rename(columns={"start_ns": "launch_start_ns", "tid": "launch_tid"})
    in_step = ops_in_windows(starts, step_windows)
    step_names = np.append(step_windows["name"].to_numpy(dtype=object), "")
    if has_steps:
        measured = np.append(step_windows["measured"].to_numpy(dtype=bool), False)[in_step]
    else:
        measured = ops_in_windows(starts, profiled) >= 0 if profiled is not None else np.ones(len(phase_windows), dtype=bool)
    return pd.DataFrame({
        "range_id": phase_windows["range_id"].to_numpy(np.int64), "phase": phase_windows["name"].to_numpy(),
        "step": step_names[in_step], "measured": measured.astype(bool), "pid": phase_windows["pid"].to_numpy(),
        "start_ns": phase_windows["start_ns"].to_numpy(np.int64), "end_ns": phase_windows["end_ns"].to_numpy(np.int64),
        "cpu_dur_ns": (phase_windows["end_ns"] - phase_windows["start_ns"]).to_numpy(np.int64),
    })
