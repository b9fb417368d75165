"""Per-rank figures of a trace of one or more processes: a rank is one (process, GPU) pair.

Nothing is summed across ranks as if they were one pass: each rank's phase figures are divided
by that rank's own number of measured passes (the measured phase ranges of its process), and
its whole-step figures (phase ``step``) by its process's measured ``step_<i>`` ranges (1 when
the trace has no step ranges: the whole capture is one pass).

The rank number is the ``rank`` key of the process's runner ``config`` mark when every process
has one; else, for a trace of one rank that ran under its own nsys, the rank its launcher gave it
(:mod:`analysis.load.launcher`); otherwise ranks are numbered 0, 1, ... in order of GPU (device
id), then process id.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from analysis.core.codes import code_positions, distinct, row_starts, run_maxima, run_sums, value_codes
from analysis.core.intervals import span_per_group
from analysis.core.phases import PHASES, LabelledOps
from analysis.load.tables import op_ends
from analysis.trace.nsys_inputs import device_positions, distinct_devices
from cs336_profile.contract import CONFIG_EVENT, MARK_DOMAIN

WHOLE_STEP = "step"  # the phase key of a rank's figures over its whole measured steps
# The key of the measured kernels launched outside every phase range (e.g. a gradient
# synchronization between backward and the optimizer step), per measured step.
OUTSIDE_PHASES = "outside_phases"
NS_PER_MS = 1e6


def config_values(marks: pd.DataFrame, key: str) -> dict[int, int]:
    """Process id -> the integer ``key`` of its runner ``config`` mark, where it has one that is
    not negative (a rank or a world size never is)."""
    ours = marks[marks["domain"] == MARK_DOMAIN]
    values = {}
    for pid, message in zip(ours["pid"], ours["name"]):
        try:
            event = json.loads(message)
        except (TypeError, ValueError):
            continue
        value = event.get(key) if isinstance(event, dict) and event.get("event") == CONFIG_EVENT \
            else None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            values[int(pid)] = value
    return values


def device_pairs(pid: np.ndarray, device_id: np.ndarray) -> list[tuple[int, int]]:
    """The distinct (process id, device id) pairs of rows, sorted by device id, then process id
    (one pass over the devices per process: a trace has a few processes, millions of rows)."""
    pids = pd.unique(pid)
    pairs = [(int(p), int(d)) for p in pids for d in pd.unique(device_id if len(pids) == 1 else device_id[pid == p])]
    return sorted(pairs, key=lambda pair: (pair[1], pair[0]))


def rank_table(runs: dict[str, np.ndarray], marks: pd.DataFrame, notes: list[str] | None = None,
               launcher_rank: dict | None = None) -> pd.DataFrame:
    """One row per (process, GPU) that ran measured kernels (any kernels, when none is measured;
    ``runs`` is :func:`kernel_runs` of the kernels):
    ``pid, device_id, rank, rank_source`` (``config mark``, ``launcher (RANK/WORLD_SIZE)`` or
    ``device order``), sorted by rank.
    A process's stray kernels on another GPU outside the measured steps (set-up before it chose
    its device) make no rank. The config marks' ranks are used when every rank has one and no two
    are equal; else the launcher's rank (``launcher_rank``: the trace's, from the environment nsys
    ran in) when the trace holds one rank; otherwise ranks follow the device order, and ``notes``
    says why when some marks gave ranks."""
    measured = runs["measured"]
    rows = measured if measured.any() else slice(None)
    found = device_pairs(runs["pid"][rows], runs["device_id"][rows])
    pairs = pd.DataFrame(found or None, columns=["pid", "device_id"], dtype=np.int64)
    marked = config_values(marks, "rank")
    given = pairs["pid"].map(marked)
    if len(pairs) and given.notna().all() and given.is_unique:
        pairs = pairs.assign(rank=given.astype(np.int64), rank_source="config mark")
    elif len(pairs) == 1 and launcher_rank:
        pairs = pairs.assign(rank=np.int64(launcher_rank["rank"]), rank_source=launcher_source(launcher_rank))
    else:
        if marked and len(pairs) > 1 and notes is not None:
            why = "give the same rank to several of them" if given.notna().all() else "lack a usable rank for some"
            notes.append(f"the config marks of the trace's {len(pairs)} ranks {why} "
                         f"({', '.join(map(str, given.dropna().astype(int)))}); ranks are numbered by GPU instead")
        pairs = pairs.assign(rank=np.arange(len(pairs), dtype=np.int64), rank_source="device order")
    return pairs.sort_values(["rank", "device_id", "pid"], kind="stable").reset_index(drop=True)


def launcher_source(launcher_rank: dict) -> str:
    """How a rank or world size read from a launcher's variables is sourced, e.g. ``launcher (RANK/WORLD_SIZE)``."""
    return f"launcher ({launcher_rank['variables']})"


