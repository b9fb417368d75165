"""The figures of nsys_profile (e) for one trace: inside self-attention in the forward pass, the
softmax's GPU time against the two matmuls' (their GEMM kernels, and their whole ranges), and the
ratio of their FLOPs from the run's shapes.

Without the three attention sub-ranges (:data:`analysis.core.structure.REGIONS`) in measured
forward passes the time figures are null (``missing_parts`` names the parts without kernels); a
compiled trace still gives its fused softmax kernels (category ``softmax``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypedDict

from analysis.core.classify import GEMM
from analysis.core.flops import SOFTMAX_FLOPS_PER_SCORE
from analysis.core.kernel_names import kernel_label
from analysis.trace.summary_schema import STORED_ONLY, WRITTEN

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from analysis.trace.nsys_inputs import NsysInputs

SOFTMAX_CATEGORY = "softmax"


class SoftmaxKernel(TypedDict):
    kernel: str
    label: str
    calls_per_pass: float
    ms_per_pass: float


class RangeOther(TypedDict):
    category: str
    kernels_per_pass: float
    ms_per_pass: float


class Record(TypedDict):
    """The per-trace record of (e), in the summary's ``questions["e"]``."""

    softmax_ms_per_pass: float | None
    softmax_kernels_per_pass: float | None
    softmax_kernels: list[SoftmaxKernel]
    softmax_source: str | None  # "ranges" (eager sub-ranges) or "fused kernels" (compiled)
    attention_calls_per_pass: int | None
    matmul_gemm_ms_per_pass: float | None
    matmul_gemm_kernels_per_pass: float | None
    matmul_range_ms_per_pass: float | None
    matmul_range_kernels_per_pass: float | None
    matmul_range_other: list[RangeOther]
    runtime_ratio: float | None
    runtime_ratio_pass_min: float | None  # the ratio of single passes: the noise of the figure
    runtime_ratio_pass_max: float | None
    range_runtime_ratio: float | None
    d_head: int | None
    softmax_flops_per_score: int
    matmul_flops_per_score: int | None
    flops_ratio: float | None
    missing_parts: Annotated[list[str], STORED_ONLY]  # attention parts with no kernels in their ranges
    answer: Annotated[str, WRITTEN]


# The loss's log-softmax (``cunn_SoftMaxForward<…LogSoftMaxForwardEpilogue>``, ``log_softmax``) is not
# attention's softmax, even when the loss runs inside the forward range.
LOSS_SOFTMAX = r"(?i)log_?softmax"


def _is_loss_softmax(names: pd.Series) -> np.ndarray:
    """Whether each kernel name is a loss's log-softmax."""
    return names.astype(str).str.contains(LOSS_SOFTMAX).to_numpy(dtype=bool)


# The columns of the forward's kernel rows that the per-pass ratio reads (the other figures read groups).
PASS_COLUMNS = ("region", "category", "phase_range_id", "dur_ns")


