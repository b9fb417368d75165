"""fsdp-b (2026, fsdp_accounting b): the xl model fully sharded on two GPUs — does each block's
all-gather finish before the block's forward needs it?

Reads the summaries' ``communication.fsdp_blocks`` (:mod:`analysis.trace.multi_gpu.fsdp`: per rank and block, the
lead of the all-gather over the moment the compute stream was ready for the block; negative is a
lag) and each rank's forward communication (``communication.ranks``). A block counts as late when
its all-gather lagged in any measured pass; the answer weighs the lags against the block's own
pass-to-pass variation (mean against worst lead).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.core import text
from analysis.core.runs import run_label
from analysis.questions.question import Evidence, Question
from analysis.questions.records import EDITION_2026, FigureSpec, ResultsAnswer, Unanswered

if TYPE_CHECKING:
    import pandas as pd

BLOCKS = "Per rank and block: the all-gather against the forward pass"
RANKS = "Per rank, forward pass: communication and exposed communication"
LATE_NAMED = 3  # late blocks the answer names
NEEDS = ("a two-GPU FSDP nsys trace of the 2026 xl (2.7B here) with one range per block: `nsys profile -t cuda,nvtx "
         "--export=sqlite -o RUN torchrun --standalone --nproc_per_node=2 -m cs336_profile.run --parallel fsdp "
         "--sizes 2.7B --context-lengths 512 --layer-ranges`, then analyze-nsys RUN.sqlite")


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """Every block's lead per rank and trace, and each rank's forward communication."""
    import pandas as pd

    blocks, ranks, used, alone = [], [], [], []
    for summary in evidence.summaries:
        communication = summary.get("communication") or {}
        if not communication.get("fsdp_blocks"):
            continue
        used.append(summary)
        label = run_label(summary)
        blocks += [{"trace": label, **{k: v for k, v in row.items() if k not in ("pid", "device_id")}}
                   for row in communication["fsdp_blocks"]]
        if len(communication["ranks"]) < 2:  # one rank: its wait for the others is not told from transfer
            alone.append(label)
            continue
        for rank in communication["ranks"]:
            forward = rank["phases"].get("forward")
            if forward is not None:
                ranks.append({"trace": label, "rank": rank["rank"], "passes": forward["passes"],
                              "forward_gpu_span_ms": forward["gpu_span_ms_per_pass"],
                              "communication_ms": forward["communication_ms_per_pass"],
                              "exposed_communication_ms": forward["exposed_communication_ms_per_pass"]})
    if not blocks:
        return Unanswered("fsdp-b", NEEDS)
    tables = {BLOCKS: pd.DataFrame(blocks)}
    if ranks:
        ranks = pd.DataFrame(ranks)
        bound = ranks.groupby("trace")["communication_ms"].transform("min")
        tables[RANKS] = ranks.assign(transfer_bound_ms=bound, waiting_ms=ranks["communication_ms"] - bound)
    skew = {run_label(s): (s["communication"].get("skew") or {}).get("max_start_spread_ms") for s in used}
    return ResultsAnswer("fsdp-b", "", tables, tuple(s["trace"] for s in used), {"start_skew_ms": skew, "one_rank": alone})


def write(record: ResultsAnswer) -> str:
    """Per trace: which blocks' all-gathers were late and why (the first block has nothing to hide
    behind), how long compute waited for them, and the forward communication not overlapped by
    compute split into waiting for the other rank (skew) and transfer."""
    import pandas as pd

    blocks, ranks = record.tables[BLOCKS], record.tables.get(RANKS)
    lead, details = [], []
    for trace, rows in blocks.groupby("trace", sort=False):
        late = rows[rows["late_passes"] > 0].sort_values("min_lead_ms")
        count = (f"{len(rows) - len(late)} of {len(rows)} block all-gathers ({rows['block'].nunique()} blocks × "
                 f"{text.plural(rows['rank'].nunique(), 'rank')})")
        if late.empty:
            lead.append(f"{trace}: yes — {count} finished before the compute stream needed them in every measured "
                        f"pass, the closest with {text.ms(rows['min_lead_ms'].min())} to spare.")
        else:
            lead.append(_late_sentence(trace, rows, late, count))
        forward = ranks[ranks["trace"] == trace] if ranks is not None else pd.DataFrame()
        if len(forward):
            sentence = _skew_sentence(forward, record.numbers.get("start_skew_ms", {}).get(trace))
            lead.append(sentence)
            details.append("Per rank in the forward pass: " + "; ".join(
                f"rank {row.rank} {text.ms(row.communication_ms)} of communication kernels, "
                f"{text.ms(row.exposed_communication_ms)} of it with no compute beside it, at least "
                f"{text.ms(row.waiting_ms)} waiting for the other rank" for row in forward.itertuples()) + ".")
    if record.numbers.get("one_rank"):
        details.append(f"{', '.join(record.numbers['one_rank'])} "
                       f"{'holds' if len(record.numbers['one_rank']) == 1 else 'each hold'} one rank: its time in the "
                       "all-gathers cannot be split into transfer and waiting for the other ranks, which only a trace "
                       "holding every rank shows.")
    return text.answer_text(lead, details)


def _late_sentence(trace: str, rows: pd.DataFrame, late: pd.DataFrame, count: str) -> str:
    """The late blocks, how long compute waited for them, and why when the late one is the first block."""
    named = [f"block {row.block} on rank {row.rank} ({row.late_passes} of {row.passes} passes, by up to "
             f"{text.ms(-row.min_lead_ms)})" for row in late.head(LATE_NAMED).itertuples()]
    more = f" and {len(late) - LATE_NAMED} more" if len(late) > LATE_NAMED else ""
    sentence = (f"{trace}: {'no' if len(late) == len(rows) else 'not always'} — {count} were in time in every "
                f"measured pass; late: {', '.join(named)}{more}, so compute waits "
                f"{text.ms_span(rows.groupby('rank')['wait_ms'].sum())} per forward pass for all-gathers")
    if set(late["block"]) == {rows["block"].min()}:
        sentence += (f". Block {rows['block'].min()} is the first block: no earlier block's compute runs while its "
                     "all-gather does, so nothing can hide it")
    return sentence + "."


def _skew_sentence(forward: pd.DataFrame, skew_ms: float | None) -> str:
    """The forward communication without compute beside it, reconciled with the short compute wait:
    beyond the transfer (at most the least rank's time), a rank's time in the collectives is waiting
    for the other rank to arrive."""
    bound = forward["transfer_bound_ms"].iloc[0]
    waiting = forward.loc[forward["waiting_ms"].idxmax()]
    mostly = waiting["waiting_ms"] >= waiting["exposed_communication_ms"] / 2
    sentence = (f"The {text.ms_span(forward['exposed_communication_ms'])} of forward communication with no compute "
                f"beside it is {'mostly' if mostly else 'partly'} skew, not transfer: the transfer takes at most "
                f"{text.ms(bound)} per pass "
                f"(the least rank's time), so rank {waiting['rank']} spends at least {text.ms(waiting['waiting_ms'])} "
                "waiting inside the all-gathers for the other rank")
    if skew_ms is not None:
        sentence += f", whose steps start up to {text.ms(skew_ms)} apart"
    return sentence + "."


QUESTION = Question(
    id="fsdp-b", section="fsdp_accounting", title="FSDP: all-gathers against the forward pass",
    text="Profile the xl model on two GPUs with FSDP: does the communication finish in time for the "
         "forward pass?",
    needs=NEEDS, compute=compute, write=write, reads_traces=True, editions=(EDITION_2026,),
    figure=FigureSpec("fsdp-b", alt="Lead of each block's all-gather over the forward pass, per rank"),
)
