"""What the nsys questions read, built once per trace, and the per-kernel totals they share.

Every section of the summary built from the labelled operations reads one :class:`NsysInputs`;
none reloads or relabels the trace.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from analysis.core.attribution import CHUNK_OPS
from analysis.core.classify import classify_kernels, gemm_precision_mix
from analysis.core.codes import lookup, run_starts, value_codes
from analysis.core.flops import attention_head_size, phase_flops_from_ops
from analysis.core.phases import LabelledOps
from analysis.core.structure import RunStructure
from analysis.core.timings import RunRecord

# A repeat counter at the end of a range name (`iter=3`, `rep 2`, `_7`): ranges whose names differ
# only in it repeat one configuration.
REPEAT_COUNTER = re.compile(r"[\s_,;:-]*(?:[A-Za-z]\w*\s*[=:]\s*)?\d+$")
# The columns of the labelled ops the questions read (a slim copy keeps the filters cheap).
OP_COLUMNS = ("start_ns", "dur_ns", "pid", "device_id", "stream_id", "op_kind", "demangled_name", "step",
              "measured", "phase", "phase_range_id", "region")
# The columns of :meth:`NsysInputs.measured_kernels` (what the per-kernel figures read; not the
# ones that are the same on every row there, ``op_kind`` and ``measured``).
MEASURED_COLUMNS = ("start_ns", "dur_ns", "pid", "device_id", "demangled_name", "phase", "phase_range_id",
                    "region", "category", "tensor_core")
# Rows of a chunk searched at a time for the first row of each group in :func:`kernel_groups`:
# every row of the trace's first slice is of a group not met yet, few rows of a later one.
FIRST_ROW_SLICE = 1 << 16
# The columns of :meth:`NsysInputs.kernel_groups`: those the kernels of a group share (a kernel's
# category and tensor-core flag follow from its name), then the group's count and summed time.
GROUP_COLUMNS = ("pid", "device_id", "phase", "region", "demangled_name", "category", "tensor_core")


@dataclass(frozen=True)
class NsysInputs:
    """Labelled GPU operations of one trace with their kernel categories, and the run record.

    ``ops`` holds the :data:`OP_COLUMNS` of ``LabelledOps.ops`` plus ``category`` and
    ``tensor_core`` (memcpy/memset rows get their ``op_kind`` as category, and False; a kernel's
    both follow from its name, :func:`op_classes`).
    """

    ops: pd.DataFrame
    phase_ranges: pd.DataFrame
    measured_passes: dict[str, int]
    measured_steps: int  # step ranges measured; 1 when the trace has none (whole capture)
    has_steps: bool
    run: RunRecord
    gpu_name: str | None
    structure: RunStructure  # the steps, phases and attention parts the ops were labelled with
    # From the trace's matmul op shapes (autograd-shapes-nvtx), for a trace without a model config:
    op_flops: dict = field(default_factory=dict)  # phase -> matmul FLOPs per measured pass
    op_d_head: int | None = None  # attention head size
    # What holds each kernel launched in no step (``LabelledOps.unstepped_holders``).
    unstepped_holders: pd.Series = field(default_factory=lambda: pd.Series(dtype=object))

    @classmethod
    def build(cls, labelled: LabelledOps, run: RunRecord, gpu_name: str | None,
              gemm_ops: pd.DataFrame | None = None) -> NsysInputs:
        """Add kernel categories to the labelled ops; ``gemm_ops`` (the trace's matmul op ranges)
        give FLOPs and the head size from shapes."""
        ops = labelled.ops[list(OP_COLUMNS)]
        category, tensor_core = op_classes(ops)
        ops = ops.assign(category=category, tensor_core=tensor_core)
        if labelled.has_steps:
            step_code, steps = value_codes(ops["step"])
            flags = ops["measured"].to_numpy()
            # The first op of each run of one step and flag stands for the run (a step's ops come together).
            first = np.union1d(run_starts(step_code), run_starts(flags))
            first = first[first < len(flags)]  # no ops: no run
            measured = np.zeros(len(steps) + 1, dtype=bool)
            measured[step_code[first][flags[first]]] = True  # code -1 (no step) marks the last entry
            measured_steps = int(measured[:-1].sum())
        else:
            measured_steps = 1
        return cls(
            ops=ops,
            phase_ranges=labelled.phase_ranges,
            measured_passes=dict(labelled.measured_passes),
            measured_steps=measured_steps,
            has_steps=labelled.has_steps,
            run=run,
            gpu_name=gpu_name,
            structure=labelled.structure,
            op_flops=phase_flops_from_ops(gemm_ops, labelled.phase_ranges) if gemm_ops is not None else {},
            op_d_head=attention_head_size(gemm_ops) if gemm_ops is not None else None,
            unstepped_holders=labelled.unstepped_holders,
        )

    @cached_property
    def _memo(self) -> dict:
        """Figures several questions ask for, computed once per trace (keyed by method and argument)."""
        return {}

    def _once(self, key: tuple, compute):
        """``compute()``, or what it returned the first time ``key`` was asked for."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @property
    def steps_averaged(self) -> int:
        """What per-step figures divide by: the measured steps, 1 where none holds an op (their
        ranges launched nothing, so every such figure is 0)."""
        return max(self.measured_steps, 1)

    def measured_kernel_rows(self) -> np.ndarray:
        """Whether each op is a kernel of a measured step (a mask over ``ops``, kept)."""
        return self._once(("kernel rows",), lambda: self.ops["measured"].to_numpy()
                          & (self.ops["op_kind"] == "kernel").to_numpy())

    def measured_kernels(self, phases: tuple[str, ...] | None = None,
                         columns: tuple[str, ...] = MEASURED_COLUMNS, regions: tuple[str, ...] | None = None
                         ) -> pd.DataFrame:
        """Kernel rows of measured steps (their ``columns``, :data:`MEASURED_COLUMNS` unless
        told), in the given phases and regions (all, when ``phases`` or ``regions`` is None).

        Selected from the ops at each call, not kept: at millions of kernels a kept selection
        would cost as much memory as the rows it holds. Figures that only add kernels up read
        :meth:`kernel_groups` instead."""
        rows = self.measured_kernel_rows()
        if phases is not None:
            rows = rows & self.ops["phase"].isin(phases).to_numpy()
        if regions is not None:
            rows = rows & self.ops["region"].isin(regions).to_numpy()
        return self.ops.loc[rows, list(columns)]

    def kernel_groups(self, phases: tuple[str, ...] | None = None) -> pd.DataFrame:
        """The measured kernels in the given phases (all, when ``phases`` is None) summed per
        group of one device, phase, attention region and kernel name: one row per group, in
        order of the group's first kernel, with the :data:`GROUP_COLUMNS` of the kernels, their
        number (``calls``) and summed ``dur_ns``.

        A sum, a first row or a distinct count per name, category or region is the same over
        these rows (``calls`` counting their kernels) as over the kernel rows themselves, from a
        table of a few hundred rows instead of millions (:func:`kernel_totals`,
        :func:`category_ms`). Built once per trace (read it, do not modify it)."""
        groups = self._once(("kernel groups",), lambda: kernel_groups(self.ops, self.measured_kernel_rows()))
        return groups if phases is None else groups[groups["phase"].isin(phases).to_numpy()]

    def kernel_totals(self, phases: tuple[str, ...] | None, passes: int) -> pd.DataFrame:
        """:func:`kernel_totals` of the measured kernels in ``phases``, computed once per argument pair."""
        return self._once(("totals", phases, passes), lambda: kernel_totals(self.kernel_groups(phases), passes))

    def gemm_precisions(self) -> dict[str, float]:
        """:func:`analysis.core.classify.gemm_precision_mix` of the measured kernels (a mix of
        summed time, the same over their groups), computed once."""
        return self._once(("gemm precisions",), lambda: gemm_precision_mix(self.kernel_groups()))

    def shape_groups(self, phase: str) -> pd.Series:
        """The shape group of each measured range of ``phase`` (indexed by ``range_id``): in a trace
        without step ranges, the name of the range enclosing it less a trailing repeat counter
        (``attn d=16 s=256 iter=3`` -> ``attn d=16 s=256``); ``""`` for every range of a trace
        with step ranges, whose passes repeat one step."""
        ranges = self.phase_ranges[self.phase_ranges["measured"] & (self.phase_ranges["phase"] == phase)]
        if self.has_steps or "parent_name" not in ranges:
            return pd.Series("", index=ranges["range_id"], dtype=object)
        groups = ranges["parent_name"].astype(str).map(lambda name: REPEAT_COUNTER.sub("", name))
        return pd.Series(groups.to_numpy(), index=ranges["range_id"], dtype=object)

    def mixed_shapes(self, phase: str) -> int:
        """How many shape groups the measured ranges of ``phase`` form when more than one, else 0."""
        count = 0 if self.has_steps else self._once(("shapes", phase), lambda: self.shape_groups(phase).nunique())
        return count if count > 1 else 0

    def passes(self, phase: str) -> int:
        """Number of measured instances of a phase (0 when the trace has none)."""
        return int(self.measured_passes.get(phase, 0))


def op_classes(ops: pd.DataFrame) -> tuple[pd.Categorical, np.ndarray]:
    """The category of each op (a kernel's from its demangled name, a memory operation's
    ``op_kind``) as a categorical of the sorted categories present, and whether it is a
    tensor-core kernel. Each distinct name is classified once: a trace has millions of ops but a
    few hundred names; the ops take their classes by code (code -1, no name, the last entry)."""
    is_kernel = (ops["op_kind"] == "kernel").to_numpy()
    name_code, names = value_codes(ops["demangled_name"])
    classes = classify_kernels(pd.Series([*np.asarray(names, dtype=object), ""]))  # code -1 (no name) is ""
    kind_code, kinds = value_codes(ops["op_kind"])
    name_labels = classes["category"].to_numpy(dtype=str)
    labels, label_code = np.unique(np.concatenate([name_labels, np.asarray(kinds, dtype=str)]), return_inverse=True)
    label_code = label_code.astype(np.int8)  # a few categories
    code = lookup(label_code[:len(name_labels)], name_code)  # every op's as a kernel's, then the memory operations'
    memop = ~is_kernel
    code[memop] = label_code[len(name_labels):][kind_code[memop]]
    present = np.zeros(len(labels), dtype=bool)
    present[code] = True
    position = (np.cumsum(present) - 1).astype(np.int8)
    category = pd.Categorical.from_codes(lookup(position, code), categories=pd.Index(labels[present], dtype="str"))
    tensor_core = lookup(classes["tensor_core"].to_numpy(dtype=bool), name_code)
    tensor_core &= is_kernel
    return category, tensor_core


def kernel_groups(ops: pd.DataFrame, measured_kernel: np.ndarray) -> pd.DataFrame:
    """:meth:`NsysInputs.kernel_groups` of ``ops`` (every phase), over the rows that
    ``measured_kernel`` marks. Each row gets the number of its group from the codes of its
    device, phase, region and name; the groups are counted and summed by bincount and their
    first rows found by a reversed assignment (over :data:`FIRST_ROW_SLICE` rows at a time, each
    of only the rows of groups not met before), so the rows are neither sorted nor copied. Those
    passes, and the numbering, go :data:`~analysis.core.attribution.CHUNK_OPS` rows at a time
    (their sums added: integer ns summed in float64 stay exact below 2**53), so no array as long
    as the ops is made."""
    pid, device_id = ops["pid"].to_numpy(), ops["device_id"].to_numpy()
    devices = distinct_devices(pid, device_id)
    coded = [value_codes(ops[column]) for column in ("phase", "region", "demangled_name")]
    codes = [column for column, _ in coded]
    counts = [len(devices), *(len(values) for _, values in coded)]

    def numbers(part: slice) -> np.ndarray:
        """The group number of each row of ``part``: its codes (-1, missing, to count - 1) in mixed radix, from 0."""
        device = device_positions(devices, pid[part], device_id[part])
        group, missing = np.zeros(len(device), dtype=np.int64), 0
        for column, count in zip([device, *(column[part] for column in codes)], counts):
            group *= count + 1
            group += column
            missing = missing * (count + 1) - 1
        return group - missing

    chunks = [slice(low, low + CHUNK_OPS) for low in range(0, len(ops), CHUNK_OPS)]
    groups = math.prod(count + 1 for count in counts)
    if groups > len(ops):  # more possible groups than rows: number only those present
        present_groups = np.unique(np.concatenate([np.unique(numbers(part)) for part in chunks] or [np.zeros(0, np.int64)]))
        groups, group_of = len(present_groups), lambda part: np.searchsorted(present_groups, numbers(part))
    else:
        group_of = numbers
    durations = ops["dur_ns"].to_numpy()
    calls = np.zeros(groups + 1, dtype=np.int64)
    summed_ns = np.zeros(groups + 1)
    first_row = np.full(groups + 1, -1, dtype=np.int64)
    for part in chunks:
        chunk = group_of(part)
        chunk[~measured_kernel[part]] = groups  # one bin past the groups
        calls += np.bincount(chunk, minlength=groups + 1)
        summed_ns += np.bincount(chunk, weights=durations[part], minlength=groups + 1)
        for sub in range(0, len(chunk), FIRST_ROW_SLICE):  # after the first slice, few rows are of a new group
            piece = chunk[sub:sub + FIRST_ROW_SLICE]
            new = np.flatnonzero(first_row[piece] < 0)[::-1]  # rows of groups no earlier slice has, last first
            first_row[piece[new]] = part.start + sub + new  # each group's last write: its first row
    calls, summed_ns = calls[:groups], summed_ns[:groups].astype(np.int64)
    present = np.flatnonzero(calls)
    present = present[np.argsort(first_row[present])]
    table = ops.iloc[first_row[present]][list(GROUP_COLUMNS)].reset_index(drop=True)
    return table.assign(calls=calls[present], dur_ns=summed_ns[present])


def device_keys(pid: np.ndarray, device_id: np.ndarray) -> np.ndarray:
    """A number per row for its (process, GPU) pair, in int64: a pid of 32,768 or more times 65,536
    would wrap in the pid column's int32, reordering devices and merging pids 65,536 apart."""
    return pid.astype(np.int64) * 65536 + device_id


def device_positions(distinct: np.ndarray, pid: np.ndarray, device_id: np.ndarray) -> np.ndarray:
    """Each row's position among ``distinct`` (:func:`distinct_devices` of these rows or more):
    zeros, with no keys made, where there is one device."""
    if len(distinct) <= 1:
        return np.zeros(len(pid), dtype=np.int64)
    return np.searchsorted(distinct, device_keys(pid, device_id))


def distinct_devices(pid: np.ndarray, device_id: np.ndarray) -> np.ndarray:
    """The distinct :func:`device_keys` of the rows, ascending: made
    :data:`~analysis.core.attribution.CHUNK_OPS` rows at a time (:func:`_distinct_keys`), and
    without keys for a trace of one device (the common case, told by the columns' least and
    greatest values)."""
    if len(pid) and pid.min() == pid.max() and device_id.min() == device_id.max():
        return device_keys(pid[:1], device_id[:1])
    return np.unique(np.concatenate([_distinct_keys(device_keys(pid[low:low + CHUNK_OPS], device_id[low:low + CHUNK_OPS]))
                                     for low in range(0, len(pid), CHUNK_OPS)] or [np.zeros(0, dtype=np.int64)]))


# Devices :func:`_distinct_keys` finds one pass each before it hashes the keys left (past four,
# the passes take longer than hashing every row).
FEW_DEVICES = 4


def _distinct_keys(keys: np.ndarray) -> np.ndarray:
    """``np.unique(keys)`` for the few devices of a trace: the least key, then the least of the
    rows of other keys, and so on, a pass over the keys left for each (for a million keys of two
    interleaved GPUs 5 ms, of four 10 ms, against 14 ms hashing every row); the keys left after
    :data:`FEW_DEVICES` are hashed."""
    found = []
    while len(keys) and len(found) < FEW_DEVICES:
        found.append(keys.min())
        keys = keys[keys != found[-1]]
    return np.concatenate([np.array(found, dtype=np.int64), np.unique(keys)])


def kernel_totals(kernels: pd.DataFrame, passes: int) -> pd.DataFrame:
    """One row per kernel (demangled name), most summed time first.

    ``kernels``: kernel rows, or rows of :meth:`NsysInputs.kernel_groups` (their ``calls``
    column counts the kernels each row sums). Columns: ``kernel``, ``category``, ``tensor_core``
    (of the kernel's first row), ``calls``, ``total_ns``, ``calls_per_pass``, ``ms_per_pass``
    (divided by ``passes``) and ``share`` (of the summed time of ``kernels``). Rows without a name
    are left out.
    """
    codes, names = value_codes(kernels["demangled_name"])
    named = np.flatnonzero(codes >= 0)
    codes = codes[named]
    counts = kernels["calls"].to_numpy()[named] if "calls" in kernels else None
    calls = np.bincount(codes, weights=counts, minlength=len(names)).astype(np.int64)
    # Integer ns summed in float64 stay exact below 2**53 ns (104 days).
    total_ns = np.bincount(codes, weights=kernels["dur_ns"].to_numpy()[named], minlength=len(names)).astype(np.int64)
    first_row = np.zeros(len(names), dtype=np.int64)
    first_row[codes[::-1]] = named[::-1]  # each name's last write: its first row
    present = np.flatnonzero(calls)  # a categorical's names may include some of no row
    names = np.asarray(names, dtype=object)[present].astype(str)
    calls, total_ns, first_row = calls[present], total_ns[present], first_row[present]
    order = np.array(sorted(range(len(names)), key=lambda i: (-total_ns[i], names[i])), dtype=np.int64)
    calls, total_ns, first_row = calls[order], total_ns[order], first_row[order]
    divisor = max(passes, 1)
    all_ns = total_ns.sum()
    return pd.DataFrame({
        "kernel": pd.Series(names[order], dtype=str),
        "category": kernels["category"].array[first_row],
        "tensor_core": kernels["tensor_core"].to_numpy()[first_row],
        "calls": calls,
        "total_ns": total_ns,
        "calls_per_pass": calls / divisor,
        "ms_per_pass": total_ns / divisor / 1e6,
        "share": total_ns / all_ns if all_ns else 0.0,
    })


def category_ms(kernels: pd.DataFrame, passes: int) -> pd.Series:
    """Summed time per category in ms per pass, largest first (index: category names), of kernel
    rows or of :meth:`NsysInputs.kernel_groups` rows (categories in order of first appearance
    before the sort, in both)."""
    codes, categories = pd.factorize(kernels["category"])
    known = codes >= 0
    summed = np.bincount(codes[known], weights=kernels["dur_ns"].to_numpy()[known], minlength=len(categories))
    per_category = pd.Series(summed.astype(np.int64), index=np.asarray(categories, dtype=object)) / max(passes, 1) / 1e6
    return per_category.sort_values(ascending=False)
