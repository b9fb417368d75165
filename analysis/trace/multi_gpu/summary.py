"""The communication section of a trace's summary: per-rank figures, collectives, FSDP blocks
and skew between ranks (see docs/architecture.md, "Ranks and communication")."""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.core.classify import is_communication
from analysis.core.codes import per_name, value_codes
from analysis.core.phases import LabelledOps
from analysis.load import Trace
from analysis.load.tables import op_ends, ops_within, with_columns
from analysis.trace.multi_gpu.communication import collective_columns, collective_figures, collective_of, exposed_ns
from analysis.trace.multi_gpu.fsdp import ALL_GATHER, block_figures, is_layer_name, layer_blocks
from analysis.trace.multi_gpu.nccl_payloads import kernel_bytes
from analysis.trace.multi_gpu.rank_timeline import rank_timeline
from analysis.trace.multi_gpu.ranks import (
    config_values,
    jobs_in_turn,
    kernel_runs,
    launcher_source,
    rank_figures,
    rank_notes,
    rank_table,
    skew,
    step_passes,
)
from analysis.trace.summary_schema import CommunicationRecord

# The columns of the labelled ops the communication figures read: those of every trace, then the
# streams and launches, read only between ranks or around NCCL kernels (the ranks' timeline, FSDP
# blocks, message sizes).
RANK_COLUMNS = ["start_ns", "dur_ns", "pid", "device_id", "demangled_name", "measured", "step", "phase",
                "phase_range_id"]
LAUNCH_COLUMNS = ["stream_id", "launch_start_ns", "launch_tid"]
COLUMNS = RANK_COLUMNS + LAUNCH_COLUMNS
# The columns of LAUNCH_COLUMNS that nothing but the figures between ranks reads.
LAUNCH_ONLY = ("launch_start_ns", "launch_tid")


def launches_read(ranges: pd.DataFrame, *tables: pd.DataFrame) -> str:
    """Whose :data:`LAUNCH_ONLY` columns :func:`communication_summary` reads, of the ops made of
    ``tables`` (the labelled ops, or the kernel and memop tables they are made of) in a trace of
    these ``ranges``: ``"every"`` op's where it may find FSDP blocks (some kernel all-gathers and
    some range is named ``layer_<i>``: a block's stream is read whole), the ``"communication"``
    kernels' where some kernel's name communicates (their message sizes), else ``"none"``. At
    millions of ops, every op's are 12 bytes an op."""
    names = [table["demangled_name"] for table in tables if "demangled_name" in table]
    distinct = {str(name) for column in names for name in (
        column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else pd.unique(column.to_numpy()))}
    communicating = [name for name in distinct if is_communication(name)]
    if not communicating:
        return "none"
    if any(collective_of(name) == ALL_GATHER for name in communicating) and \
            per_name(ranges["name"], is_layer_name, dtype=bool).any():
        return "every"
    return "communication"


