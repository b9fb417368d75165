"""nsys_profile (e): inside self-attention in the forward pass, the softmax's GPU time against
the two matmuls', and against the ratio of their FLOPs.

- Softmax time: the summed time of the kernels launched inside the ``computing softmax`` ranges.
- Matmul time: the GEMM kernels launched inside the ``computing attention scores`` and ``final
  matmul`` ranges (``matmul_gemm_ms_per_pass``; ``runtime_ratio`` = softmax / this). The ranges
  hold more than the GEMMs (the scores' scaling and masking, copies and casts): their whole time
  is ``matmul_range_ms_per_pass``, with the other kernels by category beside it.
- FLOPs: per score element the softmax does 5 (max, subtract, exp, sum, divide) and the two
  matmuls 2·d_head each, so ``flops_ratio`` = 5 / (4·d_head), from the run's shapes.

All over measured forward passes, per pass. Needs: those NVTX sub-ranges (default names; see
:class:`analysis.core.phases.RangeNames`) inside measured ``forward`` ranges; the run's config for the
FLOPs. A compiled model keeps no sub-ranges: its fused softmax kernels (category ``softmax``) are
counted instead, so the compiled and the eager softmax compare.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.core import text
from analysis.core.flops import SOFTMAX_FLOPS_PER_SCORE
from analysis.core.runs import ONE_GPU_GROUPS, runs_of, sorted_summaries
from analysis.questions.question import Evidence, Question
from analysis.questions.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.questions.shared import nsys_grid as grid
from analysis.trace.question_figures import nsys_e as trace_figures

if TYPE_CHECKING:
    import pandas as pd


def write_trace(record: dict, summary: dict) -> str:
    """(e)'s sentence for one trace: the softmax against the matmuls in time and FLOPs, the fused
    softmax of a compiled trace, or why the trace cannot split attention."""
    if record["missing_parts"]:
        return _fused_sentence(record) if record["softmax_source"] else _no_parts_sentence(summary, record["missing_parts"])
    return _sentence(record)


def _no_parts_sentence(summary: dict, missing: list[str]) -> str:
    """Why (e) cannot split attention, in the trace's own terms."""
    if summary["structure"]["fused_attention"]:
        return ("The model calls `torch.nn.functional.scaled_dot_product_attention`: softmax and both matmuls run "
                "inside one fused attention kernel, so this trace cannot split them; to answer (e), profile an "
                "attention written out (scores matmul, softmax, value matmul) with an NVTX range around each part.")
    return ("No kernels were launched inside attention-part ranges (" + ", ".join(f"`{region}`" for region in missing)
            + " or names like them) during measured forward passes, and no softmax kernel ran outside the loss, so "
              "this trace cannot split attention into softmax and matmuls; add an NVTX range around each part "
              "(e.g. `attention_scores`, `attention_softmax`, `attention_value`).")


def _per_call(record: dict) -> str:
    """``5 kernels per attention call`` when the calls per pass are known and divide evenly."""
    calls = record["attention_calls_per_pass"]
    per_call = record["softmax_kernels_per_pass"] / calls if calls else None
    if per_call is None or not float(per_call).is_integer():
        return text.plural(record["softmax_kernels_per_pass"], "kernel") + " per pass"
    return text.plural(per_call, "kernel") + " per attention call"


def _flops_text(record: dict) -> str:
    if record["flops_ratio"] is None:
        return " The trace carries no model shapes, so the FLOPs ratio is unknown."
    return (f" Per score element the softmax does {record['softmax_flops_per_score']} FLOPs (max, subtract, exp, "
            f"sum, divide) and the two matmuls 2·d_head each, 4 × {record['d_head']} = "
            f"{record['matmul_flops_per_score']}: a FLOPs ratio of {record['flops_ratio']:.4f}.")


def _sentence(record: dict) -> str:
    labels = ", ".join(f"`{k['label']}`" for k in record["softmax_kernels"][:8])
    gemm_ms, ratio = record["matmul_gemm_ms_per_pass"], record["runtime_ratio"]
    sentence = (f"Inside attention the softmax takes {text.ms(record['softmax_ms_per_pass'])} of GPU time per forward "
                f"pass, as {_per_call(record)} ({labels}), against {text.ms(gemm_ms)} for the "
                f"{text.plural(record['matmul_gemm_kernels_per_pass'], 'GEMM kernel')} of the two matmuls")
    sentence += f": {ratio:.2f}× their time." if ratio is not None else "."
    other = ", ".join(f"{o['category']} {text.ms(o['ms_per_pass'])}" for o in record["matmul_range_other"])
    sentence += (f" The two matmul ranges hold {text.ms(record['matmul_range_ms_per_pass'])} in "
                 f"{text.plural(record['matmul_range_kernels_per_pass'], 'kernel')}"
                 + (f" (besides the GEMMs: {other})" if other else "")
                 + f"; against all of it the softmax is {record['range_runtime_ratio']:.2f}×.")
    sentence += _flops_text(record)
    if record["flops_ratio"] is not None and ratio is not None:
        per_flop = ratio / record["flops_ratio"]
        sentence += (" Per FLOP the softmax is "
                     + (f"{per_flop:.0f}× slower" if per_flop >= 1 else f"{1 / per_flop:.0f}× faster")
                     + _cause(record))
    return sentence


