"""Two trace summaries side by side: what moved from run A to run B, and what the numbers say
about why (config changes, tensor-core use, kernel counts, kernels that appeared or vanished).

Works on summaries (:mod:`analysis.trace.summary`), so cached results diff without reloading traces.
Figures are per pass of each summary's ``overall`` scope: per measured step, or per whole
capture for traces without step ranges.
"""
from __future__ import annotations

import pandas as pd

from analysis.compare.rank_diff import rank_diff
from analysis.core import text
from analysis.questions.ddp_b import rank_rows

TOP_MOVED_KERNELS = 10
# Tensor-core shares that differ by less than this are not worth a sentence.
TENSOR_CORE_SHIFT = 0.05
# Kernel counts per pass that differ by less than this fraction are not worth a sentence.
KERNEL_COUNT_SHIFT = 0.05
CONFIG_KEYS_IGNORED = frozenset({"gpu_name", "seed", "warmup_steps", "measured_steps"})


def diff_summaries(a: dict, b: dict) -> dict:
    """What changed from summary ``a`` to summary ``b``: overall, per phase, per category, per
    kernel (the :data:`TOP_MOVED_KERNELS` that moved most), the config keys that differ,
    ``why``, a few sentences generated from those numbers, and ``ranks``, the per-rank comparison
    of two multi-GPU traces (:func:`analysis.compare.rank_diff.rank_diff`, else None)."""
    overall_a, overall_b = a["overall"], b["overall"]
    categories = _categories(overall_a, overall_b)
    kernels = _kernels(overall_a, overall_b)
    config_changes = _config_changes(a.get("config"), b.get("config"))
    step_a, step_b = _step_ms(a), _step_ms(b)
    overall = {
        "step_source": _step_source(a, b),
        "a_step_ms_per_pass": step_a,
        "b_step_ms_per_pass": step_b,
        "a_idle_share": _idle_share(a["phases"]),
        "b_idle_share": _idle_share(b["phases"]),
        "scope_a": overall_a["scope"],
        "scope_b": overall_b["scope"],
        "a_kernel_ms_per_pass": overall_a["kernel_ms_per_pass"],
        "b_kernel_ms_per_pass": overall_b["kernel_ms_per_pass"],
        "delta_ms_per_pass": overall_b["kernel_ms_per_pass"] - overall_a["kernel_ms_per_pass"],
        "b_over_a_ratio": _ratio(overall_b["kernel_ms_per_pass"], overall_a["kernel_ms_per_pass"]),
        "a_kernels_per_pass": overall_a["kernels_per_pass"],
        "b_kernels_per_pass": overall_b["kernels_per_pass"],
        "a_tensor_core_share": overall_a["tensor_core_share"],
        "b_tensor_core_share": overall_b["tensor_core_share"],
    }
    # Faster or slower is judged on the step's wall time where both traces have phase ranges
    # (they end with a synchronize): summed kernel time can fall while the step gets slower.
    judged = (step_a, step_b) if step_a and step_b else \
        (overall_a["kernel_ms_per_pass"], overall_b["kernel_ms_per_pass"])
    ranks_a, ranks_b = _rank_count(a), _rank_count(b)
    # Fewer ranks do less work per step: that is a lost rank, not a speed-up, so no verdict.
    overall["faster"] = judged[1] < judged[0] if ranks_a == ranks_b else None
    ranks = rank_diff(a, b)
    within_noise = ranks is not None and not any(row["beyond_spread"] for row in ranks["rows"])
    overall["headline"] = ("What changed" if overall["faster"] is None else
                           "Why the step spans do not measurably differ" if within_noise else
                           f"Why it got {'faster' if overall['faster'] else 'slower'}")
    return {
        "a": a["trace"],
        "b": b["trace"],
        "config_changes": config_changes,
        "overall": overall,
        "phases": _phases(a["phases"], b["phases"]),
        "categories": categories.to_dict("records"),
        "kernels": kernels.head(TOP_MOVED_KERNELS).to_dict("records"),
        "why": _ranks_note(ranks_a, ranks_b) + _why(
            a, b, overall, categories, kernels, config_changes,
            max(max(r["a_step_gpu_span_spread_ms"], r["b_step_gpu_span_spread_ms"]) for r in ranks["rows"])
            if within_noise else None),
        "ranks": ranks,
    }


def _rank_count(summary: dict) -> int:
    """How many ranks (process and GPU) ran measured kernels in a summary's trace."""
    return len((summary.get("communication") or {}).get("ranks") or [])


def _ranks_note(ranks_a: int, ranks_b: int) -> str:
    """The diff's first sentence when A and B hold different numbers of ranks, else nothing."""
    if ranks_a == ranks_b:
        return ""
    return (f"A holds {text.plural(ranks_a, 'rank')} and B {text.plural(ranks_b, 'rank')}: the traces did not "
            "capture the same processes, so the figures below compare different work and say nothing of speed. ")


