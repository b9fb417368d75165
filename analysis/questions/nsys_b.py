"""nsys_profile (b): the kernel with the most summed GPU time in the forward pass, its calls in
ONE forward pass, and whether it still leads when forward and backward are counted together.

The kernel is named as an operation: its label (:func:`analysis.core.kernel_names.kernel_label`), its
calls as ``calls_per_layer`` × layers + ``calls_outside_layers`` (the only matmul of the forward
outside the layers is the lm_head), and for a GEMM the precision and units it computes in
(:func:`analysis.core.classify.gemm_precision`: fp32 FFMA on CUDA cores, TF32/bf16 on tensor cores).
Across traces, fp32 eager, bf16, compiled and each multi-GPU mode are answered apart.

Needs: kernels attributed to measured ``forward`` ranges; ``backward`` ranges for the second part.
"""
from __future__ import annotations

from analysis.core import text
from analysis.core.classify import GEMM
from analysis.core.runs import runs_of, sorted_summaries
from analysis.questions.question import Evidence, Question
from analysis.questions.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.questions.shared import nsys_grid as grid
from analysis.questions.shared import trace_text
from analysis.trace.question_figures import nsys_b as trace_figures


def write_trace(record: dict, summary: dict) -> str:
    """(b)'s sentence for one trace (:func:`_trace_text`), with the warning for kernel time that
    ran inside CUDA graphs traced whole (:func:`~analysis.questions.shared.trace_text.whole_graphs_note`)."""
    return _trace_text(record, summary) + trace_text.whole_graphs_note(summary)


def _trace_text(record: dict, summary: dict) -> str:
    """(b)'s sentence for one trace: the forward leader named as an operation, and the leader
    when backward is counted too."""
    if record["top_forward_kernel"] is None:
        return trace_text.no_kernels_reason(summary, "forward") + ", so it cannot say which kernel leads the forward pass."
    layers = (summary.get("config") or {}).get("num_layers")
    top_kernel, category = record["top_forward_kernel"], record["top_forward_category"]
    sentence = (
        f"In the forward pass, {text.kernel_label(top_kernel)} ({category}) takes the most GPU time: "
        f"{text.ms(record['top_forward_ms_per_pass'])} per pass, {text.pct(record['top_forward_share'])} of forward "
        f"kernel time, over {text.plural(record['calls_per_forward_pass'], 'call')} in one forward pass"
        + _operation_text(category, record["calls_per_layer"], record["calls_outside_layers"], layers,
                          record["top_forward_precision"], record["top_forward_tensor_core"]) + "."
    )
    forward_compute = record.get("top_forward_compute_kernel")
    if forward_compute is not None:
        sentence += (f" {WAIT}; among the computing kernels {text.kernel_label(forward_compute)} leads the forward pass "
                     f"with {text.pct(record['top_forward_compute_share'])} of their time.")
    if trace_text.passes(summary, "backward") == 0:
        return sentence + " The trace has no measured backward pass, so forward and backward cannot be compared."
    share = text.pct(record["top_forward_backward_share"])
    compute = record.get("top_forward_backward_compute_kernel")
    computing = ""
    if compute is not None:
        who = ("the same one" if compute == forward_compute else "the forward leader" if compute == top_kernel
               else text.kernel_label(compute))
        computing = (f"among the computing kernels {who} leads with "
                     f"{text.pct(record['top_forward_backward_compute_share'])} of their time")
    if record["same_kernel"]:
        return sentence + (f" With the backward pass counted too, the same kernel leads with {share} of the time"
                           + (f"; {computing}." if computing else "."))
    sentence += (
        f" With the backward pass counted too, {text.kernel_label(record['top_forward_backward_kernel'])} "
        f"({record['top_forward_backward_category']}) leads instead with {share}; the forward leader ranks "
        f"{_ordinal(record['forward_leader_rank'])}."
    )
    if not computing:
        return sentence
    return sentence + (f" {WAIT}; {computing}." if forward_compute is None else f" {computing[0].upper()}{computing[1:]}.")


# Why a collective's time says little of the work, said once where one leads.
WAIT = "A collective's time holds this rank's wait for the others to reach it, so it says little of the work"


# The model's matmuls per transformer layer (cs336_profile/model.py): q, k, v, output, SwiGLU's w1,
# w2, w3, and attention's two products; the lm_head is the forward's only matmul outside the layers.
MATMULS_PER_LAYER = 9
PRECISION_UNITS = {"fp32": "fp32 on CUDA cores (FFMA, no TF32)", "tf32": "TF32 on tensor cores",
                   "bf16": "bf16 on tensor cores", "fp16": "fp16 on tensor cores", "fp8": "fp8 on tensor cores"}


