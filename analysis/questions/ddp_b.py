"""ddp-b (2025, ddp_overlap_individual_parameters_benchmarking b): naive DDP, which all-reduces the
gradients after backward, against DDP that launches each gradient's all-reduce during backward —
per rank, per measured step: the step's GPU span, the all-reduce kernel time and how much of it no
compute kernel on the same GPU hides (exposed).

Reads the summaries' ``communication`` section (:mod:`analysis.trace.multi_gpu.summary`) of traces with at
least two ranks that ran all-reduces; the runner's config names the variant (``parallel``:
``ddp-naive`` / ``ddp-overlap``). A naive and an overlapped run are compared when their size,
context length, batch size and world size match; a difference in step span counts only when it
exceeds the larger step-to-step spread of the two runs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.core import text
from analysis.core.runs import run_label
from analysis.questions.question import Evidence, Question
from analysis.questions.records import FigureSpec, ResultsAnswer, Unanswered
from cs336_profile.contract import PARALLEL_MODES

if TYPE_CHECKING:
    import pandas as pd

NAIVE, OVERLAPPED, FSDP = PARALLEL_MODES
VARIANT_NAMES = {NAIVE: "naive DDP", OVERLAPPED: "overlapped DDP"}
# A data-parallel trace without the runner's config mark (a user's own torch DDP run, say).
UNRECORDED_MODE = "data-parallel, mode not recorded"
SAME_RUN_KEYS = ("size", "context_length", "batch_size", "world_size")
HANDOUT_SIZE = "xl"  # the model the handout's DDP benchmark runs on two GPUs
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


def one_rank_traces(summaries: list[dict]) -> str:
    """The sentence naming the traces that hold one rank of a larger job (each rank under its own
    nsys: their launcher gave the world size), which no comparison between ranks can use; "" when
    there are none."""
    held = [f"{run_label(s)} (rank {rank['rank']} of {communication['world_size']})" for s in summaries
            for communication in [s.get("communication") or {}] if len(communication.get("ranks", [])) == 1
            and communication.get("world_size", 1) > 1 for rank in communication["ranks"]]
    return ("Left out: " + ", ".join(held) + ": each holds one rank of a job whose ranks ran under their own nsys, "
            "and this comparison needs one trace holding every rank (`nsys profile … torchrun …`).") if held else ""


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
            "parallel": (summary.get("config") or {}).get("parallel") or UNRECORDED_MODE, "rank": rank["rank"],
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
    import pandas as pd

    summaries = ddp_summaries(evidence.summaries)
    table = pd.DataFrame([row for summary in summaries for row in rank_rows(summary)])
    left_out = one_rank_traces(evidence.summaries)
    if table.empty:
        return Unanswered("ddp-b", NEEDS + (f". {left_out}" if left_out else ""))
    table = with_waiting(table)
    sizes = {run_label(s): (s.get("config") or {}).get("size") for s in summaries}
    table["size"] = table["run"].map(sizes)
    pair = matching_pair(summaries)
    numbers = {"pair": [run_label(s) for s in pair] if pair else None, "left_out": left_out}
    return ResultsAnswer("ddp-b", "", {TABLE: table}, tuple(s["trace"] for s in summaries), numbers)


def with_waiting(table: pd.DataFrame) -> pd.DataFrame:
    """The per-rank table with ``transfer_bound_ms``, the least communication time of any rank of
    the run (a collective cannot finish before its last rank arrives, so no rank transfers for
    longer), and ``waiting_ms``, each rank's communication beyond it: time spent waiting for the
    other ranks inside the collective."""
    bound = table.groupby("run")["communication_ms"].transform("min")
    return table.assign(transfer_bound_ms=bound, waiting_ms=table["communication_ms"] - bound)


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
    """The lead: what overlapping changes (exposed communication per rank, the step against its
    spread) and how much of the naive run's communication is waiting, not transfer; then each
    run's ranks as evidence."""
    import pandas as pd

    table = record.tables[TABLE]
    runs = table.groupby("run", sort=False).agg(
        parallel=("parallel", "first"), ranks=("rank", "size"), step=("step_gpu_span_ms", "mean"),
        spread=("step_gpu_span_spread_ms", "max"), communication=("communication_ms", "mean"),
        exposed=("exposed_communication_ms", "mean"), transfer=("transfer_bound_ms", "first"))
    details = [_run_sentence(name, row, table[table["run"] == name]) for name, row in runs.iterrows()]
    details.append("An NCCL kernel runs from the moment its rank reaches the collective until every rank has, so a "
                   "rank that arrives first spends the wait for the others inside it: of a rank's communication time "
                   "at most the least rank's time is transfer, the rest is waiting (skew between the ranks).")
    sizes = sorted({str(size) for size in table.get("size", pd.Series(dtype=object)).dropna()} - {HANDOUT_SIZE})
    if sizes:
        details.append(f"The handout benchmarks the {HANDOUT_SIZE} model on two GPUs; these runs are {', '.join(sizes)}, "
                       "so their absolute times do not carry over to it.")
    if record.numbers.get("left_out"):
        details.append(record.numbers["left_out"])
    pair = record.numbers.get("pair")
    if not pair:
        present = set(runs["parallel"])
        missing = [VARIANT_NAMES[v] for v in (NAIVE, OVERLAPPED) if v not in present]
        lead = ("No naive and overlapped runs of the same size, context, batch and world size to compare"
                + (f"; a trace of {' and '.join(missing)} is needed." if missing else "."))
        return text.answer_text([lead], details)
    naive, overlapped = runs.loc[pair[0]], runs.loc[pair[1]]
    return text.answer_text([_pair_sentence(naive, overlapped, table, pair), _waiting_sentence(naive, table, pair[0])],
                            details)


