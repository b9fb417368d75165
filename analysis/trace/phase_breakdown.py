"""Per-phase figures of the measured steps: kernel time by category, the three views of a phase's
duration (CPU span, GPU projection, summed kernel time) and the GPU idle time inside it.

- CPU span: the phase range's own duration (GPU time when the phase ends with a synchronize).
- GPU projection (``gpu_span``): first start to last end of the GPU operations (kernels,
  memcpy, memset) attributed to the phase instance.
- Busy time: the union of those operations' intervals over all streams; idle = span - busy.
- Summed kernel time: kernels only, overlapping kernels counted twice.

Every figure is a mean per measured pass: a sum over measured instances divided by their number.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.core.attribution import CHUNK_OPS
from analysis.core.codes import code_positions, id_table, lookup, run_starts, run_sums, value_codes
from analysis.core.intervals import span_per_group, union_length_per_group
from analysis.core.phases import PHASES
from analysis.trace.nsys_inputs import NsysInputs, category_ms, device_keys, device_positions, distinct_devices, kernel_totals

TOP_KERNELS_PER_PHASE = 10
TOP_KERNELS_OVERALL = 100
# A note says how much of the measured steps' kernel time lies in no phase range when it is over this share.
UNPHASED_NOTE_SHARE = 0.05


def phase_table(inputs: NsysInputs) -> pd.DataFrame:
    """One row per phase with measured instances (index ``phase``, in step order).

    Columns: ``passes``, ``kernels_per_pass``, ``kernel_ms_per_pass``, ``memop_ms_per_pass``,
    ``cpu_span_ms_per_pass``, ``gpu_span_ms_per_pass``, ``busy_ms_per_pass``, ``idle_ms_per_pass``.
    """
    ranges = inputs.phase_ranges[inputs.phase_ranges["measured"]]
    per_range = range_figures(inputs.ops, pd.Index(ranges["range_id"]))
    range_phase = _phase_index(ranges["phase"])
    summed_ns = {
        "kernel": _per_phase(range_phase, per_range["kernel_ns"]),
        "memop": _per_phase(range_phase, per_range["memop_ns"]),
        "cpu_span": _per_phase(range_phase, ranges["cpu_dur_ns"].to_numpy()),
        "gpu_span": _per_phase(range_phase, per_range["last_end"] - per_range["first_start"]),
        "busy": _per_phase(range_phase, per_range["busy"]),
    }
    phases = [p for p in PHASES if inputs.passes(p) > 0]
    rows = [PHASES.index(p) for p in phases]
    passes = np.array([inputs.passes(p) for p in phases], dtype=np.int64)
    out = pd.DataFrame({"passes": passes, "kernels_per_pass": _per_phase(range_phase, per_range["kernels"])[rows] / passes}
                       | {f"{name}_ms_per_pass": ns[rows] / passes / 1e6 for name, ns in summed_ns.items()},
                       index=pd.Index(phases, name="phase"))
    out["idle_ms_per_pass"] = out["gpu_span_ms_per_pass"] - out["busy_ms_per_pass"]
    return out


def range_figures(ops: pd.DataFrame, range_ids: pd.Index) -> dict[str, np.ndarray]:
    """Per phase range of ``range_ids`` (in that order), from the measured ops whose
    ``phase_range_id`` it is: ``kernels`` (how many), ``kernel_ns`` and ``memop_ns`` (summed
    durations of kernels and of memory operations, as float64: integer ns stay exact below 2**53),
    ``first_start`` and ``last_end`` (both 0 for a range without ops) and ``busy`` (the length of
    the union of the ops' intervals).

    The ops are read a chunk at a time (:func:`_time_chunks`) and each chunk's figures folded into
    the totals (sums added, spans widened, the union carried on by its reach), so nothing as long
    as the ops is made; a chunk's counts and sums are taken per run of consecutive ops of one
    range and kind, then added up per range."""
    count = len(range_ids)
    start, dur = ops["start_ns"].to_numpy(), ops["dur_ns"].to_numpy()
    measured, range_of = ops["measured"].to_numpy(), ops["phase_range_id"].to_numpy()
    is_kernel = (ops["op_kind"] == "kernel").to_numpy()
    position_of_id = id_table(range_ids.to_numpy(), range_of.max(initial=-1))
    first_start = np.full(count, np.iinfo(np.int64).max)
    last_end = np.full(count, np.iinfo(np.int64).min)
    reach = np.full(count, np.iinfo(np.int64).min)  # the union's latest end so far, per range
    busy = np.zeros(count, dtype=np.int64)
    range_ns = np.zeros(2 * count)  # per range and kind of op: memory operations, then kernels
    range_ops = np.zeros(2 * count, dtype=np.int64)
    for part in _time_chunks(start):
        position = lookup(position_of_id, range_of[part])
        rows = np.flatnonzero(measured[part] & (position >= 0))
        if not len(rows):
            continue
        group = position[rows]
        starts = start[part][rows]
        ends = starts + dur[part][rows]
        range_kind = group * 2 + is_kernel[part][rows]
        first = run_starts(range_kind)  # a range's ops come together: runs of one range and kind, far fewer than rows
        run_kind, run_rows = range_kind[first], np.diff(np.append(first, len(rows)))
        range_ns += np.bincount(run_kind, weights=run_sums(dur[part][rows], first), minlength=2 * count)
        chunk_ops = np.bincount(run_kind, weights=run_rows, minlength=2 * count).astype(np.int64)
        range_ops += chunk_ops
        held = chunk_ops[0::2] + chunk_ops[1::2] > 0
        chunk_first, chunk_last = span_per_group(group, starts, ends, count)
        first_start[held] = np.minimum(first_start[held], chunk_first[held])
        last_end[held] = np.maximum(last_end[held], chunk_last[held])
        busy += union_length_per_group(group, starts, ends, count, scratch=True, reach=reach)
    empty = range_ops[0::2] + range_ops[1::2] == 0
    first_start[empty], last_end[empty] = 0, 0
    return {"kernels": range_ops[1::2], "kernel_ns": range_ns[1::2], "memop_ns": range_ns[0::2],
            "first_start": first_start, "last_end": last_end, "busy": busy}


def _phase_index(phase: pd.Series) -> np.ndarray:
    """The position of each row's phase in :data:`PHASES` (``len(PHASES)`` for any other value),
    looked up by the column's codes."""
    codes, names = value_codes(phase)
    return code_positions(names, PHASES, len(PHASES))[codes]


def _per_phase(phase_index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Sums of ``values`` per phase of :data:`PHASES`, in that order (``phase_index``: see
    :func:`_phase_index`; rows of other phases left out). Integer values summed in float64 stay
    exact below 2**53."""
    return np.bincount(phase_index, weights=values, minlength=len(PHASES) + 1)[:len(PHASES)]


def shape_summaries(inputs: NsysInputs) -> dict[str, list[dict]]:
    """Per phase whose measured ranges run different shapes (:meth:`NsysInputs.shape_groups`), one
    record per shape group in order of first appearance: ``group``, ``passes``, the mean
    ``cpu_span_ms_per_pass`` and ``kernel_ms_per_pass``, and the first range's CPU span
    (``first_cpu_span_ms``, a cold pass when the group ran first). Empty when every phase is one shape."""
    shapes = {}
    kernel_ns_per_range = None
    for phase in PHASES:
        if not inputs.mixed_shapes(phase):
            continue
        if kernel_ns_per_range is None:
            kernels = inputs.measured_kernels(columns=("phase_range_id", "dur_ns"))
            kernel_ns_per_range = kernels.groupby("phase_range_id")["dur_ns"].sum()
        groups = inputs.shape_groups(phase)
        ranges = inputs.phase_ranges.set_index("range_id").loc[groups.index].sort_values("start_ns")
        kernel_ns = kernel_ns_per_range.reindex(ranges.index, fill_value=0)
        table = pd.DataFrame({"group": groups.loc[ranges.index], "cpu_ns": ranges["cpu_dur_ns"], "kernel_ns": kernel_ns})
        shapes[phase] = [
            {"group": str(group), "passes": len(rows), "cpu_span_ms_per_pass": rows["cpu_ns"].mean() / 1e6,
             "kernel_ms_per_pass": rows["kernel_ns"].mean() / 1e6, "first_cpu_span_ms": rows["cpu_ns"].iloc[0] / 1e6}
            for group, rows in table.groupby("group", sort=False)]
    return shapes


def phase_summaries(inputs: NsysInputs) -> dict[str, dict]:
    """The ``phases`` section of a trace summary: figures, categories and top kernels per phase."""
    table = phase_table(inputs)
    python_ms = inputs.run.python_ms
    summaries = {}
    for phase, row in table.iterrows():
        passes = int(row["passes"])
        summaries[phase] = {
            "passes": passes,
            "kernels_per_pass": float(row["kernels_per_pass"]),
            "kernel_ms_per_pass": float(row["kernel_ms_per_pass"]),
            "memop_ms_per_pass": float(row["memop_ms_per_pass"]),
            "gpu_span_ms_per_pass": float(row["gpu_span_ms_per_pass"]),
            "cpu_span_ms_per_pass": float(row["cpu_span_ms_per_pass"]),
            "busy_ms_per_pass": float(row["busy_ms_per_pass"]),
            "idle_ms_per_pass": float(row["idle_ms_per_pass"]),
            "python_ms_per_pass": python_ms.get(phase),
            "by_category_ms_per_pass": _nonzero(category_ms(inputs.kernel_groups((phase,)), passes)),
            "top_kernels": kernel_records(inputs.kernel_totals((phase,), passes), TOP_KERNELS_PER_PHASE),
        }
    return summaries


def overall_summary(inputs: NsysInputs) -> dict:
    """The ``overall`` section: every measured kernel per measured step (when the trace has no
    step ranges: the program's profiling window where it opened one, else the whole capture), by
    category and by kernel."""
    kernels = inputs.kernel_groups()
    steps = inputs.steps_averaged
    totals = inputs.kernel_totals(None, steps)
    return {
        "scope": "measured steps" if inputs.has_steps else
                 "profiling window" if inputs.structure.profiled is not None else "whole capture",
        "passes": inputs.measured_steps,
        "kernels_per_pass": int(kernels["calls"].sum()) / steps,
        "kernel_ms_per_pass": float(kernels["dur_ns"].sum()) / steps / 1e6,
        "distinct_kernels": len(totals),
        "tensor_core_share": _tensor_core_share(kernels),
        "by_category_ms_per_pass": _nonzero(category_ms(kernels, steps)),
        "top_kernels": kernel_records(totals, TOP_KERNELS_OVERALL),
    }


def unphased_notes(inputs: NsysInputs) -> list[str]:
    """A note when the measured steps' kernels that lie in no phase range take over
    :data:`UNPHASED_NOTE_SHARE` of the steps' kernel time (an update no optimizer label marks, a
    gradient sync in a range of its own): the phase figures leave them out, the overall ones hold
    them. Empty for a trace without steps or phases, whose whole capture is the measure."""
    if not inputs.has_steps or not inputs.measured_passes:
        return []
    groups = inputs.kernel_groups()
    total_ns = float(groups["dur_ns"].sum())
    outside = groups[(groups["phase"] == "").to_numpy()]
    outside_ns = float(outside["dur_ns"].sum())
    share = outside_ns / total_ns if total_ns else 0.0
    if share <= UNPHASED_NOTE_SHARE:
        return []
    steps = inputs.steps_averaged
    return [f"{share:.1%} of the measured steps' kernel time lies in no phase range ({outside_ns / steps / 1e6:.3g} of "
            f"{total_ns / steps / 1e6:.3g} ms per step, {_count_and_leader(int(outside['calls'].sum()), outside, steps)}): "
            "the phase figures leave it out, the overall figures hold it"]


def _count_and_leader(kernels: int, rows: pd.DataFrame, steps: int) -> str:
    """``N kernels; its largest category C, T ms``, per measured step, of kernels left out of some
    figures (``rows``: their ``category`` and ``dur_ns``, as kernel rows or groups)."""
    per_step = kernels / steps
    shown = f"{per_step:,.0f}" if per_step == int(per_step) else f"{per_step:,.1f}"
    leading = category_ms(rows, steps)
    return f"{shown} kernels; its largest category {leading.index[0]}, {float(leading.iloc[0]):.3g} ms"


def between_steps_notes(inputs: NsysInputs) -> list[str]:
    """A note when kernels that no step holds ran between the measured steps of their process
    (after a step's last phase and before the next step's first) and come to over
    :data:`UNPHASED_NOTE_SHARE` of the measured steps' kernel time: no figure holds them. It says
    which range, of those that hold no step, launched most of their time (:func:`_where_launched`)."""
    if not inputs.has_steps:
        return []
    ops = inputs.ops
    # the kernels in no step (few), as the labelling found them with what launched them
    unstepped, holders = inputs.unstepped_holders.index.to_numpy(), inputs.unstepped_holders.to_numpy(dtype=object)
    measured = inputs.measured_kernel_rows()
    if not len(unstepped) or not measured.any():
        return []
    pids, starts, durations = (ops[column].to_numpy() for column in ("pid", "start_ns", "dur_ns"))
    between = np.zeros(len(unstepped), dtype=bool)  # of the unstepped kernels
    for pid in np.unique(pids[unstepped]):
        in_process = measured & (pids == pid)
        if not in_process.any():
            continue
        # the process's first and last measured start, read in place (no copy of millions of starts)
        first = np.min(starts, where=in_process, initial=np.iinfo(np.int64).max)
        last = np.max(starts, where=in_process, initial=np.iinfo(np.int64).min)
        between |= (pids[unstepped] == pid) & (starts[unstepped] > first) & (starts[unstepped] < last)
    rows = unstepped[between]
    total_ns, between_ns = float(inputs.kernel_groups()["dur_ns"].sum()), float(durations[rows].sum())
    share = between_ns / total_ns if total_ns else 0.0
    if share <= UNPHASED_NOTE_SHARE:
        return []
    steps = inputs.steps_averaged
    leader = _count_and_leader(len(rows), ops.iloc[rows][["category", "dur_ns"]], steps)
    where = _where_launched(holders[between], durations[rows], inputs.structure.step_ranges,
                            bool(inputs.measured_passes.get("optimizer_step")))
    return [f"kernels in no step ran between the measured steps, {share:.1%} as much as the steps' own kernel time "
            f"({between_ns / steps / 1e6:.3g} ms per step, {leader}), {where}; no figure holds them"]


def _where_launched(holders: np.ndarray, durations: np.ndarray, step_ranges: bool, optimizer: bool) -> str:
    """Where the kernels between steps were launched: the range (of those holding no step) that
    launched the largest share of their time, with that share, or, when most lie in no such
    range, that they did (where the steps are no ranges of the trace: after the optimizer step
    that ends each step made from the phases, or, with no ``optimizer`` step found, after each
    step's backward, where an optimizer that no range or fused kernel marks runs)."""
    by_holder = pd.Series(durations).groupby(holders).sum().sort_values(ascending=False, kind="stable")
    holder, share = by_holder.index[0], float(by_holder.iloc[0] / by_holder.sum())
    if holder:
        return f"{share:.1%} of that time launched inside `{holder}`"
    where = f"{share:.1%} of that time launched outside any range (ranges around whole steps aside)"
    if step_ranges:
        return where
    if optimizer:
        return f"{where} (after the optimizer step that ends each step made from the phases)"
    return (f"{where} (after each step's backward, where an optimizer that no range names and no fused kernel "
            "marks, a loop over the parameters, would run)")


def device_summaries(inputs: NsysInputs) -> list[dict]:
    """The ``devices`` section: measured kernels per (process, GPU) pair, per measured step, so
    traces of several processes or GPUs are read one device at a time (in order of
    :func:`analysis.trace.nsys_inputs.device_keys`)."""
    kernels = inputs.kernel_groups()
    keys = device_keys(kernels["pid"].to_numpy(), kernels["device_id"].to_numpy())
    steps = inputs.steps_averaged
    busy = device_busy_ns(inputs)
    records = []
    for key in np.unique(keys):
        rows = kernels[keys == key]
        records.append({
            "pid": int(rows["pid"].iloc[0]),
            "device_id": int(rows["device_id"].iloc[0]),
            "kernels_per_pass": int(rows["calls"].sum()) / steps,
            "kernel_ms_per_pass": float(rows["dur_ns"].sum()) / steps / 1e6,
            "busy_ms_per_pass": float(busy.loc[key]) / steps / 1e6,
            "by_category_ms_per_pass": _nonzero(category_ms(rows, steps)),
            "top_kernel": kernel_records(kernel_totals(rows, steps), 1)[0],
        })
    return records


def device_busy_ns(inputs: NsysInputs) -> pd.Series:
    """Length of the union of the measured kernels' intervals per device (process, GPU), indexed
    by :func:`analysis.trace.nsys_inputs.device_keys` in ascending order (with 0 for a device
    of no measured kernel); the union is folded over chunks of the ops (:func:`_time_chunks`)."""
    ops = inputs.ops
    measured = inputs.measured_kernel_rows()
    pid, device_id = ops["pid"].to_numpy(), ops["device_id"].to_numpy()
    distinct = distinct_devices(pid, device_id)
    start, dur = ops["start_ns"].to_numpy(), ops["dur_ns"].to_numpy()
    busy = np.zeros(len(distinct), dtype=np.int64)
    reach = np.full(len(distinct), np.iinfo(np.int64).min)  # the union's latest end so far, per device
    for part in _time_chunks(start):
        rows = np.flatnonzero(measured[part])
        starts = start[part][rows]
        device = device_positions(distinct, pid[part][rows], device_id[part][rows])
        busy += union_length_per_group(device, starts, starts + dur[part][rows], len(distinct), scratch=True, reach=reach)
    return pd.Series(busy, index=distinct)


def _time_chunks(start: np.ndarray) -> list[slice]:
    """Slices of :data:`~analysis.core.attribution.CHUNK_OPS` rows of ops in order of ``start``
    (the labelled ops are), whose figures fold into running totals
    (:func:`~analysis.core.intervals.union_length_per_group` with ``reach``); one slice of them
    all when they are not in that order."""
    step = CHUNK_OPS if bool((start[1:] >= start[:-1]).all()) else max(len(start), 1)
    return [slice(low, low + step) for low in range(0, len(start), step)]


def kernel_records(totals: pd.DataFrame, limit: int) -> list[dict]:
    """The first ``limit`` rows of :func:`analysis.trace.nsys_inputs.kernel_totals` as dicts."""
    columns = ["kernel", "category", "tensor_core", "calls_per_pass", "ms_per_pass", "share"]
    top = totals.head(limit)
    return [dict(zip(columns, row)) for row in zip(*(top[column].tolist() for column in columns))]


def _tensor_core_share(kernels: pd.DataFrame) -> float | None:
    total = kernels["dur_ns"].sum()
    return float(kernels.loc[kernels["tensor_core"], "dur_ns"].sum() / total) if total else None


def _nonzero(per_category: pd.Series) -> dict[str, float]:
    return {str(k): float(v) for k, v in per_category.items() if v > 0}
