"""Label every GPU operation with its step, phase and fine-grained region.

Steps are the ``warmup_<i>`` / ``step_<i>`` ranges: only operations launched inside ``step_<i>``
ranges are *measured*. Phases (``forward``, ``loss``, ``backward``, ``optimizer_step``) and steps
collect launches from every thread of their process; regions (attention sub-ranges, per-op
ranges) are the innermost ranges on the launching thread. The rule itself lives in
:mod:`analysis.attribution`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from analysis.attribution import innermost_ranges, ops_in_windows
from analysis.load import RangeFilter, Trace
from cs336_profile import contract

# The phases of a step, in order; ``LabelledOps`` labels ops and phase ranges with these names
# whatever their ranges are called in the trace (``RangeNames.phases``).
PHASES = contract.PHASES


@dataclass(frozen=True)
class RangeNames:
    """NVTX range names the analysis looks for; the defaults match the runner and the handout.

    ``phases`` names the ranges of :data:`PHASES`, in that order; ``attention_scores``,
    ``softmax`` and ``final_matmul`` are the attention sub-ranges. Raises ValueError when a
    name is empty, the step prefixes are equal, or ``phases`` does not name each phase once.
    """

    warmup_prefix: str = contract.WARMUP_PREFIX
    step_prefix: str = contract.STEP_PREFIX
    phases: tuple[str, ...] = PHASES
    attention: str = contract.ATTENTION_RANGE
    attention_scores: str = contract.ATTENTION_SCORES_RANGE
    softmax: str = contract.SOFTMAX_RANGE
    final_matmul: str = contract.FINAL_MATMUL_RANGE

    def __post_init__(self):
        object.__setattr__(self, "phases", tuple(self.phases))
        if len(self.phases) != len(PHASES):
            raise ValueError(f"phases needs {len(PHASES)} range names, for {', '.join(PHASES)}; "
                             f"got {len(self.phases)}")
        named = {"warmup prefix": self.warmup_prefix, "step prefix": self.step_prefix,
                 **dict(zip(PHASES, self.phases)), "attention": self.attention,
                 "attention scores": self.attention_scores, "softmax": self.softmax,
                 "final matmul": self.final_matmul}
        empty = [role for role, name in named.items() if not isinstance(name, str) or not name]
        if empty:
            raise ValueError(f"empty range name for {', '.join(empty)}")
        if self.warmup_prefix == self.step_prefix:
            raise ValueError(f"the warm-up and step prefixes are both {self.step_prefix!r}")
        for group, values in (("phase", self.phases), ("attention sub-range", self.regions)):
            if len(set(values)) != len(values):
                raise ValueError(f"the {group} names repeat a name: {', '.join(values)}")

    @property
    def regions(self) -> tuple[str, ...]:
        """The fine-grained ranges ops are labelled with (``LabelledOps.ops["region"]``)."""
        return (self.attention_scores, self.softmax, self.final_matmul)

    def nvtx_filter(self) -> RangeFilter:
        """The ranges the analysis looks at, for the loader to read (and no others): steps,
        phases, attention and the runner's per-layer ranges (FSDP blocks); every range of a
        trace without step ranges."""
        return RangeFilter(names=frozenset((*self.phases, self.attention, *self.regions)),
                           numbered=(self.warmup_prefix, self.step_prefix, contract.LAYER_PREFIX),
                           steps=self.step_prefix)

    def phase_range(self, phase: str) -> str:
        """The range name of one of :data:`PHASES`."""
        return self.phases[PHASES.index(phase)]

    def step_pattern(self) -> re.Pattern:
        """Matches warm-up and measured step range names, capturing the prefix."""
        prefixes = "|".join(re.escape(p) for p in (self.warmup_prefix, self.step_prefix))
        return re.compile(rf"^({prefixes})\d+$")


@dataclass
class LabelledOps:
    """GPU operations with their labels; see docs/architecture.md for the columns."""

    ops: pd.DataFrame
    phase_ranges: pd.DataFrame
    measured_passes: dict[str, int]
    has_steps: bool
    notes: list[str] = field(default_factory=list)
    names: RangeNames = RangeNames()  # the range names the ops were labelled with


def gpu_ops(trace: Trace) -> pd.DataFrame:
    """Kernels and memory operations in one table sorted by start, with ``op_kind`` and ``bytes``.

    Built column by column (one ordering, no whole-table copies): at millions of kernels the
    table is the largest thing the analysis holds."""
    kernels, memops = trace.kernels, trace.memops
    order = np.lexsort([np.concatenate([kernels[c].to_numpy(), memops[c].to_numpy()]) for c in ("end_ns", "start_ns")])
    memop_names = pd.Categorical("[CUDA " + memops["kind"].astype(str) + "]")
    op_kinds = pd.Categorical.from_codes(
        np.concatenate([np.zeros(len(kernels), np.int8), np.where(memops["kind"] == "memcpy", 1, 2).astype(np.int8)]),
        categories=["kernel", "memcpy", "memset"]).remove_unused_categories()
    columns = {}
    for column in kernels.columns:
        if column in ("name", "demangled_name"):
            both = union_categoricals([kernels[column], memop_names], ignore_order=True)
        else:
            both = np.concatenate([kernels[column].to_numpy(), memops[column].to_numpy()])
        columns[column] = both[order]
    columns["op_kind"] = op_kinds[order]
    columns["bytes"] = np.concatenate([np.zeros(len(kernels), np.int64), memops["bytes"].to_numpy(np.int64)])[order]
    return pd.DataFrame(columns, copy=False)


def label_ops(trace: Trace, names: RangeNames = RangeNames()) -> LabelledOps:
    """Apply the attribution rule and return the labelled operations of ``trace``."""
    ops = gpu_ops(trace)
    ranges = trace.ranges
    notes: list[str] = []

    step_kind = ranges["name"].str.extract(names.step_pattern(), expand=False)
    step_windows = ranges[step_kind.notna()]
    in_step = ops_in_windows(ops, step_windows)
    ops["step"] = _labels(in_step, step_windows["name"])
    has_steps = bool((step_kind == names.step_prefix).any())
    window_is_warmup = np.append((step_kind[step_kind.notna()] == names.warmup_prefix).to_numpy(),
                                 False)
    warmup = window_is_warmup[in_step]
    if has_steps:
        ops["measured"] = (in_step >= 0) & ~warmup
    else:
        ops["measured"] = ~warmup
        notes.append(f"no `{names.step_prefix}<i>` ranges: the whole capture"
                     + (" less its warm-up ranges" if warmup.any() else "") + " is analyzed")

    phase_windows = ranges[ranges["name"].isin(names.phases)]
    phase_windows = phase_windows.assign(name=phase_windows["name"].map(dict(zip(names.phases, PHASES))))
    phase_windows = _merge_overlapping(phase_windows, notes)
    in_phase = ops_in_windows(ops, phase_windows)
    ops["phase"] = _labels(in_phase, phase_windows["name"])
    ops["phase_range_id"] = np.append(phase_windows["range_id"].to_numpy(), -1)[in_phase]

    ops["region"] = _regions(ops, ranges, names)
    phase_ranges = _phase_ranges(phase_windows, step_windows, has_steps, names)
    parent = phase_windows["parent_id"].to_numpy()
    phase_ranges["parent_name"] = np.where(parent >= 0, ranges["name"].to_numpy(dtype=object)[np.maximum(parent, 0)], "")
    measured = phase_ranges[phase_ranges["measured"]]
    counts = measured["phase"].value_counts()
    passes = {p: int(counts[p]) for p in PHASES if counts.get(p, 0)}
    if not len(phase_windows):
        notes.append("no phase ranges (" + ", ".join(names.phases) + ") in the trace")
    return LabelledOps(ops=ops, phase_ranges=phase_ranges, measured_passes=passes,
                       has_steps=has_steps, notes=notes, names=names)


def _labels(position: np.ndarray, window_names: pd.Series) -> pd.Categorical:
    """Name of the window at each position (``""`` for -1), as a categorical."""
    categories, codes = np.unique(np.append(window_names.to_numpy(dtype=object).astype(str), ""),
                                  return_inverse=True)
    return pd.Categorical.from_codes(codes[position], categories=categories)


def _regions(ops: pd.DataFrame, ranges: pd.DataFrame, names: RangeNames) -> pd.Categorical:
    """For each op, the nearest same-thread range enclosing its launch whose name is one of
    ``names.regions`` (``""`` when none). Finer ranges inside a region (per-op ranges from
    ``emit_nvtx``) do not hide it."""
    categories = ["", *names.regions]
    if not len(ranges):
        return pd.Categorical.from_codes(np.zeros(len(ops), dtype=np.int64), categories=categories)
    innermost = innermost_ranges(ops, ranges)
    region_of_range = _nearest_named(ranges["name"].isin(names.regions).to_numpy(),
                                     ranges["parent_id"].to_numpy())
    region_id = np.append(region_of_range, -1)[innermost]
    codes = np.append(pd.Index(categories).get_indexer(ranges["name"]), 0)
    return pd.Categorical.from_codes(codes[region_id], categories=categories)


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


def _merge_overlapping(windows: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Phase windows with each window that overlaps an earlier one of the same phase and process
    merged into it (its end extended), so an overlapping pair counts as one pass; a note counts them."""
    if windows.empty or not _any_overlap(windows):
        return windows
    ordered = windows.sort_values(["pid", "name", "start_ns"], kind="stable")
    same_group = (ordered["pid"] == ordered["pid"].shift()) & (ordered["name"] == ordered["name"].shift())
    reach = ordered.groupby(["pid", "name"], sort=False, observed=True)["end_ns"].cummax().shift()
    overlaps = (same_group & (ordered["start_ns"] < reach)).to_numpy()
    if not overlaps.any():
        return windows
    merged = ordered[~overlaps].assign(
        end_ns=ordered.groupby(np.cumsum(~overlaps), sort=True)["end_ns"].max().to_numpy())
    phases = ", ".join(sorted(ordered.loc[overlaps, "name"].unique()))
    notes.append(f"{int(overlaps.sum())} phase ranges ({phases}) overlap an earlier range of the same phase in "
                 "their process; each was merged into it, so an overlapping pair counts as one pass")
    return merged.sort_values("range_id", kind="stable")