def _step_ms(summary: dict) -> float | None:
    """Time of a measured step: of a multi-GPU trace, its ranks' mean step GPU span (the whole
    step range, so a gradient synchronisation after backward counts); else the sum of its phases'
    CPU spans; None without either."""
    ranks = _ranks(summary)
    if ranks:
        return sum(rank["step_gpu_span_ms"] for rank in ranks) / len(ranks)
    phases = summary["phases"]
    return sum(p["cpu_span_ms_per_pass"] for p in phases.values()) if phases else None


def _ranks(summary: dict) -> list[dict]:
    """The per-rank rows of a trace of two or more ranks with a measured step, else none."""
    rows = rank_rows(summary) if summary.get("communication") else []
    return rows if len(rows) >= 2 else []


def _step_source(a: dict, b: dict) -> str:
    """What the step time of the two traces is, as the headline names it."""
    if _ranks(a) and _ranks(b):
        return "step GPU span (mean over ranks, communication included)"
    return "measured step"


def _idle_share(phases: dict) -> float | None:
    """Share of the phases' GPU span in which no GPU operation ran."""
    span = sum(p["gpu_span_ms_per_pass"] for p in phases.values())
    return sum(p["idle_ms_per_pass"] for p in phases.values()) / span if span else None


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def _config_changes(config_a: dict | None, config_b: dict | None) -> list[dict]:
    if not config_a or not config_b:
        return []
    keys = sorted((set(config_a) | set(config_b)) - CONFIG_KEYS_IGNORED)
    return [{"key": k, "a": config_a.get(k), "b": config_b.get(k)} for k in keys if config_a.get(k) != config_b.get(k)]


def _phases(phases_a: dict, phases_b: dict) -> list[dict]:
    rows = []
    for phase in [p for p in phases_a if p in phases_b]:
        before, after = phases_a[phase], phases_b[phase]
        rows.append(
            {
                "phase": phase,
                "a_kernel_ms_per_pass": before["kernel_ms_per_pass"],
                "b_kernel_ms_per_pass": after["kernel_ms_per_pass"],
                "delta_ms_per_pass": after["kernel_ms_per_pass"] - before["kernel_ms_per_pass"],
                "a_gpu_span_ms_per_pass": before["gpu_span_ms_per_pass"],
                "b_gpu_span_ms_per_pass": after["gpu_span_ms_per_pass"],
                "a_kernels_per_pass": before["kernels_per_pass"],
                "b_kernels_per_pass": after["kernels_per_pass"],
            }
        )
    return rows


def _categories(overall_a: dict, overall_b: dict) -> pd.DataFrame:
    """Category ms per pass in A and B (0 where absent), largest absolute change first."""
    table = pd.DataFrame(
        {
            "a_ms_per_pass": pd.Series(overall_a["by_category_ms_per_pass"], dtype=float),
            "b_ms_per_pass": pd.Series(overall_b["by_category_ms_per_pass"], dtype=float),
        }
    ).fillna(0.0)
    table["delta_ms_per_pass"] = table["b_ms_per_pass"] - table["a_ms_per_pass"]
    order = table["delta_ms_per_pass"].abs().sort_values(ascending=False, kind="stable").index
    return table.loc[order].rename_axis("category").reset_index()


def _kernels(overall_a: dict, overall_b: dict) -> pd.DataFrame:
    """Per-kernel ms per pass in A and B, largest absolute change first.

    A kernel missing from one side's ``top_kernels`` counts 0 there when that list holds every
    distinct kernel of the trace, and is unknown (row left out) when the list was cut.
    """
    sides = {}
    for side, overall in (("a", overall_a), ("b", overall_b)):
        listed = pd.DataFrame(overall["top_kernels"], columns=["kernel", "category", "calls_per_pass", "ms_per_pass"])
        complete = len(listed) >= overall["distinct_kernels"]
        sides[side] = (listed.set_index("kernel"), complete)
    (a, a_complete), (b, b_complete) = sides["a"], sides["b"]
    table = pd.DataFrame(
        {
            "category": a["category"].combine_first(b["category"]),
            "a_ms_per_pass": a["ms_per_pass"],
            "b_ms_per_pass": b["ms_per_pass"],
            "a_calls_per_pass": a["calls_per_pass"],
            "b_calls_per_pass": b["calls_per_pass"],
        }
    )
    for side, complete in (("a", a_complete), ("b", b_complete)):
        if complete:
            table[[f"{side}_ms_per_pass", f"{side}_calls_per_pass"]] = table[
                [f"{side}_ms_per_pass", f"{side}_calls_per_pass"]
            ].fillna(0.0)
    table = table.dropna()
    table["delta_ms_per_pass"] = table["b_ms_per_pass"] - table["a_ms_per_pass"]
    order = table["delta_ms_per_pass"].abs().sort_values(ascending=False, kind="stable").index
    return table.loc[order].rename_axis("kernel").reset_index()


