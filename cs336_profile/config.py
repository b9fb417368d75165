"""Model sizes and the settings of one benchmark run.

`ModelConfig` holds the shapes of the CS336 basics Transformer LM; `SIZES_BY_HANDOUT` names the
sizes of each edition of the assignment's handout (2025 and 2026: the same name can mean different
models) plus `tiny` for CPU-only machines and tests; `SIZES` is the 2025 table. `RunConfig` is
everything one measured run needs; its `as_dict()` (the handout and the model's dimensions
included, so nothing downstream guesses a model from its size name) is written into every results
row and into the trace's config mark.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from cs336_profile.contract import MODES, PHASES_BY_MODE

DTYPES = ("fp32", "bf16")
ATTENTION_KINDS = ("naive", "sdpa")
DEVICES = ("cuda", "cpu")


@dataclass(frozen=True)
class ModelConfig:
    """Shapes of the Transformer LM (untied embedding and LM head, RMSNorm weights counted)."""

    d_model: int
    d_ff: int
    num_layers: int
    num_heads: int
    # The assignment's BPE vocabulary (TinyStories / OpenWebText tokenizers of CS336).
    vocab_size: int = 10_000
    # RoPE base of the course (and of Llama / RoFormer).
    rope_theta: float = 10_000.0

    def __post_init__(self) -> None:
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by num_heads {self.num_heads}")
        if (self.d_model // self.num_heads) % 2:
            raise ValueError("RoPE rotates pairs of dimensions: d_model / num_heads must be even")

    @property
    def d_head(self) -> int:
        return self.d_model // self.num_heads

    def parameter_count(self) -> int:
        """Parameters of the model from its shapes alone (the model code is checked against it)."""
        d, layers = self.d_model, self.num_layers
        embeddings = 2 * self.vocab_size * d  # token embedding + LM head, not tied
        per_layer = 4 * d * d + 3 * d * self.d_ff + 2 * d  # q,k,v,o; SwiGLU w1,w2,w3; 2 RMSNorms
        return embeddings + layers * per_layer + d  # + final RMSNorm


# tiny: runs a training step in milliseconds on a laptop CPU; d_head 16 keeps RoPE pairs even.
_TINY = ModelConfig(d_model=64, d_ff=256, num_layers=2, num_heads=4)
_SHARED_SIZES = {  # d_model / d_ff / layers / heads, the same in both handouts
    "small": ModelConfig(d_model=768, d_ff=3072, num_layers=12, num_heads=12),
    "medium": ModelConfig(d_model=1024, d_ff=4096, num_layers=24, num_heads=16),
    "large": ModelConfig(d_model=1280, d_ff=5120, num_layers=36, num_heads=20),
}
HANDOUTS = ("2025", "2026")
# 2025 stays the default everywhere, so earlier commands and results files keep their meaning.
DEFAULT_HANDOUT = "2025"
SIZES_BY_HANDOUT: dict[str, dict[str, ModelConfig]] = {
    "2025": {"tiny": _TINY, **_SHARED_SIZES,
             "xl": ModelConfig(d_model=1600, d_ff=6400, num_layers=48, num_heads=25),
             "2.7B": ModelConfig(d_model=2560, d_ff=10240, num_layers=32, num_heads=32)},
    # 2026: `xl` is 2025's 2.7B and a 10B size is new.
    "2026": {"tiny": _TINY, **_SHARED_SIZES,
             "xl": ModelConfig(d_model=2560, d_ff=10240, num_layers=32, num_heads=32),
             "10B": ModelConfig(d_model=4608, d_ff=12288, num_layers=50, num_heads=36)},
}
SIZES = SIZES_BY_HANDOUT["2025"]
# Every size name of either handout, in table order (command-line choices).
SIZE_NAMES = tuple(dict.fromkeys(name for table in SIZES_BY_HANDOUT.values() for name in table))
# The context length each handout's questions use when none is named.
DEFAULT_CONTEXT_LENGTH = {"2025": 128, "2026": 512}
# The model's dimensions as results rows and config marks carry them.
MODEL_KEYS = ("d_model", "d_ff", "num_layers", "num_heads", "vocab_size", "rope_theta")


def model_config(size: str, handout: str = DEFAULT_HANDOUT) -> ModelConfig:
    """The shapes of `size` in the handout's table (ValueError when the handout has no such size)."""
    if handout not in SIZES_BY_HANDOUT:
        raise ValueError(f"handout {handout!r} is not one of {HANDOUTS}")
    table = SIZES_BY_HANDOUT[handout]
    if size not in table:
        raise ValueError(f"size {size!r} is not one of the {handout} handout's {list(table)}")
    return table[size]


@dataclass(frozen=True)
class RunConfig:
    """One measured configuration: model size, input shape, mode and numerics."""

    size: str = "small"
    context_length: int = 128
    # The assignment benchmarks with batch size 4.
    batch_size: int = 4
    mode: str = "train"
    # fp32 runs the model in float32; bf16 wraps forward and loss in torch.autocast(bfloat16)
    # while parameters, gradients and optimizer state stay float32 (mixed precision).
    dtype: str = "fp32"
    compile: bool = False
    attention: str = "naive"
    device: str = "cuda"
    # Two warm-up steps take the one-off costs (cuBLAS handles, allocator growth, compilation)
    # out of the measured steps; three measured steps keep nsys traces small.
    warmup_steps: int = 2
    measured_steps: int = 3
    # NVTX ranges and marks; switched off only to measure their overhead.
    nvtx_annotations: bool = True
    # torch.autograd.profiler.emit_nvtx around the measured steps: one NVTX range per op.
    emit_nvtx: bool = False
    # One NVTX range `layer_<i>` around each Transformer block.
    layer_ranges: bool = False
    # TF32 off: "fp32" then means true float32 matmuls, as in the assignment's numbers.
    allow_tf32: bool = False
    seed: int = 0
    # Which handout's size table `size` is read from.
    handout: str = DEFAULT_HANDOUT
    # Activation checkpointing: torch.utils.checkpoint over groups of this many consecutive
    # blocks (their activations are recomputed in backward); 0 = none.
    checkpoint_every: int = 0

    def __post_init__(self) -> None:
        model_config(self.size, self.handout)  # raises on an unknown handout or size
        checks = [
            (self.mode in MODES, f"mode {self.mode!r} is not one of {MODES}"),
            (self.dtype in DTYPES, f"dtype {self.dtype!r} is not one of {DTYPES}"),
            (self.attention in ATTENTION_KINDS, f"attention {self.attention!r} is not one of {ATTENTION_KINDS}"),
            (self.device in DEVICES, f"device {self.device!r} is not one of {DEVICES}"),
            (self.context_length > 0 and self.batch_size > 0, "context length and batch size must be positive"),
            (self.warmup_steps >= 0 and self.measured_steps >= 1, "need warmup >= 0 and at least one measured step"),
            (not (self.emit_nvtx and self.device != "cuda"), "emit_nvtx needs a CUDA device"),
            (self.checkpoint_every >= 0, "checkpoint_every must be 0 (none) or a positive block count"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    @property
    def model(self) -> ModelConfig:
        return model_config(self.size, self.handout)

    @property
    def phases(self) -> tuple[str, ...]:
        return PHASES_BY_MODE[self.mode]

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.context_length

    def as_dict(self) -> dict:
        """The run settings and the model's dimensions as flat JSON-ready keys (results rows, config mark)."""
        model = asdict(self.model)
        return asdict(self) | {key: model[key] for key in MODEL_KEYS}