def rank_notes(records: list[dict], world_size: int, world_size_source: str, launcher_rank: dict | None = None,
               split_models: tuple[int, ...] = ()) -> list[str]:
    """Notes on ranks that do not add up: fewer ranks in the trace than the config marks'
    ``world_size``, one rank of a larger job whose world size its launcher gave (``launcher_rank``:
    the trace's), ranks without a measured step (no per-step figure), and a process that drives
    several GPUs: a replica per GPU (a pass per GPU, the overall figures every GPU's), or one of
    ``split_models`` (:attr:`analysis.core.phases.LabelledOps.split_models`: a pass over every GPU)."""
    notes = []
    if world_size_source == "config mark" and len(records) != world_size:
        notes.append(f"the config marks say world_size {world_size} but the trace holds {len(records)} ranks; "
                     "figures across ranks cover only those in the trace")
    if launcher_rank and world_size_source == launcher_source(launcher_rank) and len(records) < world_size:
        held = ", ".join(str(record["rank"]) for record in records)
        notes.append(f"the trace holds rank {held} of {world_size} ({launcher_rank['variables']} in the environment nsys ran in: "
                     "each rank ran under its own nsys); the other ranks are in their own traces, and figures "
                     "across ranks cover only this one")
    idle = [str(record["rank"]) for record in records if not record["passes"]]
    if idle and len(idle) < len(records):
        notes.append(f"rank {', '.join(idle)} has no measured step range; its per-step figures are left out")
    notes.extend(_unlike_processes(records))
    devices_of: dict[int, list[int]] = {}
    for record in records:
        devices_of.setdefault(record["pid"], []).append(record["device_id"])
    for pid, devices in devices_of.items():
        gpus = f"process {pid} launches on {len(devices)} GPUs ({', '.join(map(str, sorted(devices)))}"
        if len(devices) > 1 and pid in split_models:
            notes.append(f"{gpus}), its forward passes from one thread onto each in turn: one model split across them "
                         "(model parallelism), so a pass holds every GPU's work; the per-rank figures are per GPU")
        elif len(devices) > 1:
            notes.append(f"{gpus}: one process, a replica per GPU, as torch.nn.DataParallel runs): a phase range whose "
                         "kernels ran on several GPUs is a pass per GPU, so per-pass figures are per GPU (rank); the "
                         "overall figures per step hold every GPU's")
    return notes


# Processes whose measured steps hold this many times the kernels of another's run different work,
# not replicas of one job (ranks of one data- or tensor-parallel job run alike steps).
UNLIKE_PROCESSES_FACTOR = 1.5


def _unlike_processes(records: list[dict]) -> list[str]:
    """A note where the processes' measured steps hold kernel counts :data:`UNLIKE_PROCESSES_FACTOR`
    or more apart (two programs under one nsys, pipeline stages): the phases' per-pass figures pool
    every process's passes, which then mixes different work; each process's own figures stay right."""
    per_step: dict[int, float] = {}
    for record in records:
        step = record["phases"].get("step")
        if step and step["passes"]:
            per_step[record["pid"]] = per_step.get(record["pid"], 0.0) + step["kernels_per_pass"]
    if len(per_step) < 2 or max(per_step.values()) < UNLIKE_PROCESSES_FACTOR * min(per_step.values()):
        return []
    counts = [f"{count:,.0f}{' kernels' if not i else ''} in process {pid}" for i, (pid, count) in enumerate(per_step.items())]
    listed = ", ".join(counts[:-1]) + f" and {counts[-1]}"
    return [f"the processes run different work, not one job's replicas: a measured step holds {listed}; the phases' "
            "per-pass figures pool every process's passes, so read each process's own figures (per rank)"]


