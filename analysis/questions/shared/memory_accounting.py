"""What fills the memory of a training step, from the peaks the runner measured per phase.

- **State**: fp32 copies of every parameter: the weights, their gradients and AdamW's two
  moments, ``parameters × 4 B`` each. The runner's step starts with ``zero_grad(set_to_none=True)``,
  so the gradients are freed before the forward and rebuilt by the backward.
- **Activations kept for backward**: a train-mode forward's peak minus the state present then
  (weights and moments; under bf16 autocast also its bf16 copies of the weights, ``parameters ×
  2 B``, cached for the whole forward).
- **Their T² part** (fp32): eager attention keeps two ``B × H × T × T`` fp32 matrices per layer
  for backward (the softmax's ``exp`` and its output; attn-a measures them), so
  ``layers × 2 × B·H·T²·4 B``; the rest of the activations grows with T alone.
- **Which tensor an allocation is**: the model's activation shapes that have its exact size.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cs336_profile.config import DEFAULT_HANDOUT, SIZES_BY_HANDOUT
from cs336_profile.contract import FP32_BYTES, peak_column

if TYPE_CHECKING:
    import pandas as pd

BF16_BYTES = 2
# Matrices of B × H × T × T fp32 values eager attention keeps per layer for backward.
SAVED_SCORE_MATRICES = 2
PHASES = ("forward", "backward", "optimizer_step")


def fp32_copy_bytes(parameters: int) -> int:
    """One fp32 copy of every parameter (the weights, or their gradients, or one Adam moment)."""
    return int(parameters) * FP32_BYTES


def train_accounting(peaks: pd.DataFrame) -> pd.DataFrame:
    """One row per completed train-mode peak row (context length, dtype): the state, the
    activations kept for backward, their T² part and the rest per context position (fp32), and
    the phase whose peak is the step's."""
    import pandas as pd

    train = peaks[(peaks["mode"] == "train") & (peaks["status"] == "ok")]
    rows = []
    for _, row in train.iterrows():
        copy = fp32_copy_bytes(row["parameters"])
        weights_and_moments = 3 * copy
        bf16_copies = int(row["parameters"]) * BF16_BYTES if row["dtype"] == "bf16" else 0
        activations = row[peak_column("forward")] - weights_and_moments - bf16_copies
        phase_peaks = {phase: row.get(peak_column(phase)) for phase in PHASES}
        phase_peaks = {phase: value for phase, value in phase_peaks.items() if pd.notna(value)}
        record = {"context_length": row["context_length"], "dtype": row["dtype"], "fp32_copy_bytes": copy,
                  "weights_and_moments_bytes": weights_and_moments, "bf16_weight_copies_bytes": bf16_copies,
                  "forward_peak_bytes": row[peak_column("forward")], "activations_bytes": activations,
                  **{f"{phase}_peak_bytes": value for phase, value in phase_peaks.items()},
                  "peak_phase": max(phase_peaks, key=phase_peaks.get) if phase_peaks else None,
                  "peak_bytes": row["peak_memory_bytes"]}
        config = _model(row["size"], row.get("handout"))
        if config is not None and row["dtype"] == "fp32":
            quadratic = (config.num_layers * SAVED_SCORE_MATRICES * row["batch_size"] * config.num_heads
                         * row["context_length"] ** 2 * FP32_BYTES)
            record["attention_t2_bytes"] = quadratic
            record["rest_per_position_bytes"] = (activations - quadratic) / row["context_length"]
        rows.append(record)
    return pd.DataFrame(rows).sort_values(["dtype", "context_length"], ignore_index=True) if rows else pd.DataFrame()


def _model(size: str, handout: str | None):
    """The model dimensions of ``size`` in its handout (2025 when the row names none), or None."""
    return SIZES_BY_HANDOUT.get(handout if isinstance(handout, str) else DEFAULT_HANDOUT, {}).get(size)


def activation_shapes(size: str, batch: int, context: int, handout: str | None = None) -> list[tuple[str, str, int]]:
    """The model's activation tensors of one forward as (what, shape, bytes), fp32."""
    config = _model(size, handout)
    if config is None:
        return []
    shapes = [
        ("SwiGLU hidden activation (w1(x), w3(x), sigmoid, their products)", (batch, context, config.d_ff)),
        ("logits of lm_head", (batch, context, config.vocab_size)),
        ("attention scores, softmax pieces and weights", (batch, config.num_heads, context, context)),
        ("residual stream, norms, q, k, v and attention output", (batch, context, config.d_model)),
    ]
    return [(what, "×".join(str(n) for n in shape) + " fp32", _product(shape) * FP32_BYTES) for what, shape in shapes]


def _product(shape: tuple[int, ...]) -> int:
    total = 1
    for n in shape:
        total *= int(n)
    return total


def name_allocation(size_bytes: int, shapes: list[tuple[str, str, int]]) -> tuple[str, str]:
    """(what, shape) of the activations of exactly ``size_bytes``; empty strings when none."""
    matches = [(what, shape) for what, shape, nbytes in shapes if nbytes == size_bytes]
    return (" or ".join(m[0] for m in matches), " or ".join(m[1] for m in matches)) if matches else ("", "")
