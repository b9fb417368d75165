"""The communication section of a trace's summary: per-rank figures, collectives, FSDP blocks
and skew between ranks (see docs/architecture.md, "Ranks and communication")."""
from __future__ import annotations

import pandas as pd

from analysis.communication import collective_figures, communication_columns
from analysis.fsdp import block_figures
from analysis.phases import LabelledOps
from analysis.ranks import rank_figures, rank_table, skew, step_passes


def communication_summary(labelled: LabelledOps, ranges: pd.DataFrame, marks: pd.DataFrame
                          ) -> dict:
    """``ranks``, ``collectives``, ``fsdp_blocks`` and ``skew`` of a labelled trace;
    ``ranges``/``marks`` are the trace's NVTX ranges and marks."""
    ops = labelled.ops
    kernels = communication_columns(ops[(ops["op_kind"] == "kernel").to_numpy()])
    ranks = rank_table(kernels, marks)
    return {
        "ranks": rank_figures(kernels, ranks, labelled, ranges),
        "collectives": collective_figures(kernels, ranks, step_passes(labelled, ranges)),
        "fsdp_blocks": block_figures(kernels, ranks, ranges, labelled),
        "skew": skew(kernels, ranks),
    }