def jobs_in_turn(runs: dict[str, np.ndarray]) -> list[str]:
    """A note where the processes' kernels (first to last, from :func:`kernel_runs`' ``runs``)
    fall in two or more windows of time that do not overlap, each window's processes running at
    once (a script that starts one job after another, each with processes of its own, under one
    nsys: DDP variants, a pair of ranks each): the phases' per-pass figures pool every job's
    passes, and the ranks are numbered across the jobs. Processes that run side by side (the ranks
    of one job, two programs at once) are one."""
    pids = runs["pid"]
    if not len(pids) or pids.min() == pids.max():
        return []
    spans = pd.DataFrame({"pid": pids, "start": runs["start_ns"], "end": runs["end_ns"]}) \
        .groupby("pid").agg(start=("start", "min"), end=("end", "max")).sort_values("start")
    jobs: list[list[int]] = []
    latest_end = np.iinfo(np.int64).min
    for pid, start, end in spans.itertuples():
        if start >= latest_end:
            jobs.append([])
        jobs[-1].append(int(pid))
        latest_end = max(latest_end, int(end))
    if len(jobs) < 2:
        return []
    listed = "; then ".join(", ".join(map(str, sorted(job))) for job in jobs)
    return [f"the processes run in {len(jobs)} groups one after another, each group's at once (processes {listed}): "
            "separate jobs of one capture; the phases' per-pass figures pool every job's passes and the ranks are "
            "numbered across the jobs, so read each process's own figures (per rank)"]


def step_passes(labelled: LabelledOps, ranges: pd.DataFrame) -> dict[int, int]:
    """Process id -> number of measured steps (every process: 1 without steps)."""
    pids = pd.unique(np.concatenate([distinct(labelled.ops["pid"].to_numpy()), distinct(ranges["pid"].to_numpy())]))
    if not labelled.has_steps:
        return {int(pid): 1 for pid in pids}
    steps = labelled.structure.steps
    counts = steps[steps["measured"].to_numpy(dtype=bool)].groupby("pid").size()
    return {int(pid): int(counts.get(pid, 0)) for pid in pids}



def phase_passes(labelled: LabelledOps) -> dict[tuple[int, int, str], int]:
    """(process id, GPU, phase) -> number of measured instances of the phase in that process's
    ranges of that GPU; GPU -1 for ranges of every GPU of their process (a process per GPU), the
    others a range's share on one GPU of a process that drives several
    (:func:`analysis.core.phases.label_ops`)."""
    measured = labelled.phase_ranges[labelled.phase_ranges["measured"]]
    return {(int(pid), int(device), str(phase)): int(n)
            for (pid, device, phase), n in measured.groupby(["pid", "device_id", "phase"]).size().items()}


# The kernel columns that tell pass figures' rows apart: consecutive kernels alike in all of them
# are one run, and the figures read runs (see :func:`kernel_runs`).
RUN_KEYS = ("measured", "pid", "device_id", "phase", "phase_range_id", "step")
# Ops read at a time by :func:`kernel_runs`: a chunk's copied keys (about 40 B an op) stay a few MiB.
RUN_CHUNK_OPS = 1 << 18
# The phases a run's ``phase`` numbers: its position here (-1 for any other value); "" is outside
# every phase range.
RUN_PHASES = (*PHASES, "")


