"""The memory ledger of one training step: tensor-level memory events joined to NVTX ranges.

Inputs: the trace's NVTX ranges, its memory events (:mod:`analysis.load.memory_events`) and the
run config (the model's dimensions from the config mark). Rules:

- an event's time is its runtime call's start (``cudaMallocAsync``/``cudaFreeAsync``), else the
  event's own start; events stamped 0 were made before the capture and form the **baseline**;
- an allocation lives until the next free of its address (forever when none follows);
- the step is the first ``step_<i>`` range; a block's forward is its ``layer_<i>`` range inside
  the step's ``forward`` range; its allocations still alive when ``backward`` starts are what it
  saved for backward;
- each saved allocation is charged to the outermost op range (``<op>, seq = ..., sizes = ...``)
  enclosing its runtime call on the calling thread;
- a block's backward runs from the first backward node (``<Node>, seq = N`` inside an
  ``autograd::engine::evaluate_function`` range) whose ``seq`` is one of the block's forward ops'
  to the next block's first node (the last block: to the first later node of no block, else the
  end of ``backward``); its memory change is allocations minus frees in that window, and the
  gradient bytes it implies are that change plus the block's saved bytes, which its backward frees.

:func:`ledger_record` is the summary's ``memory_ledger`` section: the ledger of a trace, or what
stopped it; mem-f's module writes its sentence (:func:`analysis.questions.mem_f.ledger_sentence`).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from analysis.core.structure import RunStructure
from analysis.load.trace import Trace
from cs336_profile.contract import has_backward

BYTES_PER_PARAM = 4  # fp32 gradients
EVALUATE_PREFIX = "autograd::engine::evaluate_function: "
OP_MARKER = ", op_id = "
SEQ = re.compile(r", seq = (\d+)")
SIZES = re.compile(r"sizes = \[(.*?)\](?:, input_op_ids|$)")
TIMELINE_POINTS = 1000
NO_OP = "(no op range)"


def block_params(d_model: int, d_ff: int) -> int:
    """Parameters of one TransformerBlock: Q, K, V, O (4·d²), SwiGLU's three matrices (3·d·d_ff)
    and two RMSNorm gains (2·d)."""
    return 4 * d_model * d_model + 3 * d_model * d_ff + 2 * d_model


def op_label(name: str) -> str:
    """``aten::bmm, seq = 5, op_id = 9, sizes = [[1, 512, 2560], []]`` -> ``aten::bmm [1, 512, 2560]``."""
    match = SIZES.search(name)
    shapes = re.findall(r"\[[^\[\]]+\]", match.group(1)) if match else []
    return " ".join([name.split(", ")[0], *shapes])


def event_lifetimes(events: pd.DataFrame) -> pd.DataFrame:
    """Allocations with ``time_ns`` (runtime call, else event start) and ``freed_ns`` (the next free
    of the same address; +inf when none follows)."""
    events = events.assign(time_ns=np.where(events["api_start_ns"] >= 0, events["api_start_ns"], events["start_ns"]))
    ordered = events.reset_index().sort_values(["address", "time_ns", "index"], kind="stable")
    next_time = ordered["time_ns"].shift(-1)
    next_is_free = (ordered["address"].shift(-1) == ordered["address"]) & ~ordered["is_alloc"].shift(-1, fill_value=True)
    ordered["freed_ns"] = np.where(next_is_free, next_time, np.inf)
    allocs = ordered[ordered["is_alloc"]].sort_values(["time_ns", "index"]).drop(columns="index")
    return allocs.reset_index(drop=True)


def _first_phase(phases: pd.DataFrame, phase: str, step: pd.Series) -> pd.Series | None:
    """The first window of ``phase`` starting inside ``step`` (same process)."""
    inside = phases[(phases["name"] == phase) & (phases["pid"] == step["pid"]) & (phases["start_ns"] >= step["start_ns"])
                    & (phases["start_ns"] <= step["end_ns"])]
    return inside.sort_values("start_ns").iloc[0] if len(inside) else None


def _outermost_ops(ranges: pd.DataFrame) -> pd.DataFrame:
    """Op ranges whose parent is no op range: on one thread they do not overlap."""
    is_op = ranges["name"].str.contains(OP_MARKER, regex=False)
    op_ids = set(ranges.loc[is_op, "range_id"])
    top = ranges[is_op & ~ranges["parent_id"].isin(op_ids)]
    return top.sort_values(["pid", "tid", "start_ns"])


def charge_to_ops(allocs: pd.DataFrame, ops: pd.DataFrame) -> pd.Series:
    """The label of the outermost op range enclosing each allocation's runtime call on its thread."""
    labels = pd.Series(NO_OP, index=allocs.index, dtype=object)
    for (pid, tid), rows in allocs.groupby(["pid", "tid"]):
        mine = ops[(ops["pid"] == pid) & (ops["tid"] == tid)]
        if mine.empty:
            continue
        at = np.searchsorted(mine["start_ns"].to_numpy(), rows["time_ns"].to_numpy(), side="right") - 1
        found = at >= 0
        inside = found & (mine["end_ns"].to_numpy()[np.maximum(at, 0)] >= rows["time_ns"].to_numpy())
        names = mine["name"].to_numpy()[np.maximum(at, 0)]
        labels.loc[rows.index[inside]] = [op_label(n) for n in names[inside]]
    return labels