def _pair_sentence(naive, overlapped, table: pd.DataFrame, pair: list[str]) -> str:
    """Exposed communication of the slowest-communicating rank in both runs, and the step change
    weighed against the larger step-to-step spread."""
    change = overlapped.step - naive.step
    noise = max(naive.spread, overlapped.spread)
    verdict = ("beyond" if abs(change) > noise else "within") + f" the step-to-step spread of up to {text.ms(noise)}"
    rank = table.loc[table[table["run"] == pair[0]]["communication_ms"].idxmax(), "rank"]
    exposed = [table[(table["run"] == run) & (table["rank"] == rank)]["exposed_communication_ms"].iloc[0] for run in pair]
    return (f"Overlapping the all-reduces with backward cuts rank {rank}'s exposed communication from "
            f"{text.ms(exposed[0])} to {text.ms(exposed[1])} per step and moves the step's GPU span "
            f"{text.ms(naive.step)} → {text.ms(overlapped.step)}, {verdict}"
            + (", so the step change is no measured difference." if abs(change) <= noise else "."))


def _waiting_sentence(naive, table: pd.DataFrame, run: str) -> str:
    """How much of the naive run's communication is waiting for the other rank, per rank."""
    ranks = table[table["run"] == run]
    waiting = ranks.set_index("rank")["waiting_ms"]
    if not (waiting > 0).any():
        return ""
    late = ranks.loc[ranks["communication_ms"].idxmin(), "rank"]
    share = waiting.sum() / ranks["communication_ms"].sum()
    return (f"{'Most' if share > 0.5 else text.pct(share)} of naive DDP's communication is waiting, not transfer: "
            f"the transfer takes at most "
            f"{text.ms(naive.transfer)} per step (rank {late}'s time in the all-reduces), so "
            + ", ".join(f"rank {rank} waits at least {text.ms(ms)}" for rank, ms in waiting.items() if ms > 0)
            + f" for rank {late} to arrive.")


def _run_sentence(name: str, run, ranks: pd.DataFrame) -> str:
    """One run's communication per rank, split into transfer (at most) and waiting (at least), with
    how much of it is exposed, and its step span."""
    per_rank = "; ".join(
        f"rank {row.rank} {text.ms(row.communication_ms)} ({text.ms(row.exposed_communication_ms)} exposed; "
        f"at least {text.ms(row.waiting_ms)} waiting)" for row in ranks.itertuples())
    return (f"{_capitalized(VARIANT_NAMES.get(run.parallel, run.parallel))} ({name}, {text.plural(run.ranks, 'rank')}): "
            f"communication kernels per step {per_rank}; transfer at most {text.ms(run.transfer)}; the step spans "
            f"{text.ms_span(ranks['step_gpu_span_ms'])} of GPU time.")


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
