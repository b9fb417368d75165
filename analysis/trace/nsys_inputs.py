"""What the nsys questions read, built once per trace, and the per-kernel totals they share.

Every section of the summary built from the labelled operations reads one :class:`NsysInputs`;
none reloads or relabels the trace.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from analysis.core.classify import classify_kernels, gemm_precision_mix
from analysis.core.flops import attention_head_size, phase_flops_from_ops
from analysis.core.phases import LabelledOps
from analysis.core.structure import RunStructure
from analysis.core.timings import RunRecord

# A repeat counter at the end of a range name (`iter=3`, `rep 2`, `_7`): ranges whose names differ
# only in it repeat one configuration.
REPEAT_COUNTER = re.compile(r"[\s_,;:-]*(?:[A-Za-z]\w*\s*[=:]\s*)?\d+$")
# The columns of the labelled ops the questions read (a slim copy keeps the filters cheap).
OP_COLUMNS = ("start_ns", "end_ns", "dur_ns", "pid", "device_id", "stream_id", "op_kind", "demangled_name", "step",
              "measured", "phase", "phase_range_id", "region")
# The columns of :meth:`NsysInputs.measured_kernels` (what the per-kernel figures read; not the
# ones that are the same on every row there, ``op_kind`` and ``measured``).
MEASURED_COLUMNS = ("start_ns", "end_ns", "dur_ns", "pid", "device_id", "demangled_name", "phase", "phase_range_id",
                    "region", "category", "tensor_core")


@dataclass(frozen=True)
class NsysInputs:
    """Labelled GPU operations of one trace with their kernel categories, and the run record.

    ``ops`` holds the :data:`OP_COLUMNS` of ``LabelledOps.ops`` plus ``category`` and
    ``tensor_core`` (memcpy/memset rows get their ``op_kind`` as category, and False).
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

    @classmethod
    def build(cls, labelled: LabelledOps, run: RunRecord, gpu_name: str | None,
              gemm_ops: pd.DataFrame | None = None) -> NsysInputs:
        """Add kernel categories to the labelled ops; ``gemm_ops`` (the trace's matmul op ranges)
        give FLOPs and the head size from shapes."""
        ops = labelled.ops[list(OP_COLUMNS)]
        category, tensor_core = op_classes(ops)
        ops = ops.assign(category=category, tensor_core=tensor_core)
        if labelled.has_steps:
            measured_steps = int(ops.loc[ops["measured"], "step"].nunique())
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

    def measured_kernels(self, phases: tuple[str, ...] | None = None) -> pd.DataFrame:
        """Kernel rows of measured steps (their :data:`MEASURED_COLUMNS`), in the given phases
        (all, when ``phases`` is None).

        All of them are one table kept for the trace (read it, do not modify it); the rows of
        some phases are selected from it at each call, not kept: at millions of kernels each
        kept selection would cost as much memory as the rows it holds."""
        kernels = self._once(("kernels", None), lambda: self.ops.loc[
            (self.ops["measured"] & (self.ops["op_kind"] == "kernel")).to_numpy(), list(MEASURED_COLUMNS)])
        return kernels if phases is None else kernels[kernels["phase"].isin(phases).to_numpy()]

    def kernel_totals(self, phases: tuple[str, ...] | None, passes: int) -> pd.DataFrame:
        """:func:`kernel_totals` of ``measured_kernels(phases)``, computed once per argument pair."""
        return self._once(("totals", phases, passes), lambda: kernel_totals(self.measured_kernels(phases), passes))

    def gemm_precisions(self) -> dict[str, float]:
        """:func:`analysis.core.classify.gemm_precision_mix` of the measured kernels, computed once."""
        return self._once(("gemm precisions",), lambda: gemm_precision_mix(self.measured_kernels()))

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
    few hundred names."""
    is_kernel = (ops["op_kind"] == "kernel").to_numpy()
    name_code, names = pd.factorize(ops["demangled_name"])
    classes = classify_kernels(pd.Series([*np.asarray(names, dtype=object), ""]))  # code -1 (no name) is ""
    kind_code, kinds = pd.factorize(ops["op_kind"])
    labels = np.concatenate([classes["category"].to_numpy(dtype=object), np.asarray(kinds, dtype=object)])
    label_code = np.where(is_kernel, name_code % len(classes), len(classes) + kind_code)
    present = np.unique(label_code)
    categories, position = np.unique(labels[present].astype(str), return_inverse=True)
    code_of_label = np.zeros(len(labels), dtype=np.int64)
    code_of_label[present] = position
    category = pd.Categorical.from_codes(code_of_label[label_code], categories=pd.Index(categories, dtype="str"))
    return category, classes["tensor_core"].to_numpy()[name_code % len(classes)] & is_kernel


def kernel_totals(kernels: pd.DataFrame, passes: int) -> pd.DataFrame:
    """One row per kernel (demangled name), most summed time first.

    Columns: ``kernel``, ``category``, ``tensor_core`` (of the kernel's first row), ``calls``,
    ``total_ns``, ``calls_per_pass``, ``ms_per_pass`` (divided by ``passes``) and ``share`` (of
    the summed time of ``kernels``). Rows without a name are left out.
    """
    codes, names = pd.factorize(kernels["demangled_name"])
    named = np.flatnonzero(codes >= 0)
    codes = codes[named]
    calls = np.bincount(codes, minlength=len(names))
    # Integer ns summed in float64 stay exact below 2**53 ns (104 days).
    total_ns = np.bincount(codes, weights=kernels["dur_ns"].to_numpy()[named], minlength=len(names)).astype(np.int64)
    first_row = named[np.unique(codes, return_index=True)[1]]
    names = np.asarray(names, dtype=object).astype(str)
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
    """Summed time per category in ms per pass, largest first (index: category names)."""
    codes, categories = pd.factorize(kernels["category"])
    known = codes >= 0
    summed = np.bincount(codes[known], weights=kernels["dur_ns"].to_numpy()[known], minlength=len(categories))
    per_category = pd.Series(summed.astype(np.int64), index=np.asarray(categories, dtype=object)) / max(passes, 1) / 1e6
    return per_category.sort_values(ascending=False)