def kernel_runs(ops: pd.DataFrame, is_kernel: np.ndarray, exposed: np.ndarray) -> dict[str, np.ndarray]:
    """Runs of consecutive kernels of one (process, GPU) alike in :data:`RUN_KEYS` (``phase`` as
    its position in :data:`RUN_PHASES`, ``step`` as an integer code, one per name): per run, those
    keys and ``kernels`` (how many), ``dur_ns``, ``communication_ns`` (the communication kernels'
    ``dur_ns``) and ``exposed_ns`` (summed), ``start_ns`` (the first start) and ``end_ns`` (the
    last end). ``ops`` are labelled ops with
    :func:`~analysis.trace.multi_gpu.communication.collective_columns`, ``is_kernel`` marks the
    kernels among them (the other ops are passed over), and ``exposed`` holds the exposed ns of
    the communication kernels (``is_communication``), in their order
    (:func:`~analysis.trace.multi_gpu.communication.exposed_ns`).

    The labelled ops are in time order, so a phase range's kernels make a run or a few, and the
    figures read hundreds of runs where there are millions of kernels; the sums are the kernels'
    sums (a run cut in two sums to the same, and every figure reads sums, first starts and last
    ends). The ops are read :data:`RUN_CHUNK_OPS` rows at a time and, on a trace of several
    (process, GPU)s, whose kernels interleave in time, each one's rows of a chunk in turn: a run
    is a stretch of one GPU's kernels, and only a chunk's rows are ever copied. The runs come
    chunk by chunk, each chunk's GPU by GPU."""
    columns = {column: value_codes(ops[column])[0] if column in ("phase", "step") else ops[column].to_numpy()
               for column in (*RUN_KEYS, "dur_ns", "start_ns", "is_communication")}
    communicating = np.flatnonzero(columns["is_communication"])
    devices = distinct_devices(columns["pid"], columns["device_id"])
    parts = []
    for low in range(0, max(len(ops), 1), RUN_CHUNK_OPS):
        chunk = slice(low, low + RUN_CHUNK_OPS)
        kernels = is_kernel[chunk]
        numbers = device_positions(devices, columns["pid"][chunk], columns["device_id"][chunk])
        for number in range(max(len(devices), 1)):
            rows = low + np.flatnonzero(kernels & (numbers == number) if len(devices) > 1 else kernels)
            parts.append(_chunk_runs(columns, ops, rows, communicating, exposed))
    runs = {}
    for column in list(parts[0]):  # a column at a time, its parts let go once joined
        runs[column] = np.concatenate([part.pop(column) for part in parts])
    runs["phase"] = code_positions(value_codes(ops["phase"])[1], RUN_PHASES, -1)[runs["phase"]]
    return runs


