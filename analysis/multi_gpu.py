"""The communication section of a trace's summary: per-rank figures, collectives, FSDP blocks
and skew between ranks (see docs/architecture.md, "Ranks and communication")."""
from __future__ import annotations

from analysis.communication import collective_figures, collective_of, communication_columns
from analysis.fsdp import block_figures
from analysis.load import Trace
from analysis.nccl_payloads import kernel_bytes, read_message_sizes
from analysis.phases import LabelledOps
from analysis.ranks import config_values, rank_figures, rank_table, skew, step_passes

# The columns of the labelled ops the communication figures read.
COLUMNS = ["start_ns", "end_ns", "dur_ns", "pid", "device_id", "stream_id", "launch_start_ns",
           "launch_tid", "demangled_name", "measured", "step", "phase", "phase_range_id"]


def communication_summary(trace: Trace, labelled: LabelledOps) -> dict:
    """``world_size``, ``ranks``, ``collectives``, ``fsdp_blocks`` and ``skew`` of a labelled
    trace (``labelled = label_ops(trace)``; the trace's kernel table may be emptied already)."""
    ops = labelled.ops
    kernels = communication_columns(ops.loc[(ops["op_kind"] == "kernel").to_numpy(), COLUMNS])
    calls = read_message_sizes(trace.path)
    calls = calls.assign(collective=calls["call"].map(collective_of).astype(object))
    kernels = kernels.assign(bytes=kernel_bytes(kernels, calls))
    ranks = rank_table(kernels, trace.marks)
    sizes = set(config_values(trace.marks, "world_size").values())
    if len(sizes) == 1:
        world_size, world_size_source = sizes.pop(), "config mark"
    else:
        world_size, world_size_source = len(ranks), "ranks in the trace"
    return {
        "world_size": world_size,
        "world_size_source": world_size_source,
        "ranks": rank_figures(kernels, ranks, labelled, trace.ranges),
        "collectives": collective_figures(kernels, ranks, step_passes(labelled, trace.ranges),
                                          world_size),
        "fsdp_blocks": block_figures(kernels, ranks, trace.ranges, labelled),
        "skew": skew(kernels, ranks),
    }