def figures(inputs: NsysInputs, phases: dict[str, dict]) -> dict:
    """(e)'s record for one trace (less its sentence); ``phases`` is not read."""
    from analysis.core.structure import REGIONS

    scores_part, softmax_part, final_part = REGIONS
    kernels = inputs.kernel_groups(("forward",))
    passes = max(inputs.passes("forward"), 1)
    record = _empty(inputs.run.config, inputs.op_d_head)
    missing = [region for region in (softmax_part, scores_part, final_part)
               if not (kernels["region"] == region).any()]
    if missing:
        fused = kernels[(kernels["category"] == SOFTMAX_CATEGORY).to_numpy() & ~_is_loss_softmax(kernels["demangled_name"])]
        if len(fused):
            record.update(_softmax_figures(fused, passes, "fused kernels"))
        return record | {"missing_parts": missing}
    softmax = kernels[kernels["region"] == softmax_part]
    ranges = kernels[kernels["region"].isin((scores_part, final_part))]
    gemms = ranges[ranges["category"] == GEMM]
    others = ranges[ranges["category"] != GEMM]
    record.update(_softmax_figures(softmax, passes, "ranges"))
    record.update(
        matmul_gemm_ms_per_pass=gemms["dur_ns"].sum() / passes / 1e6,
        matmul_gemm_kernels_per_pass=int(gemms["calls"].sum()) / passes,
        matmul_range_ms_per_pass=ranges["dur_ns"].sum() / passes / 1e6,
        matmul_range_kernels_per_pass=int(ranges["calls"].sum()) / passes,
        matmul_range_other=[
            {"category": str(category), "kernels_per_pass": int(group["calls"].sum()) / passes,
             "ms_per_pass": group["dur_ns"].sum() / passes / 1e6}
            for category, group in sorted(others.groupby("category", observed=True),
                                          key=lambda item: -item[1]["dur_ns"].sum())],
    )
    if record["matmul_gemm_ms_per_pass"]:
        record["runtime_ratio"] = record["softmax_ms_per_pass"] / record["matmul_gemm_ms_per_pass"]
        rows = inputs.measured_kernels(("forward",), PASS_COLUMNS, regions=REGIONS)  # the three parts' kernels only
        in_ranges = rows["region"].isin((scores_part, final_part))
        by_pass = (rows[rows["region"] == softmax_part].groupby("phase_range_id")["dur_ns"].sum()
                   / rows[in_ranges & (rows["category"] == GEMM)].groupby("phase_range_id")["dur_ns"].sum()).dropna()
        record["runtime_ratio_pass_min"], record["runtime_ratio_pass_max"] = float(by_pass.min()), float(by_pass.max())
    record["range_runtime_ratio"] = record["softmax_ms_per_pass"] / record["matmul_range_ms_per_pass"]
    return record


def _empty(config: dict | None, op_d_head: int | None = None) -> dict:
    """A record with no time figures, and the FLOPs figures the config's shapes give (else the
    head size read from the trace's matmul op shapes)."""
    d_head = _d_head(config) or op_d_head
    layers = (config or {}).get("num_layers")
    return {
        "softmax_ms_per_pass": None, "softmax_kernels_per_pass": None, "softmax_kernels": [],
        "softmax_source": None, "attention_calls_per_pass": int(layers) if layers else None,
        "matmul_gemm_ms_per_pass": None, "matmul_gemm_kernels_per_pass": None,
        "matmul_range_ms_per_pass": None, "matmul_range_kernels_per_pass": None, "matmul_range_other": [],
        "runtime_ratio": None, "runtime_ratio_pass_min": None, "runtime_ratio_pass_max": None,
        "range_runtime_ratio": None, "d_head": d_head,
        "softmax_flops_per_score": SOFTMAX_FLOPS_PER_SCORE,
        "matmul_flops_per_score": 4 * d_head if d_head else None,
        "flops_ratio": SOFTMAX_FLOPS_PER_SCORE / (4 * d_head) if d_head else None,
        "missing_parts": [],
    }


def _d_head(config: dict | None) -> int | None:
    """d_model / num_heads from the config; None when it lacks them or they do not divide."""
    try:
        d_model, heads = int(config["d_model"]), int(config["num_heads"])
    except (KeyError, TypeError, ValueError):
        return None
    return d_model // heads if heads and d_model % heads == 0 else None


def _softmax_figures(softmax: pd.DataFrame, passes: int, source: str) -> dict:
    from analysis.trace.nsys_inputs import kernel_totals

    totals = kernel_totals(softmax, passes)
    return {
        "softmax_ms_per_pass": softmax["dur_ns"].sum() / passes / 1e6,
        "softmax_kernels_per_pass": int(softmax["calls"].sum()) / passes,
        "softmax_source": source,
        "softmax_kernels": [{"kernel": row.kernel, "label": kernel_label(row.kernel),
                             "calls_per_pass": row.calls_per_pass, "ms_per_pass": row.ms_per_pass}
                            for row in totals.itertuples()],
    }