def _cause(record: dict) -> str:
    """Why the softmax is slow per FLOP, from its kernels: how many separate passes over the score
    matrix it makes per attention call and how few FLOPs each pass does per element."""
    calls = record["attention_calls_per_pass"]
    per_call = record["softmax_kernels_per_pass"] / calls if calls else None
    if not per_call or per_call < 2:
        return "."
    return (f": it runs as {text.count(per_call)} separate kernels per attention call, each reading and writing "
            f"score-sized data for {text.plural(round(SOFTMAX_FLOPS_PER_SCORE / per_call, 1), 'FLOP')} per element, so its time "
            "follows memory traffic, not FLOPs.")


def _fused_sentence(record: dict) -> str:
    labels = ", ".join(f"`{k['label']}`" for k in record["softmax_kernels"][:3])
    return (f"This trace has no attention sub-ranges (a compiled model keeps none); its fused softmax kernels "
            f"({labels}) take {text.ms(record['softmax_ms_per_pass'])} per forward pass as "
            f"{_per_call(record)}." + _flops_text(record))


KEYS = ("softmax_ms_per_pass", "matmul_gemm_ms_per_pass", "matmul_range_ms_per_pass", "softmax_kernels_per_pass",
        "matmul_gemm_kernels_per_pass", "matmul_range_kernels_per_pass", "runtime_ratio", "range_runtime_ratio",
        "flops_ratio")


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """Per trace with the sub-ranges: softmax against the attention GEMMs and against the ranges,
    the FLOPs ratio and the per-FLOP slowdown; then compiled traces' fused softmax beside the
    eager trace of the same configuration."""
    summaries = sorted_summaries(evidence.summaries)
    config_keys = ("size", "context_length", "mode", "dtype", "compile")
    table = grid.rows(summaries, "e", KEYS + ("runtime_ratio_pass_min", "runtime_ratio_pass_max",
                                              "attention_calls_per_pass"), "runtime_ratio", config_keys)
    if table.empty:
        return Unanswered("nsys-e", "a trace with `computing softmax` and matmul ranges inside measured forward passes")
    if "flops_ratio" in table and table["flops_ratio"].notna().any():
        table["per_flop_slowdown_ratio"] = table["runtime_ratio"] / table["flops_ratio"]
    trend = _context_trend(table)
    table = table.drop(columns=["size", "context_length", "mode", "dtype", "compile"], errors="ignore")
    tables = {"Attention in the forward pass: softmax against the GEMMs of the two matmuls": table}
    fused = grid.rows(summaries, "e", ("softmax_ms_per_pass", "softmax_kernels_per_pass", "softmax_source"),
                      "softmax_ms_per_pass", config_keys)
    if not fused.empty and "softmax_source" in fused:
        pairs = _compiled_pairs(fused)
        if not pairs.empty:
            tables["Compiled against eager: the softmax per forward pass"] = pairs
    record = grid.finish("nsys-e", tables, summaries)
    if trend:
        record.numbers["context_trend"] = trend
    return record


def _compiled_pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """Each compiled trace's fused softmax beside the eager trace of the same size, context length,
    mode and dtype."""
    import pandas as pd

    keys = ["size", "context_length", "mode", "dtype"]
    if not set(keys) <= set(rows):
        return pd.DataFrame()
    rows = rows[rows["group"].isin(ONE_GPU_GROUPS)]  # a multi-GPU run is no eager twin
    is_fused = rows["softmax_source"] == "fused kernels"
    columns = keys + ["trace", "softmax_ms_per_pass", "softmax_kernels_per_pass"]
    pairs = rows.loc[is_fused, columns].merge(rows.loc[~is_fused, columns], on=keys, suffixes=("_compiled", "_eager"))
    if pairs.empty:
        return pairs
    pairs["eager_over_compiled_ratio"] = pairs["softmax_ms_per_pass_eager"] / pairs["softmax_ms_per_pass_compiled"]
    return pairs.rename(columns={"trace_compiled": "trace", "trace_eager": "eager_trace"})


