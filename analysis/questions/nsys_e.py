"""nsys_profile (e): inside self-attention in the forward pass, the softmax's GPU time against
the two matmuls', and against the ratio of their FLOPs.

Softmax time is the summed time of the kernels launched inside the ``computing softmax`` ranges;
matmul time is the same for ``computing attention scores`` plus ``final matmul`` (the scaling
and masking kernels inside those ranges included; ``matmul_gemm_ms_per_pass`` is their GEMMs
alone); all over measured forward passes, per pass. Needs: those NVTX sub-ranges (default names;
see :class:`analysis.phases.RangeNames`) inside measured ``forward`` ranges; the run's config
for the FLOPs ratio.
"""
from __future__ import annotations

from typing import TypedDict

from analysis.classify import GEMM
from analysis.flops import attention_flops_ratio
from analysis import text
from analysis.questions import nsys_grid as grid
from analysis.questions.nsys_inputs import NsysInputs
from analysis.questions.question import Evidence, Question
from analysis.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.runs import sorted_summaries


class Record(TypedDict):
    """The per-trace record of (e), in the summary's ``questions["e"]``."""

    softmax_ms_per_pass: float | None
    matmul_ms_per_pass: float | None
    matmul_gemm_ms_per_pass: float | None
    softmax_kernels_per_pass: float | None
    matmul_kernels_per_pass: float | None
    runtime_ratio: float | None
    flops_ratio: float | None
    answer: str


def per_trace(inputs: NsysInputs) -> dict:
    """Answer (e) for one trace; ``flops_ratio`` is softmax FLOPs / matmul FLOPs, null without a config.

    Unanswerable (figures null) unless all three sub-ranges (named by ``inputs.names``) hold
    kernels in measured forward passes.
    """
    names = inputs.names
    kernels = inputs.measured_kernels(("forward",))
    passes = max(inputs.passes("forward"), 1)
    flops_ratio = _flops_ratio(inputs.run.config)
    regions = (names.softmax, names.attention_scores, names.final_matmul)
    missing = [region for region in regions if not (kernels["region"] == region).any()]
    if missing:
        return {
            "softmax_ms_per_pass": None,
            "matmul_ms_per_pass": None,
            "matmul_gemm_ms_per_pass": None,
            "softmax_kernels_per_pass": None,
            "matmul_kernels_per_pass": None,
            "runtime_ratio": None,
            "flops_ratio": flops_ratio,
            "answer": (
                "No kernels were launched inside "
                + ", ".join(f"`{region}`" for region in missing)
                + " ranges during measured forward passes, so this trace cannot split attention into softmax and matmuls."
            ),
        }
    softmax = kernels[kernels["region"] == names.softmax]
    matmuls = kernels[kernels["region"].isin((names.attention_scores, names.final_matmul))]
    softmax_ms = softmax["dur_ns"].sum() / passes / 1e6
    matmul_ms = matmuls["dur_ns"].sum() / passes / 1e6
    matmul_gemm_ms = matmuls.loc[matmuls["category"] == GEMM, "dur_ns"].sum() / passes / 1e6
    runtime_ratio = softmax_ms / matmul_ms
    sentence = (
        f"Inside attention, the softmax takes {text.ms(softmax_ms)} of GPU time per forward pass "
        f"({text.plural(len(softmax) / passes, 'kernel')}) against {text.ms(matmul_ms)} for the two matmul ranges "
        f"({text.plural(len(matmuls) / passes, 'kernel')}, of which GEMMs {text.ms(matmul_gemm_ms)}): "
        f"{runtime_ratio:.2f}× their time."
    )
    if flops_ratio is None:
        sentence += " The trace carries no model shapes, so the FLOPs ratio is unknown."
    else:
        per_flop = runtime_ratio / flops_ratio
        sentence += (
            f" By FLOPs the softmax is {flops_ratio:.3g}× the matmuls, so per FLOP it is "
            + (f"{per_flop:.0f}× slower." if per_flop >= 1 else f"{1 / per_flop:.0f}× faster.")
        )
    return {
        "softmax_ms_per_pass": softmax_ms,
        "matmul_ms_per_pass": matmul_ms,
        "matmul_gemm_ms_per_pass": matmul_gemm_ms,
        "softmax_kernels_per_pass": len(softmax) / passes,
        "matmul_kernels_per_pass": len(matmuls) / passes,
        "runtime_ratio": runtime_ratio,
        "flops_ratio": flops_ratio,
        "answer": sentence,
    }


def _flops_ratio(config: dict | None) -> float | None:
    """Softmax / matmul FLOPs from the config's shapes; None when the config lacks them."""
    try:
        return attention_flops_ratio(config) if config else None
    except ValueError:
        return None


KEYS = ("softmax_ms_per_pass", "matmul_ms_per_pass", "softmax_kernels_per_pass", "matmul_kernels_per_pass",
        "runtime_ratio", "flops_ratio")


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """Per trace: softmax and matmul time inside attention, their ratio, the FLOPs ratio and the
    per-FLOP slowdown (time ratio / FLOPs ratio)."""
    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "e", KEYS, "runtime_ratio")
    if table.empty:
        return Unanswered("nsys-e", "a trace with `computing softmax` and matmul ranges inside measured forward passes")
    if "flops_ratio" in table and table["flops_ratio"].notna().any():
        table["per_flop_slowdown_ratio"] = table["runtime_ratio"] / table["flops_ratio"]
    return grid.finish("nsys-e", {"Attention in the forward pass: softmax against matmuls": table}, summaries)


def _grid_text(record: ResultsAnswer) -> str:
    table = grid.first_table(record)
    text = f"Over {len(table)} traces the softmax takes {grid.span(table['runtime_ratio'])}× the GPU time of attention's " \
           f"two matmuls"
    if "per_flop_slowdown_ratio" not in table:
        return text + "."
    per_flop = table["per_flop_slowdown_ratio"].dropna()
    return text + f", while its FLOPs are only {grid.span(table['flops_ratio'], '{:.3f}')}× theirs: per FLOP the softmax is " \
                  f"{grid.span(per_flop, '{:.0f}')}× slower, because its kernels read and write the whole score matrix " \
                  "for a few operations per element."


QUESTION = Question(
    id="nsys-e", section="nsys_profile", title="Softmax against matmuls in attention",
    text="Inside self-attention, softmax time against the two matmuls' time, compared with their FLOPs ratio.",
    needs="nsys traces of the runner (analyze-nsys TRACE ...)",
    per_trace=per_trace, record=Record, summary_key="e", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("trace_bars", {
        "series": [["time (softmax / matmuls)", "runtime_ratio", 1], ["FLOPs (softmax / matmuls)", "flops_ratio", 1]],
        "xlabel": "ratio (log scale)", "xscale": "log", "title": "Softmax against the attention matmuls"}),
)