def _operation_text(category: str, per_layer: int | None, outside: int | None, layers: int | None,
                    precision: str | None, tensor_core: bool) -> str:
    """What the leading kernel does: its calls per layer, and for a GEMM which matmuls and units."""
    if per_layer is None:
        return ""
    split = f": {per_layer} per layer × {layers} layers" + (f" + {outside}" if outside else "")
    if category == GEMM:
        split += (f", so it runs {per_layer} of each layer's {MATMULS_PER_LAYER} matmuls (cuBLAS picks one kernel per "
                  "shape)" + (" and the lm_head" if outside == 1 else ""))
        units = PRECISION_UNITS.get(precision or "", "on tensor cores" if tensor_core else "")
        return split + (f", computing in {units}" if units else "")
    if category == "copy_cast":
        return split + ": casts launched every pass (autocast casts the fp32 operands of every matmul, weights included)"
    return split


def _ordinal(rank: int) -> str:
    suffix = "th" if 10 <= rank % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(rank % 10, "th")
    return f"{rank}{suffix}"


KEYS = ("top_forward_kernel", "top_forward_category", "top_forward_precision", "calls_per_forward_pass",
        "calls_per_layer", "calls_outside_layers", "top_forward_ms_per_pass", "top_forward_share",
        "top_forward_backward_kernel", "top_forward_backward_share", "same_kernel")


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """One row per trace with forward kernels: its leading kernel as an operation, alone and with
    the backward pass; rows in like-for-like groups (:func:`~analysis.core.runs.run_group`)."""
    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "b", KEYS, "top_forward_kernel", sorts_kernels=True)
    if table.empty:
        return Unanswered("nsys-b", grid.forward_kernels_needed(summaries))
    for column in ("top_forward_kernel", "top_forward_backward_kernel"):
        if column in table:
            table[column] = table[column].map(grid.kernel_cell, na_action="ignore")
    return grid.finish("nsys-b", {"The forward pass's leading kernel": table.reset_index(drop=True)}, summaries,
                       sorts_kernels=True)


def _grid_text(record: ResultsAnswer) -> str:
    table = grid.first_table(record)
    parts = []
    for group, rows in table.groupby("group", sort=False):
        categories = rows["top_forward_category"].value_counts()
        lead = ("it" if len(rows) == 1 else f"all {len(rows)}" if categories.iloc[0] == len(rows)
                else f"{categories.iloc[0]} of {len(rows)}")
        sentence = (f"Among {runs_of(group)} ({text.plural(len(rows), 'trace')}), in {lead} the leading forward kernel "
                    f"is {text.with_article(categories.index[0])} kernel")
        leading = rows[rows["top_forward_category"] == categories.index[0]]  # the figures below are of these
        precisions = leading["top_forward_precision"].dropna() if "top_forward_precision" in leading else []
        if len(precisions):
            sentence += " computing in " + " or ".join(PRECISION_UNITS.get(p, p) for p in sorted(set(precisions)))
        calls = grid.span(leading["calls_per_forward_pass"], text.count)  # 0.4 calls a pass: a kernel of some batches
        sentence += (f"; it takes {grid.pct_span(leading['top_forward_share'])} of forward kernel time over "
                     f"{calls} call{'' if calls == '1' else 's'} per pass")
        if "calls_per_layer" in leading and leading["calls_per_layer"].notna().any():
            sentence += f" ({grid.span(leading['calls_per_layer'], '{:.0f}')} per layer)"
        others = [f"{text.with_article(category)} kernel "
                  f"({grid.pct_span(rows.loc[rows['top_forward_category'] == category, 'top_forward_share'])})"
                  for category in categories.index[1:]]
        if others:
            sentence += f"; in the other {len(rows) - len(leading)} it is " + " or ".join(others)
        if "same_kernel" in rows and rows["same_kernel"].notna().any():
            both = rows.dropna(subset=["same_kernel"])
            sentence += (f"; with the backward pass counted too, the same kernel still leads in "
                         f"{int(both['same_kernel'].sum())} of {len(both)}")
        parts.append(sentence + ".")
    return " ".join(parts)


QUESTION = Question(
    id="nsys-b", section="nsys_profile", title="The leading kernel",
    text="Which kernel takes the most GPU time in the forward pass, how many times does it run in one pass, "
         "and does it still lead with the backward pass?",
    needs=grid.NEEDS_TRACES,
    per_trace=trace_figures.figures, record=trace_figures.Record, write_trace=write_trace, summary_key="b", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("trace_bars", {
        "series": [["forward", "top_forward_share", 100], ["forward + backward", "top_forward_backward_share", 100]],
        "xlabel": "leading kernel's share of kernel time (%)", "title": "How much the leading kernel takes"}),
)
