"""mem-f (2026 handout): memory saved for backward by one TransformerBlock, its largest
contributing operations, and the gradient bytes per block implied by the backward pass.

Per trace, the summary's ``memory_ledger`` section
(:func:`analysis.trace.memory_ledger.ledger_record`) holds the ledger of the trace's tensor-level
memory events, or what stopped it; :func:`ledger_sentence` writes its answer (or why there is none
and how to record the events). Across traces, :data:`MEM_F` answers from the summaries whose
ledger is available.
"""
from __future__ import annotations

from analysis.load.export_map import MEMORY_EVENTS
from analysis.questions.question import Evidence, Question
from analysis.questions.records import EDITION_2026, FigureSpec, ResultsAnswer, Unanswered
from cs336_profile.contract import MIB, has_backward

RECORD_HOW = ("profile a training step of your script with `nsys profile --cuda-memory-usage=true "
              "--pytorch=functions-trace,autograd-shapes-nvtx` and `PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync` "
              "(so every tensor's allocation and free is an event, and PyTorch's module labels show the blocks; "
              "or an NVTX range `block_<i>` around each block), or with this project's runner: "
              "`python -m nsys_runs.sweep --handout 2026 --sizes xl --context-lengths 128 --modes train "
              "--layer-ranges --nsys-flags 2026 --memory-events`")
# Gradient bytes within this fraction of parameters × 4 B count as a match.
MATCH_TOLERANCE = 0.01


def ledger_sentence(record: dict, summary: dict) -> str:
    """The mem-f answer of one trace's ``memory_ledger`` record: its ledger written out, or what
    stopped it and how to record the events."""
    if record["available"]:
        return ledger_text(record)
    config = summary.get("config") or {}
    if not record["memory_events"]:
        reason = f"This trace has no tensor-level memory events (`{MEMORY_EVENTS.name}`)"
    elif not has_backward(config):
        reason = f"This trace ran `{config['mode']}` only: there is no backward to save memory for"
    else:
        reason = f"This trace's memory events cannot be placed in blocks: {record['blocks_problem']}"
    return f"{reason}; to answer mem-f, {RECORD_HOW}."


def ledger_text(record: dict) -> str:
    """The mem-f answer of one ledger, written from its numbers (statistics, imported here: only a
    trace with a ledger needs it)."""
    from statistics import fmean, median

    blocks = record["blocks"]
    saved = [block["saved_for_backward_bytes"] for block in blocks]
    spread = ("the same in every block" if min(saved) == max(saved)
              else f"{min(saved) / MIB:,.1f}–{max(saved) / MIB:,.1f} MiB across blocks")
    ops = "; ".join(f"{op['op']} {op['bytes'] / MIB:,.1f} MiB ({op['share']:.0%})" for op in record["top_ops"])
    top_share = sum(op["share"] for op in record["top_ops"])
    text = (f"In `{record['step']}`, each of the {record['blocks_found']} TransformerBlocks allocates "
            f"{fmean(block['forward_allocated_bytes'] for block in blocks) / MIB:,.1f} MiB in its forward, of which "
            f"{record['saved_for_backward_bytes_per_block'] / MIB:,.1f} MiB is still allocated when backward starts "
            f"(saved for backward; {spread}). The {len(record['top_ops'])} largest contributing operations per block: "
            f"{ops}; together {top_share:.0%} of the saved bytes. Allocations stamped before the capture "
            f"(start 0) are the baseline: {record['baseline_bytes'] / 2**30:,.2f} GiB still allocated when it began.")
    gradient, expected = record["gradient_bytes_per_block"], record["expected_gradient_bytes_per_block"]
    if gradient is not None:
        change = median(block["backward_change_bytes"] for block in blocks if block["backward_change_bytes"] is not None)
        text += (f" In backward, memory changes by {change / MIB:+,.1f} MiB per block; adding back the "
                 f"{record['saved_for_backward_bytes_per_block'] / MIB:,.1f} MiB of residuals its backward frees gives "
                 f"{gradient / MIB:,.1f} MiB of gradients per block")
        if expected:
            ratio = gradient / expected
            verdict = "matching" if abs(ratio - 1) <= MATCH_TOLERANCE else f"{ratio:.2f}× of"
            text += (f", {verdict} the {record['params_per_block']:,} parameters × 4 B = "
                     f"{expected / MIB:,.1f} MiB expected")
        text += "."
    return text


def answer_mem_f(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """mem-f across the traces whose memory ledger is available."""
    import pandas as pd

    ledgers = [(s["trace"], s["memory_ledger"]) for s in evidence.summaries
               if (s.get("memory_ledger") or {}).get("available")]
    if not ledgers:
        return Unanswered("mem-f", f"a trace with tensor-level memory events: {RECORD_HOW}")
    headline = pd.DataFrame([{
        "trace": trace, "blocks": ledger["blocks_found"], "baseline_bytes": ledger["baseline_bytes"],
        "saved_for_backward_per_block_bytes": ledger["saved_for_backward_bytes_per_block"],
        "gradient_per_block_bytes": ledger["gradient_bytes_per_block"],
        "expected_gradient_per_block_bytes": ledger["expected_gradient_bytes_per_block"],
    } for trace, ledger in ledgers])
    trace, first = ledgers[0]
    timeline = pd.DataFrame({"time_ms": first["timeline"]["time_ms"],
                             "allocated_bytes": first["timeline"]["allocated_bytes"]})
    tables = {
        "Memory ledger per trace": headline,
        f"Largest contributing operations per block ({trace})": pd.DataFrame(first["top_ops"]).rename(columns={"bytes": "per_block_bytes"}),
        f"Per block ({trace})": pd.DataFrame(first["blocks"]),
        f"Allocated memory over the step ({trace})": timeline,
        f"Block ranges ({trace})": pd.DataFrame(first["timeline"]["blocks"]),
    }
    text = " ".join(f"{t}: {ledger['answer']}" if len(ledgers) > 1 else ledger["answer"] for t, ledger in ledgers)
    return ResultsAnswer("mem-f", text, tables, tuple(t for t, _ in ledgers),
                         {"saved_for_backward_bytes_per_block": first["saved_for_backward_bytes_per_block"],
                          "gradient_bytes_per_block": first["gradient_bytes_per_block"]})


MEM_F = Question(
    id="mem-f", section="Memory", title="Memory saved for backward per block (Nsight memory events)",
    text="Use the PyTorch-provided NVTX labels to determine how much memory is saved for backward by a single "
         "TransformerBlock; the 5 largest contributing operations and their share; from the memory allocated in "
         "the forward pass and each block's memory change in the backward pass, how much memory the gradient "
         "tensors of a TransformerBlock take, against what you expect.",
    needs=f"a trace with tensor-level memory events: {RECORD_HOW}",
    compute=answer_mem_f, editions=(EDITION_2026,), reads_traces=True,
    figure=FigureSpec("mem-f", {"x": "time_ms", "y": "allocated_bytes", "spans": "Block ranges"},
                      alt="Allocated memory over one training step, with each block's forward and backward range"),
)