def _chunk_runs(columns: dict[str, np.ndarray], ops: pd.DataFrame, rows: np.ndarray, communicating: np.ndarray,
                exposed: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`kernel_runs` of the kernels ``rows`` (positions in order) alone, ``phase`` still as
    the ops' codes; ``columns``: the ops' columns that the runs read; ``communicating``: the rows
    of the communication kernels (``is_communication``), whose exposed ns ``exposed`` holds."""
    keys = [columns[column][rows] for column in RUN_KEYS]
    count = len(rows)
    first = row_starts(keys)
    runs = {column: values[first] for column, values in zip(RUN_KEYS, keys)}
    runs["kernels"] = np.diff(np.append(first, count))
    durations = columns["dur_ns"][rows]
    communicates = columns["is_communication"][rows]
    chunk_exposed = np.zeros(count, dtype=np.int64)
    chunk_exposed[communicates] = exposed[np.searchsorted(communicating, rows[communicates])]
    # in int64: a run's summed ns may pass the 32 bits of a column of durations
    runs["dur_ns"] = run_sums(durations, first)
    runs["communication_ns"] = run_sums(durations, first, where=communicates)
    runs["exposed_ns"] = run_sums(chunk_exposed, first)
    runs["start_ns"] = np.minimum.reduceat(columns["start_ns"][rows], first) if count else columns["start_ns"][:0]
    runs["end_ns"] = run_maxima(first, count, lambda part: op_ends(ops, rows[part]))  # the ops hold no end
    return runs


def pass_figures(runs: dict[str, np.ndarray], rows: np.ndarray, passes: int, instance: np.ndarray) -> dict:
    """Figures per pass of some measured kernels of one rank: those of the runs ``rows`` (a
    mask of :func:`kernel_runs`); ``instance`` (one value per run: ``phase_range_id`` or the
    step code) tells the passes apart, for the GPU span of each pass: first kernel start to last
    kernel end. ``gpu_span_ms_spread`` is the longest minus the shortest span (0 with one pass)."""
    dur = runs["dur_ns"][rows]
    comm_ns = runs["communication_ns"][rows].sum()
    exposed = runs["exposed_ns"][rows].sum()
    spans = _instance_spans(instance[rows], runs["start_ns"][rows], runs["end_ns"][rows])
    return {
        "kernels_per_pass": int(runs["kernels"][rows].sum()) / passes,
        "kernel_ms_per_pass": dur.sum() / passes / NS_PER_MS,
        "gpu_span_ms_per_pass": spans.sum() / passes / NS_PER_MS,
        "gpu_span_ms_spread": (spans.max() - spans.min()) / NS_PER_MS if len(spans) else 0.0,
        "communication_ms_per_pass": comm_ns / passes / NS_PER_MS,
        "exposed_communication_ms_per_pass": exposed / passes / NS_PER_MS,
        "overlapped_communication_ms_per_pass": (comm_ns - exposed) / passes / NS_PER_MS,
    }


def _instance_spans(instance: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """First start to last end of the kernels of each instance present in ``instance`` (one id
    per run: a phase range's row or a step's code, small integers that number the instances as
    they are, with no hashing)."""
    if not len(instance):
        return np.zeros(0, dtype=np.int64)
    low = int(instance.min())
    group = instance - low if low else instance
    count = int(group.max()) + 1
    first, last = span_per_group(group, starts, ends, count)
    return (last - first)[np.bincount(group, minlength=count) > 0]


def rank_figures(runs: dict[str, np.ndarray], ranks: pd.DataFrame, labelled: LabelledOps,
                 steps: dict[int, int]) -> list[dict]:
    """The ``ranks`` records: ``pid, device_id, rank, rank_source, passes`` and ``phases``
    {phase: :func:`pass_figures`} for each phase the rank's process measured, then, per
    measured step, ``outside_phases`` (when measured kernels were launched outside every phase
    range) and ``step``.

    ``runs`` is :func:`kernel_runs` of ``labelled.ops`` with
    :func:`~analysis.trace.multi_gpu.communication.collective_columns`; ``steps`` is :func:`step_passes`."""
    phases = phase_passes(labelled)
    records = []
    for rank in ranks.itertuples(index=False):
        # one rank owns every measured kernel: its runs need no comparison
        mine = runs["measured"] if len(ranks) == 1 else \
            runs["measured"] & (runs["pid"] == rank.pid) & (runs["device_id"] == rank.device_id)
        figures = {}
        for name in PHASES:
            passes = phases.get((rank.pid, -1, name), 0) + phases.get((rank.pid, rank.device_id, name), 0)
            if passes:
                rows = mine & (runs["phase"] == RUN_PHASES.index(name))
                figures[name] = {"passes": passes, **pass_figures(runs, rows, passes, runs["phase_range_id"])}
        passes = steps.get(rank.pid, 0)
        outside = mine & (runs["phase"] == RUN_PHASES.index(""))
        if passes and outside.any() and runs["kernels"][outside].sum() < runs["kernels"][mine].sum():
            figures[OUTSIDE_PHASES] = {"passes": passes, **pass_figures(runs, outside, passes, runs["step"])}
        if passes:
            figures[WHOLE_STEP] = {"passes": passes, **pass_figures(runs, mine, passes, runs["step"])}
        records.append({"pid": int(rank.pid), "device_id": int(rank.device_id),
                        "rank": int(rank.rank), "rank_source": rank.rank_source,
                        "passes": passes, "phases": figures})
    return records


def skew(runs: dict[str, np.ndarray], steps: pd.Index, ranks: pd.DataFrame) -> dict:
    """How far the ranks drift apart, per measured step (GPU time of each rank's kernels), from
    the kernels' runs (:func:`kernel_runs`, whose ``step`` codes number ``steps``): a first start
    and last end over runs are those over their kernels.

    ``steps``: one record per step name that at least two ranks ran, in order of the number the
    name ends in (then of the name): ``step``, ``ranks``, ``start_spread_ms`` / ``end_spread_ms``
    (latest minus earliest first kernel start / last kernel end among the ranks),
    ``duration_spread_ms`` (longest minus shortest first-start to last-end span) and
    ``phase_duration_spread_ms`` {phase: the same for each phase's span}.
    ``max_start_spread_ms``, ``max_end_spread_ms``: the largest over the steps (null when none).
    """
    if len(ranks) < 2:
        return {"steps": [], "max_start_spread_ms": None, "max_end_spread_ms": None}
    names = [str(name) for name in steps]
    rank = np.full(len(runs["pid"]), -1, dtype=np.int64)  # each run's rank's position (-1: none)
    for position, (pid, device) in enumerate(zip(ranks["pid"], ranks["device_id"])):
        rank[(runs["pid"] == pid) & (runs["device_id"] == device)] = position
    step, phase = runs["step"].astype(np.int64), runs["phase"].astype(np.int64)
    kept = runs["measured"] & (rank >= 0) & np.array([bool(name) for name in names] + [False])[step]
    first, last = _group_spans(step[kept] * len(ranks) + rank[kept], runs, kept, len(names) * len(ranks))
    in_phase = kept & (phase >= 0) & (phase < len(PHASES))
    phase_first, phase_last = _group_spans((step[in_phase] * len(PHASES) + phase[in_phase]) * len(ranks) + rank[in_phase],
                                           runs, in_phase, len(names) * len(PHASES) * len(ranks))
    first, last = first.reshape(len(names), len(ranks)), last.reshape(len(names), len(ranks))
    phase_first = phase_first.reshape(len(names), len(PHASES), len(ranks))
    phase_last = phase_last.reshape(len(names), len(PHASES), len(ranks))
    records = []
    for code in sorted(range(len(names)), key=lambda code: _step_order(names[code])):
        ran = first[code] <= last[code]  # the ranks with kernels in the step
        if ran.sum() < 2:
            continue
        phase_spread = {}
        for position, phase in enumerate(PHASES):
            phase_ran = phase_first[code, position] <= phase_last[code, position]
            if phase_ran.sum() >= 2:
                phase_spread[phase] = _spread(phase_last[code, position][phase_ran] - phase_first[code, position][phase_ran])
        records.append({"step": names[code], "ranks": int(ran.sum()),
                        "start_spread_ms": _spread(first[code][ran]), "end_spread_ms": _spread(last[code][ran]),
                        "duration_spread_ms": _spread(last[code][ran] - first[code][ran]),
                        "phase_duration_spread_ms": phase_spread})
    return {"steps": records,
            "max_start_spread_ms": max((s["start_spread_ms"] for s in records), default=None),
            "max_end_spread_ms": max((s["end_spread_ms"] for s in records), default=None)}


def _group_spans(group: np.ndarray, runs: dict[str, np.ndarray], rows: np.ndarray, groups: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The first start and last end of the runs ``rows`` (a mask) per ``group`` number (one per
    row of the mask, 0 to ``groups`` - 1); a group without runs has a first start above its last end."""
    first = np.full(groups, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(groups, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(first, group, runs["start_ns"][rows])
    np.maximum.at(last, group, runs["end_ns"][rows])
    return first, last


def _step_order(name: str) -> tuple:
    """A step's place among the steps: by the number its name ends in (names without one last),
    then by name."""
    digits = re.search(r"(\d+)$", name)
    return (digits is None, float(digits.group(1)) if digits else 0.0, name)


def _spread(values: np.ndarray) -> float:
    """Largest minus smallest, in ms."""
    return float(values.max() - values.min()) / NS_PER_MS