def _why(a: dict, b: dict, overall: dict, categories: pd.DataFrame, kernels: pd.DataFrame, config_changes: list[dict],
         noise_ms: float | None = None) -> str:
    """The sentences of a diff, computed from its numbers; ``noise_ms``: the step-to-step spread
    that a multi-GPU pair's step change stays within (None when it exceeds it or is unknown)."""
    scopes = {overall["scope_a"], overall["scope_b"]}
    unit = ("measured step" if scopes == {"measured steps"} else
            "pass (profiling window)" if scopes == {"profiling window"} else "pass (whole capture)")
    total_a, total_b = overall["a_kernel_ms_per_pass"], overall["b_kernel_ms_per_pass"]
    step_a, step_b = overall["a_step_ms_per_pass"], overall["b_step_ms_per_pass"]
    sentences = []
    if step_a and step_b:
        sentences.append(f"A {overall['step_source']} takes {text.ms(step_b)} in B ({b['trace']}) against "
                         f"{text.ms(step_a)} in A ({a['trace']}), {_signed_pct(step_b / step_a - 1)}"
                         + (f", within the step-to-step spread of up to {text.ms(noise_ms)}, so no measured difference."
                            if noise_ms is not None else "."))
    sentences.append(
        f"B spends {text.ms(total_b)} of kernel time per {unit} against {text.ms(total_a)} in A"
        + (f", {_signed_pct(total_b / total_a - 1)}." if total_a else "."))
    idle_a, idle_b = overall["a_idle_share"], overall["b_idle_share"]
    overlapped = [sum(rank["overlapped_communication_ms"] for rank in _ranks(side)) for side in (a, b)]
    if step_a and step_b and (step_b > step_a) != (total_b > total_a) and _ranks(a):
        sentences.append(
            f"Kernel time and step time move apart because summed kernel time counts communication kernels that run "
            f"beside compute: {text.ms(overlapped[0])} → {text.ms(overlapped[1])} of them overlapped, over the ranks.")
    elif step_a and step_b and (step_b > step_a) != (total_b > total_a) and idle_b is not None:
        sentences.append(
            f"Kernel time and step time move apart because the GPU waits for launches: it is idle "
            f"for {text.pct(idle_b)} of B's phases against {text.pct(idle_a)} of A's.")
    if config_changes:
        listed = ", ".join(f"{c['key']} ({c['a']} → {c['b']})" for c in config_changes)
        sentences.append(f"The runs differ in {listed}.")
    delta_total = overall["delta_ms_per_pass"]
    if len(categories) and delta_total:
        top = categories.iloc[0]
        sentences.append(
            f"The largest change is {top['category']}: {text.ms(top['a_ms_per_pass'])} → "
            f"{text.ms(top['b_ms_per_pass'])} ({text.signed_ms(top['delta_ms_per_pass'])})."
        )
    moved = kernels[(kernels["a_calls_per_pass"] > 0) & (kernels["b_calls_per_pass"] > 0)]
    if len(moved):
        top = moved.iloc[0]
        per_call_a = top["a_ms_per_pass"] / top["a_calls_per_pass"]
        per_call_b = top["b_ms_per_pass"] / top["b_calls_per_pass"]
        sentences.append(
            f"Of the kernels both runs launch, {text.kernel_label(top['kernel'])} moved most: it runs "
            f"{text.count(top['a_calls_per_pass'])} → {text.count(top['b_calls_per_pass'])} times per {unit} "
            f"at {text.ms(per_call_a)} → {text.ms(per_call_b)} per call ({_signed_pct(per_call_b / per_call_a - 1)})."
        )
    share_a, share_b = overall["a_tensor_core_share"], overall["b_tensor_core_share"]
    if share_a is not None and share_b is not None and abs(share_b - share_a) >= TENSOR_CORE_SHIFT:
        sentences.append(f"Tensor-core kernels go from {text.pct(share_a)} to {text.pct(share_b)} of kernel time.")
    count_a, count_b = overall["a_kernels_per_pass"], overall["b_kernels_per_pass"]
    if count_a and abs(count_b / count_a - 1) >= KERNEL_COUNT_SHIFT:
        sentences.append(
            f"B launches {text.count(count_b)} kernels per {unit} against {text.count(count_a)} "
            f"(mean kernel {_mean_us(total_b, count_b)} against {_mean_us(total_a, count_a)})."
        )
    appeared = kernels[(kernels["a_ms_per_pass"] == 0) & (kernels["b_ms_per_pass"] > 0)]
    if len(appeared):
        new = appeared.iloc[0]
        sentences.append(
            f"{text.kernel_label(new['kernel'])} ({new['category']}) appears in B with {text.ms(new['b_ms_per_pass'])}."
        )
    return " ".join(sentences)


def _signed_pct(fraction: float) -> str:
    return ("+" if fraction >= 0 else "−") + text.pct(abs(fraction))


def _mean_us(total_ms: float, count: float) -> str:
    return f"{1e3 * total_ms / count:.1f} µs" if count else "n/a"
