"""Model FLOPs of the CS336 Transformer LM from its shapes, per pass and per phase.

`config` is the run config of the runner's `config` mark (keys `batch_size, context_length,
vocab_size, d_model, d_ff, num_layers, num_heads`, and `mode` for `phase_flops`). All counts are
for the full batch. Conventions:

- a matmul (m x k) @ (k x n) counts 2*m*n*k FLOPs (one multiply and one add per term);
- attention is the model's naive attention: full T x T scores per head, the causal mask does
  not halve them;
- the hand-written softmax counts `SOFTMAX_FLOPS_PER_SCORE` = 5 FLOPs per score element (max,
  subtract, exp, sum, divide); the scaling by 1/sqrt(d_head) and the mask are not counted;
- other elementwise work (RMSNorm, RoPE, SiLU and gating, residual adds, the loss) is left out:
  it is O(batch * context * d_model) against the matmuls' O(batch * context * d_model^2).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from cs336_profile.config import ModelConfig
from cs336_profile.contract import PHASES_BY_MODE

SOFTMAX_FLOPS_PER_SCORE = 5  # max, subtract, exp, sum, divide

# The backward pass of a matmul computes two matmuls of the forward's size: the gradient with
# respect to its input and the one with respect to its weight (or other operand).
BACKWARD_MATMUL_FACTOR = 2

# Per-parameter FLOPs of the runner's AdamW step (cs336_profile/optim.py), one count per
# arithmetic operation its in-place tensor calls execute on each element:
#   m.mul_(b1).add_(g, alpha=1-b1)                 3 (mul; mul by alpha, add)
#   v.mul_(b2).addcmul_(g, g, value=1-b2)          4 (mul; g*g, mul by value, add)
#   p.addcdiv_(m, v.sqrt().add_(eps), value=-lr_t) 5 (sqrt, add eps; div, mul by value, add)
#   p.mul_(1 - lr*wd)                              1 (mul: the decay factor is one scalar)
# The step size lr_t (bias corrections folded in) and the decay factor are Python scalars
# computed once per step, not per parameter.
ADAMW_FLOPS_PER_PARAM = 13

# The phases whose FLOPs are counted: the loss is elementwise work (see above) and has none.
UNCOUNTED_PHASES = ("loss",)
MODE_PHASES = {mode: tuple(p for p in phases if p not in UNCOUNTED_PHASES) for mode, phases in PHASES_BY_MODE.items()}

_SHAPE_KEYS = ("batch_size", "context_length", "vocab_size", "d_model", "d_ff", "num_layers",
               "num_heads")


class _Shapes(NamedTuple):
    batch: int
    context: int
    vocab: int
    d_model: int
    d_ff: int
    layers: int
    heads: int


def _shapes(config: Mapping) -> _Shapes:
    missing = [key for key in _SHAPE_KEYS if key not in config]
    if missing:
        raise ValueError(f"run config lacks {', '.join(missing)}")
    shapes = _Shapes(*(int(config[key]) for key in _SHAPE_KEYS))
    if shapes.d_model % shapes.heads:
        raise ValueError(f"d_model {shapes.d_model} is not divisible by num_heads {shapes.heads}")
    return shapes


def forward_flops(config: Mapping) -> dict[str, int]:
    """FLOPs of one forward pass of the full batch, by part, summed over all layers.

    Keys: `qkv_proj`, `attention_scores` (Q @ K^T), `attention_softmax`, `attention_value`
    (softmax(...) @ V), `output_proj`, `ffn` (SwiGLU's three matmuls), `lm_head`, `total`, and
    `matmul_total` (everything but the softmax).
    """
    s = _shapes(config)
    tokens = s.batch * s.context
    score_elements = s.batch * s.heads * s.context * s.context
    d_head = s.d_model // s.heads
    per_layer = {
        "qkv_proj": 3 * 2 * tokens * s.d_model * s.d_model,
        "attention_scores": 2 * score_elements * d_head,
        "attention_softmax": SOFTMAX_FLOPS_PER_SCORE * score_elements,
        "attention_value": 2 * score_elements * d_head,
        "output_proj": 2 * tokens * s.d_model * s.d_model,
        "ffn": 3 * 2 * tokens * s.d_model * s.d_ff,
    }
    parts = {name: s.layers * flops for name, flops in per_layer.items()}
    parts["lm_head"] = 2 * tokens * s.d_model * s.vocab
    total = sum(parts.values())
    return {**parts, "total": total, "matmul_total": total - parts["attention_softmax"]}


def param_count(config: Mapping) -> int:
    """Parameters of the config's model shapes (the runner's formula,
    :meth:`cs336_profile.config.ModelConfig.parameter_count`)."""
    s = _shapes(config)
    return ModelConfig(d_model=s.d_model, d_ff=s.d_ff, num_layers=s.layers, num_heads=s.heads,
                       vocab_size=s.vocab).parameter_count()


def phase_flops(config: Mapping) -> dict[str, int]:
    """FLOPs per phase of one step for the config's `mode`, plus `step` (their sum).

    `forward` is `forward_flops(config)["total"]`; `backward` is `BACKWARD_MATMUL_FACTOR` times
    the forward matmul FLOPs (elementwise backward work is not counted); `optimizer_step` is
    `ADAMW_FLOPS_PER_PARAM` per parameter. Phases the mode does not run are left out.
    """
    mode = config.get("mode")
    if mode not in MODE_PHASES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {sorted(MODE_PHASES)}")
    forward = forward_flops(config)
    all_phases = {
        "forward": forward["total"],
        "backward": BACKWARD_MATMUL_FACTOR * forward["matmul_total"],
        "optimizer_step": ADAMW_FLOPS_PER_PARAM * param_count(config),
    }
    phases = {phase: all_phases[phase] for phase in MODE_PHASES[mode]}
    return {**phases, "step": sum(phases.values())}


def attention_flops_ratio(config: Mapping) -> float:
    """Softmax FLOPs over the two attention matmuls' FLOPs (scores + final matmul), forward pass.

    Equals SOFTMAX_FLOPS_PER_SCORE / (4 * d_head), independent of batch and context length.
    """
    forward = forward_flops(config)
    return forward["attention_softmax"] / (forward["attention_scores"] + forward["attention_value"])