def _seqs(names: pd.Series) -> pd.Series:
    return pd.to_numeric(names.str.extract(SEQ, expand=False), errors="coerce")


def backward_windows(ranges: pd.DataFrame, forward_blocks: pd.DataFrame, backward: pd.Series) -> pd.DataFrame:
    """Per block: ``bwd_start_ns``/``bwd_end_ns`` of its backward (see the module docstring)."""
    in_bwd = ranges[(ranges["start_ns"] >= backward["start_ns"]) & (ranges["start_ns"] <= backward["end_ns"])]
    evaluate_ids = set(in_bwd.loc[in_bwd["name"].str.startswith(EVALUATE_PREFIX), "range_id"])
    nodes = in_bwd[in_bwd["parent_id"].isin(evaluate_ids)].assign(seq=lambda f: _seqs(f["name"]))
    nodes = nodes.dropna(subset=["seq"]).sort_values("start_ns")
    block_of = pd.Series(-1, index=nodes.index)
    for row in forward_blocks.itertuples():
        block_of[(nodes["seq"] >= row.seq_lo) & (nodes["seq"] <= row.seq_hi)] = row.block
    nodes = nodes.assign(block=block_of)
    starts = nodes[nodes["block"] >= 0].groupby("block")["start_ns"].min().sort_values()
    windows = []
    for position, (block, start) in enumerate(starts.items()):
        if position + 1 < len(starts):
            end = starts.iloc[position + 1]
        else:
            last = nodes.loc[nodes["block"] == block, "start_ns"].max()
            later = nodes[(nodes["start_ns"] > last) & (nodes["block"] < 0)]
            end = later["start_ns"].min() if len(later) else backward["end_ns"]
        windows.append({"block": block, "bwd_start_ns": start, "bwd_end_ns": end})
    return pd.DataFrame(windows, columns=["block", "bwd_start_ns", "bwd_end_ns"])


def _forward_blocks(ranges: pd.DataFrame, forward: pd.Series, block_ranges: pd.Series) -> pd.DataFrame:
    """The block ranges (``block_ranges``: block index by ``range_id``) inside ``forward``, with
    the sequence numbers of the op ranges each holds."""
    layers = ranges[ranges["range_id"].isin(block_ranges.index)
                    & (ranges["start_ns"] >= forward["start_ns"]) & (ranges["end_ns"] <= forward["end_ns"])]
    rows = []
    for layer in layers.sort_values("start_ns").itertuples():
        ops = ranges[(ranges["pid"] == layer.pid) & (ranges["tid"] == layer.tid)
                     & (ranges["start_ns"] >= layer.start_ns) & (ranges["end_ns"] <= layer.end_ns)]
        seqs = _seqs(ops["name"]).dropna()
        rows.append({"block": int(block_ranges[layer.range_id]), "fwd_start_ns": layer.start_ns,
                     "fwd_end_ns": layer.end_ns, "seq_lo": seqs.min() if len(seqs) else np.nan,
                     "seq_hi": seqs.max() if len(seqs) else np.nan})
    return pd.DataFrame(rows, columns=["block", "fwd_start_ns", "fwd_end_ns", "seq_lo", "seq_hi"])