def _any_overlap(windows: pd.DataFrame) -> bool:
    """Whether a window starts before an earlier-starting window of its phase and process ends
    (the common answer, no, found on column arrays)."""
    phase = pd.factorize(windows["name"])[0]
    group = pd.factorize(windows["pid"])[0] * (phase.max() + 1) + phase
    starts, ends = windows["start_ns"].to_numpy(), windows["end_ns"].to_numpy()
    order = np.lexsort((starts, group))
    group, starts, ends = group[order], starts[order], ends[order]
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    return any((starts[a + 1:b] < np.maximum.accumulate(ends[a:b - 1])).any()
               for a, b in zip(first, np.r_[first[1:], len(group)]))


def _phase_ranges(phase_windows: pd.DataFrame, step_windows: pd.DataFrame, has_steps: bool,
                  names: RangeNames) -> pd.DataFrame:
    """One row per phase-range instance, with its step and whether it was measured."""
    starts = phase_windows.rename(columns={"start_ns": "launch_start_ns", "tid": "launch_tid"})
    in_step = ops_in_windows(starts, step_windows)
    step = np.where(in_step >= 0, step_windows["name"].to_numpy(dtype=object)[
        np.maximum(in_step, 0)], "") if len(step_windows) else np.full(len(starts), "", object)
    step = pd.Series(step, index=phase_windows.index, dtype=object)
    measured = step.str.startswith(names.step_prefix) if has_steps else \
        ~step.str.startswith(names.warmup_prefix)
    return pd.DataFrame({
        "range_id": phase_windows["range_id"], "phase": phase_windows["name"], "step": step,
        "measured": measured.astype(bool), "pid": phase_windows["pid"],
        "start_ns": phase_windows["start_ns"], "end_ns": phase_windows["end_ns"],
        "cpu_dur_ns": phase_windows["end_ns"] - phase_windows["start_ns"],
    }).reset_index(drop=True)