def _grid_text(record: ResultsAnswer) -> str:
    table = grid.first_table(record)
    parts = []
    for name, group in table.groupby("group", sort=False):
        sentence = (f"Among {runs_of(name)} ({text.plural(len(group), 'trace')}) the softmax takes "
                    f"{grid.span(group['runtime_ratio'])}× the time of the GEMMs of attention's two matmuls "
                    f"({grid.span(group['range_runtime_ratio'])}× the whole matmul ranges, which also hold the "
                    "scores' scaling and masking, copies and casts)")
        if "per_flop_slowdown_ratio" in group and group["per_flop_slowdown_ratio"].notna().any():
            sentence += (f", while its FLOPs are {grid.span(group['flops_ratio'], '{:.4f}')}× theirs: per FLOP it is "
                         f"{grid.span(group['per_flop_slowdown_ratio'], '{:.0f}')}× slower")
        parts.append(sentence + ".")
    parts += [_kernels_per_call_text(table), _noise_text(table), record.numbers.get("context_trend", "")]
    pairs = record.tables.get("Compiled against eager: the softmax per forward pass")
    if pairs is not None:
        for row in pairs.itertuples():
            parts.append(f"Compiled, {row.trace} runs its softmax as {text.count(row.softmax_kernels_per_pass_compiled)} "
                         f"fused kernels per forward pass in {text.ms(row.softmax_ms_per_pass_compiled)}, against "
                         f"{text.count(row.softmax_kernels_per_pass_eager)} kernels and "
                         f"{text.ms(row.softmax_ms_per_pass_eager)} eager: {row.eager_over_compiled_ratio:.1f}× less, "
                         "which is what fewer passes over the score matrix buy.")
    return " ".join(part for part in parts if part)


def _kernels_per_call_text(table: pd.DataFrame) -> str:
    """The evidence for why the softmax is slow per FLOP: its kernels per attention call, per group."""
    if "attention_calls_per_pass" not in table or table["attention_calls_per_pass"].isna().all():
        return ""
    per_call = table["softmax_kernels_per_pass"] / table["attention_calls_per_pass"]
    parts = [f"{grid.span(per_call[rows.index].dropna(), '{:.0f}')} in {name}"
             for name, rows in table.groupby("group", sort=False) if per_call[rows.index].notna().any()]
    return ("Its time follows memory traffic, not FLOPs: eager attention runs the softmax as separate kernels per "
            f"attention call ({', '.join(parts)}), each a pass reading and writing score-sized data for about one "
            "FLOP per element.")


def _noise_text(table: pd.DataFrame) -> str:
    """How far single passes stray from a trace's ratio, against the smallest gap from 1."""
    if "runtime_ratio_pass_max" not in table or table["runtime_ratio_pass_max"].isna().all():
        return ""
    stray = ((table["runtime_ratio_pass_max"] - table["runtime_ratio_pass_min"]) / table["runtime_ratio"]).max()
    closest = (table["runtime_ratio"] - 1).abs().min()
    verdict = ("so every trace's softmax-against-GEMM verdict holds pass by pass" if stray < closest else
               "so where the ratio is that close to 1 the data cannot say which is slower")
    return (f"Single passes of one trace give ratios at most {text.pct(stray)} apart; the ratio closest to 1 is "
            f"{text.pct(closest)} away from it, {verdict}.")


def _context_trend(table: pd.DataFrame) -> str:
    """The ratio against context length, per size, group and mode traced at more than one."""
    keys = [k for k in ("size", "group", "mode") if k in table]
    if "context_length" not in table or len(keys) < 3:
        return ""
    trends = []
    for (size, name, mode), group in table.dropna(subset=["context_length", "size", "mode"]).groupby(keys, sort=False):
        if group["context_length"].nunique() < 2:
            continue
        group = group.sort_values("context_length")
        first, last = group.iloc[0], group.iloc[-1]
        trends.append(f"{size} {mode} {name} {first['runtime_ratio']:.2f}× at {int(first['context_length'])} → "
                      f"{last['runtime_ratio']:.2f}× at {int(last['context_length'])}")
    return ("With context length the ratio moves: " + "; ".join(trends) + ".") if trends else ""


QUESTION = Question(
    id="nsys-e", section="nsys_profile", title="Softmax against matmuls in attention",
    text="Inside self-attention, softmax time against the two matmuls' time, compared with their FLOPs ratio.",
    needs=grid.NEEDS_TRACES,
    per_trace=trace_figures.figures, record=trace_figures.Record, write_trace=write_trace, summary_key="e", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("trace_bars", {
        "series": [["time (softmax / GEMMs)", "runtime_ratio", 1], ["time (softmax / matmul ranges)", "range_runtime_ratio", 1],
                   ["FLOPs (softmax / matmuls)", "flops_ratio", 1]],
        "xlabel": "ratio (log scale)", "xscale": "log", "title": "Softmax against the attention matmuls"}),
)
