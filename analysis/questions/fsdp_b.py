"""fsdp-b (2026, fsdp_accounting b): the xl model fully sharded on two GPUs — does each block's
all-gather finish before the block's forward needs it?

Reads the summaries' ``communication.fsdp_blocks`` (:mod:`analysis.fsdp`: per rank and block, the
lead of the all-gather over the moment the compute stream was ready for the block; negative is a
lag) and each rank's forward communication (``communication.ranks``). A block counts as late when
its all-gather lagged in any measured pass; the answer weighs the lags against the block's own
pass-to-pass variation (mean against worst lead).
"""
from __future__ import annotations

import pandas as pd

from analysis import text
from analysis.questions.question import Evidence, Question
from analysis.records import EDITION_2026, FigureSpec, ResultsAnswer, Unanswered
from analysis.runs import run_label

BLOCKS = "Per rank and block: the all-gather against the forward pass"
RANKS = "Per rank, forward pass: communication and exposed communication"
LATE_NAMED = 3  # late blocks the answer names
NEEDS = ("a two-GPU FSDP nsys trace of the 2026 xl (2.7B here) with one range per block: `nsys profile -t cuda,nvtx "
         "--export=sqlite -o RUN torchrun --standalone --nproc_per_node=2 -m cs336_profile.run --parallel fsdp "
         "--sizes 2.7B --context-lengths 512 --layer-ranges`, then analyze-nsys RUN.sqlite")


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """Every block's lead per rank and trace, and each rank's forward communication."""
    blocks, ranks, used = [], [], []
    for summary in evidence.summaries:
        communication = summary.get("communication") or {}
        if not communication.get("fsdp_blocks"):
            continue
        used.append(summary)
        label = run_label(summary)
        blocks += [{"trace": label, **{k: v for k, v in row.items() if k not in ("pid", "device_id")}}
                   for row in communication["fsdp_blocks"]]
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
        tables[RANKS] = pd.DataFrame(ranks)
    return ResultsAnswer("fsdp-b", "", tables, tuple(s["trace"] for s in used))


def write(record: ResultsAnswer) -> str:
    """Per trace: how many blocks' all-gathers were in time on every rank and pass, the worst lag,
    the compute stream's wait and the exposed forward communication."""
    blocks, ranks = record.tables[BLOCKS], record.tables.get(RANKS)
    sentences = []
    for trace, rows in blocks.groupby("trace", sort=False):
        late = rows[rows["late_passes"] > 0].sort_values("min_lead_ms")
        count = (f"{len(rows) - len(late)} of {len(rows)} block all-gathers ({rows['block'].nunique()} blocks × "
                 f"{text.plural(rows['rank'].nunique(), 'rank')})")
        if late.empty:
            sentence = (f"{trace}: yes — {count} finished before the compute stream needed them in every measured "
                        f"pass, the closest with {text.ms(rows['min_lead_ms'].min())} to spare.")
        else:
            named = [f"block {row.block} on rank {row.rank} ({row.late_passes} of {row.passes} passes, by up to "
                     f"{text.ms(-row.min_lead_ms)})" for row in late.head(LATE_NAMED).itertuples()]
            more = f" and {len(late) - LATE_NAMED} more" if len(late) > LATE_NAMED else ""
            sentence = (f"{trace}: {'no' if len(late) == len(rows) else 'not always'} — {count} finished before the "
                        f"compute stream needed them in every measured pass; late: {', '.join(named)}{more}. The "
                        f"compute stream waits {text.ms_span(rows.groupby('rank')['wait_ms'].sum())} per forward "
                        f"pass for all-gathers on the ranks.")
        forward = ranks[ranks["trace"] == trace] if ranks is not None else []
        if len(forward):
            sentence += (f" Forward communication per pass: {text.ms_span(forward['communication_ms'])} on the ranks, "
                         f"{text.ms_span(forward['exposed_communication_ms'])} of it exposed.")
        sentences.append(sentence)
    return " ".join(sentences)


QUESTION = Question(
    id="fsdp-b", section="fsdp_accounting", title="FSDP: all-gathers against the forward pass",
    text="Profile the xl model on two GPUs with FSDP: does the communication finish in time for the "
         "forward pass?",
    needs=NEEDS, compute=compute, write=write, reads_traces=True, editions=(EDITION_2026,),
    figure=FigureSpec("fsdp-b", alt="Lead of each block's all-gather over the forward pass, per rank"),
)
