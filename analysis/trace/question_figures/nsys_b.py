"""The figures of nsys_profile (b) for one trace: the kernel with the most summed GPU time in the
forward pass, its calls in one forward pass (per layer and outside the layers), its precision
when it is a GEMM, and the leader when forward and backward are counted together. Kernel names
are demangled names; null where the trace launched no forward kernels."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypedDict

from analysis.core.classify import COMMUNICATION, GEMM, gemm_precision
from analysis.core.kernel_names import kernel_label
from analysis.trace.summary_schema import STORED_ONLY, WRITTEN

if TYPE_CHECKING:
    from analysis.trace.nsys_inputs import NsysInputs


class Record(TypedDict):
    """The per-trace record of (b), in the summary's ``questions["b"]``."""

    top_forward_kernel: str | None
    top_forward_label: str | None
    top_forward_category: str | None
    top_forward_precision: str | None  # of a GEMM: fp32 (CUDA-core FFMA), tf32, bf16, ...
    top_forward_tensor_core: bool | None
    calls_per_layer: int | None
    calls_outside_layers: int | None
    calls_per_forward_pass: float | None
    top_forward_ms_per_pass: float | None
    top_forward_share: float | None
    # Where a communication kernel leads the forward (tensor parallelism's all-reduces): the leader
    # among the others, and its share of their summed forward time
    top_forward_compute_kernel: Annotated[str | None, STORED_ONLY]
    top_forward_compute_share: Annotated[float | None, STORED_ONLY]
    top_forward_backward_kernel: str | None
    top_forward_backward_share: float | None
    same_kernel: bool | None
    top_forward_backward_category: Annotated[str | None, STORED_ONLY]
    # Where a communication kernel leads forward and backward: the leader among the others, and
    # its share of their summed time
    top_forward_backward_compute_kernel: Annotated[str | None, STORED_ONLY]
    top_forward_backward_compute_share: Annotated[float | None, STORED_ONLY]
    forward_leader_rank: Annotated[int | None, STORED_ONLY]  # of the forward leader, forward and backward counted
    answer: Annotated[str, WRITTEN]


def figures(inputs: NsysInputs, phases: dict[str, dict]) -> dict:
    """(b)'s record for one trace (less its sentence); ``phases`` is not read."""
    forward = inputs.kernel_totals(("forward",), inputs.passes("forward"))
    leader_figures = {"top_forward_backward_kernel": None, "top_forward_backward_share": None, "same_kernel": None,
                      "top_forward_backward_category": None, "forward_leader_rank": None,
                      "top_forward_backward_compute_kernel": None, "top_forward_backward_compute_share": None}
    if forward.empty:
        return {"top_forward_kernel": None, "top_forward_label": None, "top_forward_category": None,
                "top_forward_precision": None, "top_forward_tensor_core": None, "calls_per_layer": None,
                "calls_outside_layers": None, "calls_per_forward_pass": None, "top_forward_ms_per_pass": None,
                "top_forward_share": None, "top_forward_compute_kernel": None, "top_forward_compute_share": None,
                **leader_figures}
    top = forward.iloc[0]
    layers = (inputs.run.config or {}).get("num_layers")
    calls = top["calls_per_pass"]
    per_layer, outside = (divmod(int(calls), int(layers)) if layers and float(calls).is_integer() else (None, None))
    record = {
        "top_forward_kernel": top["kernel"],
        "top_forward_label": kernel_label(top["kernel"]),
        "top_forward_category": top["category"],
        "top_forward_precision": gemm_precision(top["kernel"]) if top["category"] == GEMM else None,
        "top_forward_tensor_core": bool(top["tensor_core"]),
        "calls_per_layer": per_layer,
        "calls_outside_layers": outside,
        "calls_per_forward_pass": float(top["calls_per_pass"]),
        "top_forward_ms_per_pass": float(top["ms_per_pass"]),
        "top_forward_share": float(top["share"]),
        **_compute_leader(forward, "top_forward"),
    }
    if inputs.passes("backward") == 0:
        return record | leader_figures
    both = inputs.kernel_totals(("forward", "backward"), inputs.passes("forward"))
    leader = both.iloc[0]
    return record | _compute_leader(both, "top_forward_backward") | {
        "top_forward_backward_kernel": leader["kernel"],
        "top_forward_backward_share": float(leader["share"]),
        "same_kernel": bool(leader["kernel"] == top["kernel"]),
        "top_forward_backward_category": leader["category"],
        "forward_leader_rank": int(both.index[both["kernel"] == top["kernel"]][0]) + 1,
    }


def _compute_leader(totals, prefix: str) -> dict:
    """``<prefix>_compute_kernel`` and ``<prefix>_compute_share``: where a communication kernel leads
    ``totals`` (kernel totals, largest first), the leader among the other kernels and its share of
    their summed time; None otherwise."""
    computing = totals[totals["category"] != COMMUNICATION]
    if totals["category"].iloc[0] != COMMUNICATION or not len(computing):
        return {f"{prefix}_compute_kernel": None, f"{prefix}_compute_share": None}
    return {f"{prefix}_compute_kernel": computing["kernel"].iloc[0],
            f"{prefix}_compute_share": float(computing["total_ns"].iloc[0] / computing["total_ns"].sum())}
