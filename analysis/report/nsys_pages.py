"""The nsys questions (a–e) across every trace: one table row per trace from its summary's
per-trace answer, and an answer that reads the whole grid (a single trace keeps its own answer).
"""
from __future__ import annotations

import pandas as pd

from analysis.questions import nsys_text
from analysis.questions.results_files import ResultsAnswer, Unanswered, plural, size_order
from cs336_profile.contract import trace_stem

ANSWER_COLUMN = "trace_answer"  # the per-trace sentence, carried until the table is final


def run_label(summary: dict) -> str:
    """``small ctx128 train fp32 compiled`` from the config; the trace stem without one."""
    config = summary.get("config") or {}
    if not {"size", "context_length", "mode"} <= set(config):
        return trace_stem(summary["trace"])
    parts = [config["size"], f"ctx{config['context_length']}", config["mode"], config.get("dtype", "")]
    if config.get("compile"):
        parts.append("compiled")
    if config.get("attention") not in (None, "naive"):
        parts.append(config["attention"])
    return " ".join(p for p in parts if p)


def sorted_summaries(summaries: list[dict]) -> list[dict]:
    """Summaries with a config first, by size, context length, mode, dtype, compile; then the rest by name."""
    def key(summary: dict):
        config = summary.get("config") or {}
        order = size_order(pd.Series([config.get("size")])).iloc[0]
        return (not config, order, config.get("context_length") or 0, str(config.get("mode")),
                str(config.get("dtype")), bool(config.get("compile")), summary["trace"])
    return sorted(summaries, key=key)


def _rows(summaries: list[dict], question: str, keys: tuple[str, ...], present: str) -> pd.DataFrame:
    """One row per summary whose answer to ``question`` has ``present`` set: trace, config, ``keys``."""
    rows = []
    for summary in summaries:
        answer = summary["questions"][question]
        if answer.get(present) is None:
            continue
        rows.append({"trace": run_label(summary), **{k: answer.get(k) for k in keys}, ANSWER_COLUMN: answer["answer"]})
    table = pd.DataFrame(rows)
    return table.dropna(axis="columns", how="all") if not table.empty else table


def kernel_cell(demangled: str) -> str:
    """The short kernel name of the answers, without its Markdown backticks (a table cell)."""
    return nsys_text.kernel_label(demangled).strip("`")


def _span(values: pd.Series, fmt: str = "{:.2f}") -> str:
    """``low–high`` of a series (one value when they agree in the format)."""
    low, high = fmt.format(values.min()), fmt.format(values.max())
    return low if low == high else f"{low}–{high}"


def _pct_span(values: pd.Series) -> str:
    return _span(values * 100, "{:.1f}") + "%"


def nsys_answer(question: str, summaries: list[dict]) -> ResultsAnswer | Unanswered:
    """The grid-wide answer to nsys question ``question`` (``a``..``e``) from trace summaries."""
    summaries = sorted_summaries(summaries)
    return ANSWERS[question](summaries)


def _finish(question: str, grid_text: str, tables: dict[str, pd.DataFrame], summaries: list[dict]) -> ResultsAnswer:
    """The answer: a single trace's own sentence, else the grid sentence; tables without the sentences."""
    first = next(iter(tables.values()))
    text = grid_text if len(first) != 1 else f"{first['trace'].iloc[0]}: {first[ANSWER_COLUMN].iloc[0]}"
    tables = {title: table.drop(columns=ANSWER_COLUMN, errors="ignore") for title, table in tables.items()}
    return ResultsAnswer(question, text, tables, tuple(s["trace"] for s in summaries))


def _answer_a(summaries: list[dict]) -> ResultsAnswer | Unanswered:
    keys = ("nsys_forward_ms", "nsys_forward_gpu_ms", "python_forward_ms", "nsys_to_python_ratio")
    table = _rows(summaries, "a", keys, "nsys_forward_ms")
    if table.empty:
        return Unanswered("nsys-a", "a trace with measured `forward` ranges")
    text = f"Over {len(table)} traces nsys times the forward pass at {_span(table['nsys_forward_ms'])} ms."
    if "nsys_to_python_ratio" in table:
        ratio = table.dropna(subset=["nsys_to_python_ratio"])
        worst = ratio.loc[(ratio["nsys_to_python_ratio"] - 1).abs().idxmax()]
        text += (f" Against the Python timer of the same steps the ratio nsys/Python is "
                 f"{_span(ratio['nsys_to_python_ratio'], '{:.3f}')} (median {ratio['nsys_to_python_ratio'].median():.3f}), "
                 f"farthest from 1 for {worst['trace']}.")
        if len(ratio) < len(table):
            text += f" {plural(len(table) - len(ratio), 'trace')} carry no Python timings."
    return _finish("nsys-a", text, {"Forward pass: nsys and the Python timer": table}, summaries)


