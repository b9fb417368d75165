"""mp-b: which parts of a normalization layer suffer in fp16 and bf16, on the model's real activations.

Forward pre-hooks on every RMSNorm of the Transformer (two per block and the final one) take the
activations that enter it during one forward pass of a batch of token ids. On each of them, two
normalizations are computed: LayerNorm (mean, variance, 1/sqrt(var + eps), output) and the model's
RMSNorm (mean square, 1/sqrt(ms + eps), output), both with the norm's weight (and no bias). Each is
computed three ways: in fp32 (the reference), with every operation in fp16 or bf16 (`compute`
= `low`: the input cast down, each intermediate a low-precision tensor; PyTorch's reductions still
accumulate in fp32 inside the kernel, as a real fp16 layer's would), and with the input cast down but
the arithmetic in fp32 (`compute` = `upcast`, what the model's RMSNorm and autocast's layer_norm do).
Errors are relative L2 errors over the whole tensor (‖low − ref‖ / ‖ref‖) and the largest absolute
error of the output; overflow counts non-finite values in any intermediate; `underflow_squares`
counts elements whose square is zero in the low dtype though not in fp32 (fp16's range: |x| below
about 2.4e-4 squares to zero; for LayerNorm also x − mean cancelling to zero after rounding, which
is how bf16, with fp32's range, gets any); `zero_spread_rows` counts tokens whose variance or mean
square is zero.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from cs336_profile.bench import prepare_workload, run_step
from cs336_profile.config import RunConfig
from cs336_profile.model import RMSNorm

LOW_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
NORMS = ("layernorm", "rmsnorm")
COMPUTES = ("low", "upcast")
# Per-site measurements that `worst_over_sites` takes the largest of.
ERROR_COLUMNS = ("mean_rel_error", "spread_rel_error", "inv_rel_error", "output_rel_error", "output_max_abs_error",
                 "overflow_count", "underflow_squares", "zero_spread_rows")


@dataclass(frozen=True)
class NormStudy:
    """The model whose activations are used, and how long it is trained first (0 = freshly initialized)."""

    size: str = "small"
    handout: str = "2026"
    context_length: int = 512
    batch_size: int = 4
    train_steps: int = 5


def _relative_error(low: torch.Tensor, reference: torch.Tensor) -> float:
    """‖low − reference‖₂ / ‖reference‖₂ over the whole tensor, in float64."""
    difference = (low.double() - reference.double()).norm()
    scale = reference.double().norm()
    return float(difference / scale) if scale > 0 else float(difference)


def normalize_parts(x: torch.Tensor, weight: torch.Tensor, eps: float, norm: str) -> dict[str, torch.Tensor]:
    """The intermediates of `norm` on x (last dimension), in x's dtype: mean, spread, inv, output.

    `spread` is the variance for LayerNorm and the mean square for RMSNorm; `inv` = 1/sqrt(spread + eps).
    """
    weight = weight.to(x.dtype)
    if norm == "layernorm":
        mean = x.mean(dim=-1, keepdim=True)
        centered = x - mean
        squares = centered * centered
    else:
        mean, centered, squares = None, x, x * x
    spread = squares.mean(dim=-1, keepdim=True)
    inv = torch.rsqrt(spread + eps)
    parts = {"squares": squares, "spread": spread, "inv": inv, "output": centered * inv * weight}
    return parts | ({"mean": mean} if mean is not None else {})


def compare_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, norm: str, dtype: str, compute: str) -> dict:
    """Errors of `norm` computed in `dtype` (`low` or `upcast`) against fp32, on the activations x."""
    reference = normalize_parts(x.float(), weight.float(), eps, norm)
    rounded = x.to(LOW_DTYPES[dtype])
    low = normalize_parts(rounded if compute == "low" else rounded.float(), weight, eps, norm)
    row = {"norm": norm, "dtype": dtype, "compute": compute}
    for name, column in (("mean", "mean"), ("spread", "spread"), ("inv", "inv"), ("output", "output")):
        row[f"{column}_rel_error"] = _relative_error(low[name], reference[name]) if name in low else None
    row["output_max_abs_error"] = float((low["output"].double() - reference["output"].double()).abs().max())
    row["overflow_count"] = int(sum((~torch.isfinite(tensor)).sum() for tensor in low.values()))
    row["underflow_squares"] = int(((low["squares"] == 0) & (reference["squares"] != 0)).sum())
    row["zero_spread_rows"] = int((low["spread"] == 0).sum())
    return row


def input_stats(x: torch.Tensor) -> dict:
    """Scale of the activations entering a norm: largest |x|, RMS, and the smallest nonzero |x|."""
    magnitude = x.float().abs()
    nonzero = magnitude[magnitude > 0]
    return {"input_abs_max": float(magnitude.max()), "input_rms": float(magnitude.pow(2).mean().sqrt()),
            "input_abs_min_nonzero": float(nonzero.min()) if nonzero.numel() else None,
            "tokens": x.numel() // x.shape[-1], "width": x.shape[-1]}


def norm_precision_rows(study: NormStudy, device: str) -> list[dict]:
    """One row per (norm site, norm, dtype, compute) over one forward pass of the (trained) model."""
    run = RunConfig(size=study.size, handout=study.handout, context_length=study.context_length,
                    batch_size=study.batch_size, mode="train", device=device, nvtx_annotations=False)
    workload = prepare_workload(run)
    for index in range(study.train_steps):
        run_step(run, workload, f"train_{index}")
    sites = {module: name for name, module in workload.model.named_modules() if isinstance(module, RMSNorm)}
    rows: list[dict] = []

    def measure(module: RMSNorm, inputs: tuple[torch.Tensor]) -> None:
        x = inputs[0].detach()
        site = {"site": sites[module], "site_index": len({row["site"] for row in rows}), **input_stats(x)}
        for norm in NORMS:
            for dtype in LOW_DTYPES:
                for compute in COMPUTES:
                    rows.append(site | compare_norm(x, module.weight.detach(), module.eps, norm, dtype, compute))

    hooks = [module.register_forward_pre_hook(measure) for module in sites]
    try:
        with torch.no_grad():
            workload.model(workload.tokens)
    finally:
        for hook in hooks:
            hook.remove()
    settings = {"size": study.size, "handout": study.handout, "context_length": study.context_length,
                "batch_size": study.batch_size, "train_steps": study.train_steps, "device": device}
    return [settings | row for row in rows]


def worst_over_sites(rows: list[dict]) -> list[dict]:
    """One row per (norm, dtype, compute): the largest of each error column over the norm sites."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["norm"], row["dtype"], row["compute"]), []).append(row)
    return [{"size": group[0]["size"], "handout": group[0]["handout"], "train_steps": group[0]["train_steps"],
             "norm": norm, "dtype": dtype, "compute": compute, "sites": len(group),
             **{column: max((r[column] for r in group if r[column] is not None), default=None)
                for column in ERROR_COLUMNS}}
            for (norm, dtype, compute), group in groups.items()]
