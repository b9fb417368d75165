"""Model sizes and the settings of one benchmark run.

`ModelConfig` holds the shapes of the CS336 basics Transformer LM; `SIZES` names the sizes of the
assignment plus `tiny` for CPU-only machines and tests. `RunConfig` is everything one measured run
needs; its `as_dict()` is written into every results row and into the trace's config mark.
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


SIZES: dict[str, ModelConfig] = {
    # tiny: runs a training step in milliseconds on a laptop CPU; d_head 16 keeps RoPE pairs even.
    "tiny": ModelConfig(d_model=64, d_ff=256, num_layers=2, num_heads=4),
    # The assignment's table (d_model / d_ff / layers / heads).
    "small": ModelConfig(d_model=768, d_ff=3072, num_layers=12, num_heads=12),
    "medium": ModelConfig(d_model=1024, d_ff=4096, num_layers=24, num_heads=16),
    "large": ModelConfig(d_model=1280, d_ff=5120, num_layers=36, num_heads=20),
    "xl": ModelConfig(d_model=1600, d_ff=6400, num_layers=48, num_heads=25),
    "2.7B": ModelConfig(d_model=2560, d_ff=10240, num_layers=32, num_heads=32),
}


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

    def __post_init__(self) -> None:
        checks = [
            (self.size in SIZES, f"size {self.size!r} is not one of {list(SIZES)}"),
            (self.mode in MODES, f"mode {self.mode!r} is not one of {MODES}"),
            (self.dtype in DTYPES, f"dtype {self.dtype!r} is not one of {DTYPES}"),
            (self.attention in ATTENTION_KINDS, f"attention {self.attention!r} is not one of {ATTENTION_KINDS}"),
            (self.device in DEVICES, f"device {self.device!r} is not one of {DEVICES}"),
            (self.context_length > 0 and self.batch_size > 0, "context length and batch size must be positive"),
            (self.warmup_steps >= 0 and self.measured_steps >= 1, "need warmup >= 0 and at least one measured step"),
            (not (self.emit_nvtx and self.device != "cuda"), "emit_nvtx needs a CUDA device"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    @property
    def model(self) -> ModelConfig:
        return SIZES[self.size]

    @property
    def phases(self) -> tuple[str, ...]:
        return PHASES_BY_MODE[self.mode]

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.context_length

    def as_dict(self) -> dict:
        """The run settings as flat JSON-ready keys (results rows, config mark)."""
        return asdict(self)