def _answer_b(summaries: list[dict]) -> ResultsAnswer | Unanswered:
    keys = ("top_forward_kernel", "top_forward_category", "calls_per_forward_pass", "top_forward_ms_per_pass",
            "top_forward_share", "top_forward_backward_kernel", "top_forward_backward_share", "same_kernel")
    table = _rows(summaries, "b", keys, "top_forward_kernel")
    if table.empty:
        return Unanswered("nsys-b", "a trace with kernels in measured `forward` ranges")
    for column in ("top_forward_kernel", "top_forward_backward_kernel"):
        if column in table:
            table[column] = table[column].map(kernel_cell, na_action="ignore")
    categories = table["top_forward_category"].value_counts()
    text = (f"In {categories.iloc[0]} of {len(table)} traces the forward pass's leading kernel is a "
            f"{categories.index[0]} kernel; the leading kernel takes {_pct_span(table['top_forward_share'])} of "
            f"forward kernel time over {_span(table['calls_per_forward_pass'], '{:,.0f}')} calls in one forward pass.")
    if "same_kernel" in table and table["same_kernel"].notna().any():
        both = table.dropna(subset=["same_kernel"])
        text += f" With the backward pass counted too, the same kernel still leads in {int(both['same_kernel'].sum())} " \
                f"of {len(both)} traces."
    return _finish("nsys-b", text, {"The forward pass's leading kernel": table}, summaries)


def _answer_c(summaries: list[dict]) -> ResultsAnswer | Unanswered:
    table = _rows(summaries, "c", ("non_gemm_share",), "non_gemm_share")
    if table.empty:
        return Unanswered("nsys-c", "a trace with kernels in measured `forward` ranges")
    by_trace = {run_label(s): s["questions"]["c"] for s in summaries if s["questions"]["c"].get("non_gemm_share") is not None}
    shares = pd.DataFrame([{f"{row['category']}_share": row["share"] for row in by_trace[label]["non_gemm_categories_forward"]}
                           for label in table["trace"]], index=table.index)
    table = pd.concat([table, shares.fillna(0.0)], axis=1)
    kernels = pd.DataFrame([{"trace": label, **row} for label, answer in by_trace.items()
                            for row in answer["top_non_gemm_forward"]])
    leaders = shares.idxmax(axis=1).str.removesuffix("_share").value_counts() if not shares.empty else pd.Series(dtype=int)
    text = f"Kernels other than matrix multiplications take {_pct_span(table['non_gemm_share'])} of forward kernel " \
           f"time over {len(table)} traces"
    text += f"; the largest of them is {leaders.index[0]} in {leaders.iloc[0]} traces." if not leaders.empty else "."
    tables = {"Non-matmul share of forward kernel time, by category": table}
    if not kernels.empty:
        kernels["kernel"] = kernels["kernel"].map(kernel_cell)
        tables["Non-matmul kernels above 1% of forward kernel time"] = kernels
    return _finish("nsys-c", text, tables, summaries)


def _answer_d(summaries: list[dict]) -> ResultsAnswer | Unanswered:
    keys = ("gemm_share_forward", "gemm_share_forward_backward", "gemm_share_train_step")
    table = _rows(summaries, "d", keys, "gemm_share_forward")
    if table.empty:
        return Unanswered("nsys-d", "a trace with kernels in measured `forward` ranges")
    categories = pd.DataFrame([{"trace": run_label(s), **row} for s in summaries
                               for row in s["questions"]["d"].get("category_shares") or []])
    categories = categories.rename(columns={"change": "change_share"})
    text = f"Matrix multiplications take {_pct_span(table['gemm_share_forward'])} of forward kernel time"
    train = table.dropna(subset=["gemm_share_train_step"]) if "gemm_share_train_step" in table else table.iloc[:0]
    if not train.empty:
        text += f" and {_pct_span(train['gemm_share_train_step'])} of a full training step ({plural(len(train), 'training trace')})."
        change = categories.dropna(subset=["change_share"]) if "change_share" in categories else categories.iloc[:0]
        if not change.empty:
            mean_change = change[change["category"] != "gemm"].groupby("category")["change_share"].mean()
            riser = mean_change.idxmax()
            text += f" The category that gains most in training is {riser} (+{mean_change.max() * 100:.1f} points on average)."
    else:
        text += " (no trace of a full training step to compare)."
    tables = {"Matmul share of kernel time": table}
    if not categories.empty:
        tables["Every category, forward against the training step"] = categories
    return _finish("nsys-d", text, tables, summaries)


def _answer_e(summaries: list[dict]) -> ResultsAnswer | Unanswered:
    keys = ("softmax_ms_per_pass", "matmul_ms_per_pass", "softmax_kernels_per_pass", "matmul_kernels_per_pass",
            "runtime_ratio", "flops_ratio")
    table = _rows(summaries, "e", keys, "runtime_ratio")
    if table.empty:
        return Unanswered("nsys-e", "a trace with `computing softmax` and matmul ranges inside measured forward passes")
    text = f"Over {len(table)} traces the softmax takes {_span(table['runtime_ratio'])}× the GPU time of attention's " \
           f"two matmuls"
    if "flops_ratio" in table and table["flops_ratio"].notna().any():
        per_flop = (table["runtime_ratio"] / table["flops_ratio"]).dropna()
        table["per_flop_slowdown_ratio"] = table["runtime_ratio"] / table["flops_ratio"]
        text += f", while its FLOPs are only {_span(table['flops_ratio'], '{:.3f}')}× theirs: per FLOP the softmax is " \
                f"{_span(per_flop, '{:.0f}')}× slower, because its kernels read and write the whole score matrix " \
                "for a few operations per element."
    else:
        text += "."
    return _finish("nsys-e", text, {"Attention in the forward pass: softmax against matmuls": table}, summaries)


ANSWERS = {"a": _answer_a, "b": _answer_b, "c": _answer_c, "d": _answer_d, "e": _answer_e}