# PyTorch's gradient accumulation op with the parameter's shape (autograd-shapes-nvtx):
# ``torch::autograd::AccumulateGrad, op_id = 6564, sizes = [[768, 3072]], …``.
ACCUMULATE_GRAD = re.compile(r"^torch::autograd::AccumulateGrad, .*sizes = \[\[([\d, ]*)\]\]")


def _traced_block_params(ranges: pd.DataFrame, windows: pd.DataFrame) -> int | None:
    """Parameters per block read from the trace, for a run without a config: the elements of the
    parameters whose gradients each block's backward accumulates (``AccumulateGrad`` op ranges
    with shapes), the most common count over the blocks; None without such ranges."""
    found = ranges["name"].str.extract(ACCUMULATE_GRAD, expand=False).dropna()
    if found.empty or windows.empty:
        return None
    starts = ranges.loc[found.index, "start_ns"].to_numpy()
    elements = np.array([int(np.prod([int(d) for d in shape.split(",") if d.strip()])) for shape in found])
    per_block = [int(elements[(starts >= w.bwd_start_ns) & (starts < w.bwd_end_ns)].sum()) for w in windows.itertuples()]
    per_block = [n for n in per_block if n]
    return int(pd.Series(per_block).mode().iat[0]) if per_block else None


def _window_bytes(allocs: pd.DataFrame, frees: pd.DataFrame, start: float, end: float) -> tuple[int, int]:
    allocated = allocs.loc[(allocs["time_ns"] >= start) & (allocs["time_ns"] < end), "bytes"].sum()
    freed = frees.loc[(frees["time_ns"] >= start) & (frees["time_ns"] < end), "bytes"].sum()
    return int(allocated), int(freed)


def memory_ledger(ranges: pd.DataFrame, events: pd.DataFrame, config: dict | None, structure: RunStructure) -> dict:
    """The ledger's numbers (keys in :class:`analysis.trace.summary_schema.MemoryLedgerRecord`, less
    ``answer``) for the first measured step of ``structure``; raises ValueError naming what the
    trace lacks."""
    steps = structure.steps[structure.steps["measured"].to_numpy(dtype=bool)] if structure.has_steps else structure.steps
    if steps.empty:
        raise ValueError("no measured training step")
    step = steps.sort_values("start_ns").iloc[0]
    forward = _first_phase(structure.phases, "forward", step)
    backward = _first_phase(structure.phases, "backward", step)
    if forward is None or backward is None:
        raise ValueError(f"no forward and backward in `{step['name']}`")
    blocks = _forward_blocks(ranges, forward, structure.block_ranges)
    if blocks.empty:
        raise ValueError("no blocks in the forward pass (ranges `layer_<i>` or `block_<i>` around each block, or "
                         "nsys's `--pytorch=functions-trace` module labels; this project's runner adds ranges with --layer-ranges)")
    allocs = event_lifetimes(events)
    frees = events[~events["is_alloc"]].assign(
        time_ns=lambda f: np.where(f["api_start_ns"] >= 0, f["api_start_ns"], f["start_ns"]))
    before = allocs["start_ns"] == 0
    baseline = int(allocs.loc[before, "bytes"].sum() - frees.loc[frees["start_ns"] == 0, "bytes"].sum())

    saved_parts, rows = [], []
    windows = backward_windows(ranges, blocks, backward).set_index("block")
    for block in blocks.itertuples():
        in_block = allocs[(allocs["time_ns"] >= block.fwd_start_ns) & (allocs["time_ns"] < block.fwd_end_ns)]
        saved = in_block[in_block["freed_ns"] > backward["start_ns"]]
        saved_parts.append(saved)
        row = {"block": block.block, "forward_allocated_bytes": int(in_block["bytes"].sum()),
               "saved_for_backward_bytes": int(saved["bytes"].sum()),
               "backward_change_bytes": None, "gradient_bytes": None}
        if block.block in windows.index:
            window = windows.loc[block.block]
            allocated, freed = _window_bytes(allocs, frees, window["bwd_start_ns"], window["bwd_end_ns"])
            row["backward_change_bytes"] = allocated - freed
            row["gradient_bytes"] = allocated - freed + row["saved_for_backward_bytes"]
        rows.append(row)
    table = pd.DataFrame(rows)
    saved_all = pd.concat(saved_parts)
    saved_all = saved_all.assign(op=charge_to_ops(saved_all, _outermost_ops(ranges)))
    by_op = saved_all.groupby("op")["bytes"].sum().sort_values(ascending=False)
    total_saved = by_op.sum()
    top = [{"op": op, "bytes": float(b / len(blocks)), "share": float(b / total_saved) if total_saved else 0.0}
           for op, b in by_op.head(5).items()]
    dims = config or {}
    params = (block_params(int(dims["d_model"]), int(dims["d_ff"])) if {"d_model", "d_ff"} <= set(dims)
              else _traced_block_params(ranges, windows))
    expected = params * BYTES_PER_PARAM if params else None
    gradients = table["gradient_bytes"].dropna()
    return {
        "step": step["name"], "blocks_found": len(blocks), "baseline_bytes": baseline,
        "saved_for_backward_bytes_per_block": float(table["saved_for_backward_bytes"].mean()),
        "gradient_bytes_per_block": float(gradients.median()) if len(gradients) else None,
        "expected_gradient_bytes_per_block": expected,
        "params_per_block": expected // BYTES_PER_PARAM if expected else None,
        "top_ops": top, "blocks": table.to_dict("records"),
        "timeline": _timeline(allocs, frees, step, blocks, windows),
    }


