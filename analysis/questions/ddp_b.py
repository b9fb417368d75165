"""ddp-b (2025, ddp_overlap_individual_parameters_benchmarking b): naive DDP, which all-reduces the
gradients after backward, against DDP that launches each gradient's all-reduce during backward —
per rank, per measured step: the step's GPU span, the all-reduce kernel time and how much of it no
compute kernel on the same GPU hides (exposed).

Reads the summaries' ``communication`` section (:mod:`analysis.multi_gpu`) of traces with at
least two ranks that ran all-reduces; the runner's config names the variant (``parallel``:
``ddp-naive`` / ``ddp-overlap``). A naive and an overlapped run are compared when their size,
context length, batch size and world size match; a difference in step span counts only when it
exceeds the larger step-to-step spread of the two runs.
"""
from __future__ import annotations

import pandas as pd

from analysis import text
from analysis.questions.question import Evidence, Question
from analysis.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.runs import run_label
from cs336_profile.contract import PARALLEL_MODES

NAIVE, OVERLAPPED, FSDP = PARALLEL_MODES
VARIANT_NAMES = {NAIVE: "naive DDP", OVERLAPPED: "overlapped DDP"}
SAME_RUN_KEYS = ("size", "context_length", "batch_size", "world_size")
UNEVEN = 2  # ranks whose communication times differ more than this factor: say which one waited
TABLE = "Per rank, mean per measured step"
NEEDS = ("two-GPU nsys traces of naive and overlapped DDP: `nsys profile -t cuda,nvtx --export=sqlite -o RUN "
         "torchrun --standalone --nproc_per_node=2 -m cs336_profile.run --parallel ddp-naive --sizes medium` "
         "(and `--parallel ddp-overlap`), then analyze-nsys RUN.sqlite")


def ddp_summaries(summaries: list[dict]) -> list[dict]:
    """Summaries of data-parallel runs with all-reduces on two or more ranks (FSDP runs left out)."""
    chosen = []
    for summary in summaries:
        communication = summary.get("communication") or {}
        parallel = (summary.get("config") or {}).get("parallel")
        all_reduce = any(c["collective"] == "all_reduce" for c in communication.get("collectives", []))
        if len(communication.get("ranks", [])) >= 2 and all_reduce and parallel != FSDP:
            chosen.append(summary)
    return chosen


def rank_rows(summary: dict) -> list[dict]:
    """One row per rank: step span and its spread, communication, exposed and overlapped ms."""
    rows = []
    for rank in summary["communication"]["ranks"]:
        step = rank["phases"].get("step")
        if step is None:
            continue
        communication = step["communication_ms_per_pass"]
        rows.append({
            "trace": f"{run_label(summary)} rank {rank['rank']}", "run": run_label(summary),
            "parallel": (summary.get("config") or {}).get("parallel") or "unknown", "rank": rank["rank"],
            "passes": rank["passes"], "step_gpu_span_ms": step["gpu_span_ms_per_pass"],
            "step_gpu_span_spread_ms": step["gpu_span_ms_spread"], "communication_ms": communication,
            "exposed_communication_ms": step["exposed_communication_ms_per_pass"],
            "overlapped_communication_ms": step["overlapped_communication_ms_per_pass"],
            "exposed_share": step["exposed_communication_ms_per_pass"] / communication if communication else None,
        })
    return rows


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """The per-rank table of every DDP trace; ``numbers["pair"]``: the run names of the naive and
    overlapped runs compared, when a matching pair exists."""
    summaries = ddp_summaries(evidence.summaries)
    table = pd.DataFrame([row for summary in summaries for row in rank_rows(summary)])
    if table.empty:
        return Unanswered("ddp-b", NEEDS)
    pair = matching_pair(summaries)
    numbers = {"pair": [run_label(s) for s in pair] if pair else None}
    return ResultsAnswer("ddp-b", "", {TABLE: table}, tuple(s["trace"] for s in summaries), numbers)


def matching_pair(summaries: list[dict]) -> tuple[dict, dict] | None:
    """The first naive and overlapped runs whose size, context, batch and world size match."""
    def variant(summary: dict, name: str) -> list[dict]:
        return [s for s in summaries if (s.get("config") or {}).get("parallel") == name]

    for naive in variant(summaries, NAIVE):
        for overlapped in variant(summaries, OVERLAPPED):
            if all(naive["config"].get(k) == overlapped["config"].get(k) for k in SAME_RUN_KEYS):
                return naive, overlapped
    return None


