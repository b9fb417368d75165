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

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from analysis.core.intervals import within_earlier
from cs336_profile.config import ModelConfig
from cs336_profile.contract import PHASES_BY_MODE

if TYPE_CHECKING:
    import pandas as pd

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


# ----------------------------------------------------------------------------- from a trace's op shapes
# The input shapes of PyTorch's matmul ops (``--pytorch=autograd-shapes-nvtx``): ``sizes = [[…], …]``;
# the two operands are the first two shapes of mm and bmm, the second and third of addmm and baddbmm
# (the first is the added tensor).
_SIZES = re.compile(r"sizes = \[(.*?)\](?:, input_op_ids|$)")
_SHAPE = re.compile(r"\[([\d, ]*)\]")
_OPERANDS = {"mm": (0, 1), "bmm": (0, 1), "addmm": (1, 2), "baddbmm": (1, 2)}


class GemmShape(NamedTuple):
    batch: int
    m: int
    k: int
    n: int

    @property
    def flops(self) -> int:
        """2·batch·m·k·n: one multiply and one add per product term."""
        return 2 * self.batch * self.m * self.k * self.n


def gemm_shape(op_name: str) -> GemmShape | None:
    """The product a matmul op range computes (``aten::mm, … sizes = [[M, K], [K, N]]``), or None
    when its name holds no usable shapes."""
    op = op_name.split(",", 1)[0].removeprefix("aten::")
    sizes = _SIZES.search(op_name)
    if op not in _OPERANDS or not sizes:
        return None
    shapes = [[int(d) for d in found.split(",") if d.strip()] for found in _SHAPE.findall(sizes.group(1))]
    first, second = _OPERANDS[op]
    if len(shapes) <= second:
        return None
    a, b = shapes[first], shapes[second]
    if len(a) == len(b) == 2 and a[1] == b[0]:
        return GemmShape(1, a[0], a[1], b[1])
    if len(a) == len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        return GemmShape(a[0], a[1], a[2], b[2])
    return None


def gemm_ops_outermost(ops: pd.DataFrame) -> pd.DataFrame:
    """Matmul op ranges less those inside another on the same thread (under autocast an op range
    may nest in one of the same name: the product is counted once)."""
    import numpy as np

    if ops.empty:
        return ops
    thread = ops["pid"].to_numpy(np.int64) * (1 << 24) + ops["tid"].to_numpy(np.int64)
    return ops[~within_earlier(ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy(), thread)]


def phase_flops_from_ops(gemm_ops: pd.DataFrame, phase_ranges: pd.DataFrame) -> dict[str, float]:
    """Matmul FLOPs per measured pass of each phase, from the shapes of the matmul op ranges that
    start inside its measured ranges (any thread of the process: backward's ops run on the
    autograd thread); empty when the trace has no such ranges."""
    import numpy as np
    import pandas as pd

    from analysis.core.attribution import ops_in_windows

    measured = phase_ranges[phase_ranges["measured"]].reset_index(drop=True)
    ops = gemm_ops_outermost(gemm_ops)
    if ops.empty or measured.empty:
        return {}
    flops = np.array([shape.flops if (shape := gemm_shape(name)) else 0 for name in ops["name"]], dtype=float)
    windows = ops_in_windows(pd.DataFrame({"pid": ops["pid"].to_numpy(), "launch_start_ns": ops["start_ns"].to_numpy()}),
                             measured)
    inside = windows >= 0
    per_phase = pd.Series(flops[inside]).groupby(measured["phase"].to_numpy()[windows[inside]]).sum()
    passes = measured["phase"].value_counts()
    return {str(phase): float(total / passes[phase]) for phase, total in per_phase.items() if total > 0}


def attention_head_size(gemm_ops: pd.DataFrame) -> int | None:
    """d_head read from the trace's shapes: the inner size of the batched matmuls whose product is
    square, seq × seq (the attention scores, Q·Kᵀ), the most common one; None without them."""
    import pandas as pd

    sizes = [shape.k for name in gemm_ops["name"] if (shape := gemm_shape(name)) and shape.batch > 1
             and shape.m == shape.n and shape.m > shape.k]
    return int(pd.Series(sizes).mode().iat[0]) if sizes else None