def _timeline(allocs: pd.DataFrame, frees: pd.DataFrame, step: pd.Series, blocks: pd.DataFrame,
              windows: pd.DataFrame) -> dict:
    """Allocated bytes over the step (at most TIMELINE_POINTS points: the largest value in each
    time bin) and the blocks' forward and backward windows, in ms from the step's start."""
    changes = pd.concat([allocs[["time_ns", "bytes"]], frees[["time_ns"]].assign(bytes=-frees["bytes"])])
    changes = changes.sort_values("time_ns", kind="stable")
    level = changes["bytes"].cumsum()
    inside = (changes["time_ns"] >= step["start_ns"]) & (changes["time_ns"] <= step["end_ns"])
    times, values = (changes.loc[inside, "time_ns"] - step["start_ns"]) / 1e6, level[inside]
    if len(times) > TIMELINE_POINTS:
        bins = pd.cut(times, TIMELINE_POINTS, labels=False)
        grouped = pd.DataFrame({"t": times, "v": values, "bin": bins}).groupby("bin")
        times, values = grouped["t"].first(), grouped["v"].max()
    spans = [{"block": int(b.block), "phase": "forward", "start_ms": (b.fwd_start_ns - step["start_ns"]) / 1e6,
              "dur_ms": (b.fwd_end_ns - b.fwd_start_ns) / 1e6} for b in blocks.itertuples()]
    spans += [{"block": int(block), "phase": "backward", "start_ms": (w["bwd_start_ns"] - step["start_ns"]) / 1e6,
               "dur_ms": (w["bwd_end_ns"] - w["bwd_start_ns"]) / 1e6} for block, w in windows.iterrows()]
    return {"time_ms": [float(t) for t in times], "allocated_bytes": [int(v) for v in values], "blocks": spans}


def _unavailable(memory_events: int, blocks_problem: str | None = None) -> dict:
    return {"available": False, "step": None, "blocks_found": 0, "baseline_bytes": None,
            "saved_for_backward_bytes_per_block": None, "gradient_bytes_per_block": None,
            "expected_gradient_bytes_per_block": None, "params_per_block": None, "top_ops": [], "blocks": [],
            "timeline": None, "memory_events": memory_events, "blocks_problem": blocks_problem}


def ledger_record(trace: Trace, config: dict | None, structure: RunStructure) -> dict:
    """The trace's memory ledger, or an unavailable one that says what stopped it (no memory
    events, a run without backward, or ``blocks_problem``: why the events cannot be placed in
    blocks); events left out of it are counted in the trace's notes."""
    events = trace.optional_table("memory_events")
    if events is None or events.empty:
        return _unavailable(0)
    if not has_backward(config):
        return _unavailable(len(events))
    try:
        record = memory_ledger(trace.ranges, events, config, structure)
    except ValueError as err:
        return _unavailable(len(events), str(err))
    return {"available": True, **record, "memory_events": len(events), "blocks_problem": None}
