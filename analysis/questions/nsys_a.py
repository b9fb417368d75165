"""nsys_profile (a): the forward pass's time as nsys sees it, against the Python timer.

nsys's figure is the mean CPU span of the measured ``forward`` ranges: every phase ends with
``torch.cuda.synchronize()``, so that span is the time the GPU took. The GPU projection (first
kernel start to last kernel end) is given beside it. Needs: measured ``forward`` ranges; the
Python timer's forward time from the run record for the ratio.
"""
from __future__ import annotations

from typing import TypedDict

from analysis import text
from analysis.questions import nsys_grid as grid
from analysis.questions.nsys_inputs import NsysInputs
from analysis.questions.question import Evidence, Question
from analysis.questions.results_files import plural
from analysis.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.runs import sorted_summaries

# A synchronized forward range's GPU projection covers nearly all of its CPU span (the gap is the
# launch latency of the first kernel); below this share the span is not a GPU measurement.
SYNCHRONIZED_SPAN_SHARE = 0.95


class Record(TypedDict):
    """The per-trace record of (a), in the summary's ``questions["a"]``."""

    nsys_forward_ms: float | None
    nsys_forward_gpu_ms: float | None
    python_forward_ms: float | None
    nsys_to_python_ratio: float | None
    answer: str


def per_trace(inputs: NsysInputs) -> dict:
    """Answer (a) for one trace from its per-phase figures and the Python timings."""
    forward = inputs.phases.get("forward")
    range_name = inputs.names.phase_range("forward")
    python_forward_ms = inputs.run.python_ms.get("forward")
    if forward is None:
        return {
            "nsys_forward_ms": None,
            "nsys_forward_gpu_ms": None,
            "python_forward_ms": python_forward_ms,
            "nsys_to_python_ratio": None,
            "answer": f"This trace has no measured `{range_name}` range, so nsys cannot time a forward pass.",
        }
    nsys_ms = forward["cpu_span_ms_per_pass"]
    gpu_ms = forward["gpu_span_ms_per_pass"]
    sentence = (
        f"nsys times the forward pass at {text.ms(nsys_ms)}, the mean CPU span of "
        f"{forward['passes']} measured `{range_name}` ranges; their GPU projection (first kernel start "
        f"to last kernel end) is {text.ms(gpu_ms)}"
    )
    if gpu_ms < SYNCHRONIZED_SPAN_SHARE * nsys_ms:
        sentence += (
            f", only {text.pct(gpu_ms / nsys_ms)} of the span, so the range does not measure GPU time "
            "alone (host work before the first launch, or no synchronize at its end)."
        )
    else:
        sentence += f", {text.pct(gpu_ms / nsys_ms)} of the span: the range measures GPU time."
    if python_forward_ms is None:
        ratio = None
        sentence += " No Python-timer forward time came with the trace (step_timing marks or timings.json), so there is nothing to compare with."
    else:
        ratio = nsys_ms / python_forward_ms
        sentence += (
            f" The Python timer measured {text.ms(python_forward_ms)} for the same steps, "
            f"a ratio nsys/Python of {ratio:.3f} ({_agreement(ratio)})."
        )
    return {
        "nsys_forward_ms": nsys_ms,
        "nsys_forward_gpu_ms": gpu_ms,
        "python_forward_ms": python_forward_ms,
        "nsys_to_python_ratio": ratio,
        "answer": sentence,
    }


def _agreement(ratio: float) -> str:
    off = abs(ratio - 1)
    if off < 0.005:
        return "they agree to within 0.5%"
    side = "longer" if ratio > 1 else "shorter"
    return f"nsys's range is {text.pct(off)} {side}"


KEYS = ("nsys_forward_ms", "nsys_forward_gpu_ms", "python_forward_ms", "nsys_to_python_ratio")


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """One row per trace with a measured forward pass."""
    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "a", KEYS, "nsys_forward_ms")
    if table.empty:
        return Unanswered("nsys-a", "a trace with measured `forward` ranges")
    return grid.finish("nsys-a", {"Forward pass: nsys and the Python timer": table}, summaries)


def _grid_text(record: ResultsAnswer) -> str:
    table = grid.first_table(record)
    text = f"Over {len(table)} traces nsys times the forward pass at {grid.span(table['nsys_forward_ms'])} ms."
    if "nsys_to_python_ratio" in table:
        ratio = table.dropna(subset=["nsys_to_python_ratio"])
        worst = ratio.loc[(ratio["nsys_to_python_ratio"] - 1).abs().idxmax()]
        text += (f" Against the Python timer of the same steps the ratio nsys/Python is "
                 f"{grid.span(ratio['nsys_to_python_ratio'], '{:.3f}')} (median {ratio['nsys_to_python_ratio'].median():.3f}), "
                 f"farthest from 1 for {worst['trace']}.")
        if len(ratio) < len(table):
            text += f" {plural(len(table) - len(ratio), 'trace')} carry no Python timings."
    return text


QUESTION = Question(
    id="nsys-a", section="nsys_profile", title="Forward time: nsys against Python",
    text="Total forward-pass time as nsys sees it, against the Python timer of the same steps.",
    needs="nsys traces of the runner (analyze-nsys TRACE ...)",
    per_trace=per_trace, record=Record, summary_key="a", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("trace_bars", {
        "series": [["nsys forward range", "nsys_forward_ms", 1], ["nsys GPU projection", "nsys_forward_gpu_ms", 1],
                   ["Python timer", "python_forward_ms", 1]],
        "xlabel": "ms per forward pass", "title": "Forward pass: nsys against the Python timer"}),
)