def communication_summary(trace: Trace, labelled: LabelledOps) -> CommunicationRecord:
    """``world_size``, ``ranks``, ``collectives``, ``fsdp_blocks``, ``skew`` and ``timeline`` of
    a labelled trace (``labelled = label_ops(trace)``; the trace's kernel table may be emptied already).

    The per-rank figures and the skew between ranks read runs of the labelled ops where they are
    (:func:`kernel_runs`), and the ranks' timeline the kernels of one step's window. Only the
    figures of collectives read a copy of kernel rows, those that communicate; only the FSDP
    blocks, which need every kernel of a rank's stream, a copy of every kernel row, made where
    some kernel all-gathers. With one rank and no communication kernel, each figure between
    ranks is empty whatever the rows, so they read none (a trace of one GPU without NCCL kernels
    copies nothing). The communicating rows take the launch columns (:data:`LAUNCH_ONLY`) from
    ``labelled.launches`` where the labelling kept theirs alone (:func:`launches_read`); else
    the columns leave ``labelled.ops`` once those rows are copied with them, unless the FSDP
    blocks read every kernel's."""
    is_kernel = (labelled.ops["op_kind"] == "kernel").to_numpy()
    ops = collective_columns(pd.DataFrame({column: labelled.ops[column] for column in COLUMNS
                                           if column in labelled.ops}, copy=False), is_kernel)
    communicates = ops["is_communication"].to_numpy()
    # The launch columns are read only with the communication kernels' rows (message sizes, the
    # all-gathers' order in FSDP blocks), copied here: from the ops where every op keeps them (the
    # FSDP blocks may copy every kernel row), else from what the labelling kept of them.
    communicating = kernel_rows(ops, communicates)
    if labelled.launches is not None:
        launches = labelled.launches.loc[np.flatnonzero(communicates)]
        communicating = with_columns(communicating, **{column: launches[column].to_numpy() for column in launches})
    blocks = fsdp_blocks(communicating, trace.ranges, labelled)
    if blocks is None and any(column in ops for column in LAUNCH_ONLY):
        ops = ops.drop(columns=list(LAUNCH_ONLY))
        labelled.ops = labelled.ops.drop(columns=[column for column in LAUNCH_ONLY if column in labelled.ops])
    exposed = exposed_ns(ops, communicates, is_kernel)
    # Without figures between ranks the launch columns may have been dropped (launches_read): then
    # no kernel communicates, and the figures below get none of the rows, with empty columns of every name.
    communicating = with_ends(with_columns(communicating, exposed_ns=exposed, **{
        column: np.zeros(0, np.int64) for column in LAUNCH_ONLY if column not in communicating}))
    runs = kernel_runs(ops, is_kernel, exposed)
    del exposed
    ranks = rank_table(runs, trace.marks, trace.notes, trace.launcher_rank)
    communicating = with_columns(communicating, bytes=message_bytes(trace, communicating))
    marked = set(config_values(trace.marks, "world_size").values())
    sizes = {size for size in marked if size >= 1}
    if marked - sizes:
        trace.notes.append("a config mark gives world_size 0, which no run has; the ranks in the trace are counted instead")
    if len(sizes) == 1:
        world_size, world_size_source = sizes.pop(), "config mark"
    elif len(ranks) == 1 and trace.launcher_rank:  # one rank of a job, under its own nsys
        world_size, world_size_source = trace.launcher_rank["world_size"], launcher_source(trace.launcher_rank)
    else:
        world_size, world_size_source = len(ranks), "ranks in the trace"
    steps = step_passes(labelled, trace.ranges)
    records = rank_figures(runs, ranks, labelled, steps)
    trace.notes.extend(rank_notes(records, world_size, world_size_source, trace.launcher_rank, labelled.split_models))
    trace.notes.extend(jobs_in_turn(runs))
    step_names = value_codes(ops["step"])[1]
    return {
        "world_size": world_size,
        "world_size_source": world_size_source,
        "ranks": records,
        "collectives": collective_figures(communicating, ranks, steps, world_size),
        "fsdp_blocks": fsdp_figures(ops, is_kernel, blocks, ranks),
        "skew": skew(runs, step_names, ranks),
        "timeline": rank_timeline(runs, step_names, lambda start, end: kernels_within(ops, is_kernel, start, end),
                                  ranks, labelled),
    }


def fsdp_blocks(communicating: pd.DataFrame, ranges: pd.DataFrame, labelled: LabelledOps) -> pd.DataFrame | None:
    """The blocks the FSDP figures read (:func:`layer_blocks`) where some of the ``communicating``
    kernels all-gathers; else None, and no FSDP figure is made."""
    if not (communicating["collective"] == ALL_GATHER).any():
        return None
    blocks = layer_blocks(ranges, labelled)
    return blocks if len(blocks) else None


def fsdp_figures(ops: pd.DataFrame, is_kernel: np.ndarray, blocks: pd.DataFrame | None, ranks: pd.DataFrame) -> list[dict]:
    """:func:`block_figures` of the kernels (``is_kernel``) of ``ops`` and the ``blocks``
    (:func:`fsdp_blocks`); ``[]`` without blocks, where no copy of the kernel rows is made."""
    return [] if blocks is None else block_figures(with_ends(kernel_rows(ops, is_kernel)), ranks, blocks)


def with_ends(kernels: pd.DataFrame) -> pd.DataFrame:
    """``kernels`` with ``end_ns`` (:func:`analysis.load.tables.op_ends`), which the figures between
    ranks read: the kernels' copies have it, the labelled ops do not."""
    return with_columns(kernels, end_ns=op_ends(kernels))


def kernel_rows(ops: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """The ``rows`` (a mask, or positions) of ``ops``, taken column by column; nothing is copied
    when a mask takes every row."""
    if rows.dtype == bool and rows.all():
        return ops
    return pd.DataFrame({column: ops[column].array[rows] for column in ops.columns}, copy=False)


def kernels_within(ops: pd.DataFrame, is_kernel: np.ndarray, start: int, end: int) -> pd.DataFrame:
    """The kernels (``is_kernel``) of ``ops``, which are in time order, that start at ``start``
    or later and end at ``end`` or earlier (:func:`analysis.load.tables.ops_within`), with
    :func:`with_ends`: the rows of that window alone are read."""
    rows = ops_within(ops, start, end)
    return with_ends(kernel_rows(ops, rows[is_kernel[rows]]))


def message_bytes(trace: Trace, kernels: pd.DataFrame) -> np.ndarray:
    """:func:`analysis.trace.multi_gpu.nccl_payloads.kernel_bytes` of ``kernels`` (with ``collective_columns`` and ``exposed_ns``)
    and the trace's NCCL calls (``trace.nccl_calls``); every kernel's bytes are -1, unknown, when
    none communicates."""
    if not kernels["is_communication"].any():  # read only for communication kernels: one byte each does
        return np.full(len(kernels), -1, dtype=np.int8)
    calls = trace.nccl_calls
    return kernel_bytes(kernels, calls.assign(collective=calls["call"].map(collective_of).astype(object)))
