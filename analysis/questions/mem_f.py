"""mem-f (2026 handout): memory saved for backward by one TransformerBlock, its largest
contributing operations, and the gradient bytes per block implied by the backward pass.

Per trace, the summary's ``memory_ledger`` section
(:func:`analysis.trace.memory_ledger.ledger_record`) holds the ledger of the trace's tensor-level
memory events, or says why there is none and how to record them. Across traces, :data:`MEM_F`
answers from the summaries whose ledger is available.
"""
from __future__ import annotations

import pandas as pd

from analysis.questions.question import Evidence, Question
from analysis.questions.records import EDITION_2026, FigureSpec, ResultsAnswer, Unanswered
from analysis.trace.memory_ledger import RECORD_HOW


def answer_mem_f(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """mem-f across the traces whose memory ledger is available."""
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
