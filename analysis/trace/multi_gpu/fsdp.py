"""Fully sharded training: did each block's all-gather finish before the block needed it?

Blocks are the NVTX ranges ``layer_<i>`` (the runner's ``--layer-ranges``) inside measured
``forward`` ranges. For each rank and forward pass:

* **The block's compute** is the kernels launched inside its ``layer_<i>`` range that run on the
  rank's compute stream — the stream with the most non-communication kernel time in its forward
  passes. Copies FSDP makes on its side streams (the all-gather copy-in) are not the block's
  compute. The compute stream is *ready* for the block when its previous kernel ends.
* **The block's all-gather.** Each fully sharded unit all-gathers its parameters once per forward
  pass, in the order the units run their pre-forward hooks, whether the gather was prefetched
  (launched during the previous block) or not: prefetching moves a launch earlier, never past
  another unit's. The root module's unit runs first. So in a forward pass with *A* all-gather
  kernels and *L* blocks, block *k* (k-th by start) owns all-gather *A − L + k* in launch order;
  when *A < L* no block gets one and the pass is left out.

Per block: ``lead_ms`` = the time the compute stream became ready for the block minus the end of
its all-gather — positive when the gather was done early (hidden), negative when the compute
stream waited for it (``wait_ms``, the idle time before the block's first kernel up to the
gather's end). Figures are means over the measured forward passes, per rank and block.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from analysis.core.attribution import ops_in_windows
from analysis.core.codes import per_name
from analysis.core.phases import LabelledOps
from cs336_profile.contract import LAYER_PREFIX

BLOCK_RANGE = rf"^{re.escape(LAYER_PREFIX)}(\d+)$"
ALL_GATHER = "all_gather"
NS_PER_MS = 1e6


def block_figures(kernels: pd.DataFrame, ranks: pd.DataFrame, blocks: pd.DataFrame) -> list[dict]:
    """One record per rank and block: ``pid, device_id, rank, block, passes, allgather_ms,
    lead_ms, min_lead_ms, wait_ms, late_passes`` (passes whose lead was negative); ``[]`` when
    there are no ``blocks`` (:func:`layer_blocks`) or no all-gathers in their forward passes.

    ``kernels``: kernel rows of ``labelled.ops`` with ``collective_columns`` and ``end_ns``,
    every one (a block's compute stream is read whole)."""
    rows = [row for rank in ranks.itertuples(index=False) for row in _rank_blocks(kernels, rank, blocks)]
    if not rows:
        return []
    per_pass = pd.DataFrame(rows)
    grouped = per_pass.groupby(["rank", "block"], sort=True)
    table = grouped.agg(pid=("pid", "first"), device_id=("device_id", "first"),
                        passes=("lead_ns", "size"), allgather_ns=("allgather_ns", "mean"),
                        lead_ns=("lead_ns", "mean"), min_lead_ns=("lead_ns", "min"),
                        wait_ns=("wait_ns", "mean"),
                        late_passes=("lead_ns", lambda lead: int((lead < 0).sum())))
    return [{"pid": int(r.pid), "device_id": int(r.device_id), "rank": int(rank),
             "block": int(block), "passes": int(r.passes),
             "allgather_ms": r.allgather_ns / NS_PER_MS, "lead_ms": r.lead_ns / NS_PER_MS,
             "min_lead_ms": r.min_lead_ns / NS_PER_MS, "wait_ms": r.wait_ns / NS_PER_MS,
             "late_passes": int(r.late_passes)}
            for (rank, block), r in table.iterrows()]


def is_layer_name(name) -> bool:
    """Whether an NVTX range's name starts as a block's does (``layer_<i>``; a missing one, NaN, does not)."""
    return isinstance(name, str) and name.startswith(LAYER_PREFIX)


def layer_blocks(ranges: pd.DataFrame, labelled: LabelledOps) -> pd.DataFrame:
    """The blocks: ``layer_<i>`` ranges inside measured forward ranges, with ``block`` and
    ``forward_id`` (the forward range's ``range_id``)."""
    named = ranges[per_name(ranges["name"], is_layer_name, dtype=bool)]
    if named.empty:
        return named.assign(block=np.int64(0), forward_id=np.int64(0))
    index = named["name"].str.extract(BLOCK_RANGE, expand=False)
    blocks = named[index.notna()].assign(block=index.dropna().astype(np.int64))
    forwards = labelled.phase_ranges[labelled.phase_ranges["measured"]
                                     & (labelled.phase_ranges["phase"] == "forward")]
    inside = ops_in_windows(blocks.assign(launch_start_ns=blocks["start_ns"],
                                          launch_tid=blocks["tid"]), forwards)
    blocks = blocks[inside >= 0].assign(
        forward_id=forwards["range_id"].to_numpy()[inside[inside >= 0]])
    return blocks.sort_values("start_ns").reset_index(drop=True)


def _rank_blocks(kernels: pd.DataFrame, rank, blocks: pd.DataFrame) -> list[dict]:
    """Per forward pass and block of one rank: all-gather duration, lead and wait in ns."""
    mine = kernels[(kernels["pid"] == rank.pid).to_numpy()
                   & (kernels["device_id"] == rank.device_id).to_numpy()]
    blocks = blocks[blocks["pid"] == rank.pid].reset_index(drop=True)  # label = position
    forward = mine[mine["phase_range_id"].isin(blocks["forward_id"]).to_numpy()]
    compute = forward[~forward["is_communication"].to_numpy()]
    if not len(blocks) or not len(compute):
        return []
    stream = compute.groupby("stream_id")["dur_ns"].sum().idxmax()
    on_stream = mine[(mine["stream_id"] == stream).to_numpy()].sort_values("start_ns")
    stream_starts = on_stream["start_ns"].to_numpy()
    stream_reach = np.maximum.accumulate(on_stream["end_ns"].to_numpy())
    in_block = ops_in_windows(on_stream, blocks)
    # the first compute kernel (by start) of each block on the stream: block position -> row
    candidates = np.flatnonzero((in_block >= 0) & ~on_stream["is_communication"].to_numpy())
    positions, first_rows = np.unique(in_block[candidates], return_index=True)
    first_of = dict(zip(positions.tolist(), candidates[first_rows].tolist()))
    gathers = forward[(forward["collective"] == ALL_GATHER).to_numpy()]
    rows = []
    for forward_id, pass_blocks in blocks.groupby("forward_id"):
        pass_gathers = gathers[gathers["phase_range_id"] == forward_id].sort_values(
            "launch_start_ns")
        if len(pass_gathers) < len(pass_blocks):
            continue
        owned = pass_gathers.iloc[len(pass_gathers) - len(pass_blocks):]
        for position, block, gather in zip(pass_blocks.index, pass_blocks["block"], owned.itertuples()):
            if position not in first_of:
                continue
            first = first_of[position]
            first_start = stream_starts[first]
            ready = stream_reach[first - 1] if first > 0 else first_start
            rows.append({"pid": rank.pid, "device_id": rank.device_id, "rank": rank.rank,
                         "block": block, "allgather_ns": gather.dur_ns,
                         "lead_ns": ready - gather.end_ns,
                         "wait_ns": max(0, min(gather.end_ns, first_start) - ready)})
    return rows