def write(record: ResultsAnswer) -> str:
    """Each run's communication and exposed share over its ranks; the pair's difference."""
    table = record.tables[TABLE]
    runs = table.groupby("run", sort=False).agg(
        parallel=("parallel", "first"), ranks=("rank", "size"), step=("step_gpu_span_ms", "mean"),
        spread=("step_gpu_span_spread_ms", "max"), communication=("communication_ms", "mean"),
        exposed=("exposed_communication_ms", "mean"))
    described = [_run_sentence(name, row, table[table["run"] == name]) for name, row in runs.iterrows()]
    sentences = [sentence for sentence, _ in described]
    if any(uneven for _, uneven in described):
        sentences.append("An NCCL kernel runs from the moment its rank reaches the collective until every rank has, "
                         "so the rank that arrives first also spends the wait for the other in it.")
    pair = record.numbers.get("pair")
    if pair:
        naive, overlapped = runs.loc[pair[0]], runs.loc[pair[1]]
        hidden = naive.exposed - overlapped.exposed
        change = overlapped.step - naive.step
        noise = max(naive.spread, overlapped.spread)
        if change == 0:
            effect = "leaves the step's GPU span unchanged"
        else:
            verdict = ("larger than the step-to-step spread of either run (at most " + text.ms(noise) + ")"
                       if abs(change) > noise else
                       "within the step-to-step spread (up to " + text.ms(noise) + "), so not a measured difference")
            effect = (f"changes the step's GPU span by {'+' if change > 0 else '−'}{text.ms(abs(change))}, "
                      f"{verdict}")
        sentences.append(f"Overlapping the all-reduces with backward {'hides' if hidden >= 0 else 'adds'} "
                         f"{text.ms(abs(hidden))} of exposed communication per step and {effect}.")
    else:
        present = set(runs["parallel"])
        missing = [VARIANT_NAMES[v] for v in (NAIVE, OVERLAPPED) if v not in present]
        sentences.append("No naive and overlapped runs of the same size, context, batch and world size to compare"
                         + (f"; a trace of {' and '.join(missing)} is needed." if missing else "."))
    return " ".join(sentences)


def _run_sentence(name: str, run, ranks: pd.DataFrame) -> tuple[str, bool]:
    """One run's communication, exposed share and step span over its ranks, with which rank spends
    longest in communication when the ranks differ more than :data:`UNEVEN`-fold (then True)."""
    share = text.pct(run.exposed / run.communication) if run.communication else "none"
    sentence = (f"{_capitalized(VARIANT_NAMES.get(run.parallel, run.parallel))} ({name}, "
                f"{text.plural(run.ranks, 'rank')}): {text.ms_span(ranks['communication_ms'])} of communication "
                f"kernels per step on the ranks, {text.ms_span(ranks['exposed_communication_ms'])} of it exposed "
                f"({share}); the step spans {text.ms_span(ranks['step_gpu_span_ms'])} of GPU time.")
    longest, shortest = ranks.loc[ranks["communication_ms"].idxmax()], ranks.loc[ranks["communication_ms"].idxmin()]
    uneven = shortest["communication_ms"] > 0 and longest["communication_ms"] > UNEVEN * shortest["communication_ms"]
    if uneven:
        sentence += (f" Rank {longest['rank']} spends {longest['communication_ms'] / shortest['communication_ms']:.1f}× "
                     f"rank {shortest['rank']}'s time in them.")
    return sentence, uneven


def _capitalized(phrase: str) -> str:
    return phrase[:1].upper() + phrase[1:]


QUESTION = Question(
    id="ddp-b", section="ddp_overlap_individual_parameters_benchmarking",
    title="Naive against overlapped DDP",
    text="Compare the initial DDP implementation with the one that overlaps backward computation with "
         "communication: does one overlap compute with communication while the other does not?",
    needs=NEEDS, compute=compute, write=write, reads_traces=True,
    figure=FigureSpec("trace_bars", {
        "series": [["communication", "communication_ms", 1], ["exposed", "exposed_communication_ms", 1],
                   ["step GPU span", "step_gpu_span_ms", 1]],
        "xlabel": "ms per measured step", "title": "Communication per rank: naive against overlapped DDP"}),
)
