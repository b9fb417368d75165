"""Model FLOPs: closed forms, and matmul counts checked against PyTorch's FLOP counter."""
from __future__ import annotations

import math
from contextlib import contextmanager

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from analysis.core.flops import ADAMW_FLOPS_PER_PARAM, attention_flops_ratio, forward_flops, param_count, phase_flops

SMALL = dict(batch_size=4, context_length=128, vocab_size=10_000, d_model=768, d_ff=3072,
             num_layers=12, num_heads=12)
XL_2P7B = dict(batch_size=4, context_length=256, vocab_size=10_000, d_model=2560, d_ff=10240,
               num_layers=32, num_heads=32)
TINY = dict(batch_size=2, context_length=8, vocab_size=50, d_model=16, d_ff=40, num_layers=2,
            num_heads=4)
MATMUL_PARTS = ("qkv_proj", "attention_scores", "attention_value", "output_proj", "ffn",
                "lm_head")


def reference_parameters(config: dict) -> dict[str, torch.Tensor]:
    """Shape-only (meta) parameters of the CS336 LM: nothing is computed, only counted."""
    d, d_ff, vocab = config["d_model"], config["d_ff"], config["vocab_size"]
    shapes = {"embedding": (vocab, d), "final_norm": (d,), "lm_head": (vocab, d)}
    for i in range(config["num_layers"]):
        for name, shape in {"q": (d, d), "k": (d, d), "v": (d, d), "o": (d, d), "w1": (d_ff, d),
                            "w2": (d, d_ff), "w3": (d_ff, d), "norm1": (d,), "norm2": (d,)}.items():
            shapes[f"layers.{i}.{name}"] = shape
    return {name: torch.empty(shape, device="meta", requires_grad=True)
            for name, shape in shapes.items()}


def rms_norm(x: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * gain


def reference_forward(config: dict, params: dict, flops_by_part: dict) -> torch.Tensor:
    """The LM's forward pass with F.linear and torch.matmul (RoPE left out: it has no matmul),
    adding the FLOPs PyTorch counts in each part to `flops_by_part`."""
    batch, context, d = config["batch_size"], config["context_length"], config["d_model"]
    heads = config["num_heads"]
    d_head = d // heads

    @contextmanager
    def part(name):
        with FlopCounterMode(display=False) as counter:
            yield
        flops_by_part[name] = flops_by_part.get(name, 0) + counter.get_total_flops()

    tokens = torch.zeros(batch, context, dtype=torch.long, device="meta")
    mask = torch.ones(context, context, dtype=torch.bool, device="meta").triu(1)
    x = params["embedding"][tokens]  # (B, T, d)
    for i in range(config["num_layers"]):
        layer = {name.rsplit(".", 1)[1]: p for name, p in params.items()
                 if name.startswith(f"layers.{i}.")}
        y = rms_norm(x, layer["norm1"])
        with part("qkv_proj"):
            q, k, v = [F.linear(y, layer[name]) for name in "qkv"]  # (B, T, d) each
        q, k, v = [t.view(batch, context, heads, d_head).transpose(1, 2) for t in (q, k, v)]
        with part("attention_scores"):
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_head)  # (B, h, T, T)
        scores = scores.masked_fill(mask, float("-inf"))
        exp = (scores - scores.amax(-1, keepdim=True)).exp()
        weights = exp / exp.sum(-1, keepdim=True)
        with part("attention_value"):
            attended = torch.matmul(weights, v)  # (B, h, T, d_head)
        attended = attended.transpose(1, 2).reshape(batch, context, d)
        with part("output_proj"):
            x = x + F.linear(attended, layer["o"])
        y = rms_norm(x, layer["norm2"])
        with part("ffn"):
            x = x + F.linear(F.silu(F.linear(y, layer["w1"])) * F.linear(y, layer["w3"]),
                             layer["w2"])
    y = rms_norm(x, params["final_norm"])
    with part("lm_head"):
        return F.linear(y, params["lm_head"])  # (B, T, vocab)


@pytest.mark.parametrize("config", [TINY, SMALL, XL_2P7B], ids=["tiny", "small", "2.7B"])
def test_matmul_flops_match_pytorch_counter(config):
    params = reference_parameters(config)
    counted = {}
    logits = reference_forward(config, params, counted)
    ours = forward_flops(config)
    assert {part: ours[part] for part in MATMUL_PARTS} == counted
    assert ours["matmul_total"] == sum(counted.values())

    targets = torch.zeros(config["batch_size"] * config["context_length"], dtype=torch.long,
                          device="meta")
    loss = F.cross_entropy(logits.flatten(0, 1), targets)
    with FlopCounterMode(display=False) as backward_counter:
        loss.backward()
    assert (phase_flops({**config, "mode": "forward-backward"})["backward"]
            == backward_counter.get_total_flops())
    assert param_count(config) == sum(p.numel() for p in params.values())


def test_small_ctx128_forward_closed_form():
    # B=4, T=128, d=768, d_ff=3072, 12 layers, 12 heads (d_head 64), vocab 10,000; 512 tokens.
    assert forward_flops(SMALL) == {
        "qkv_proj": 21_743_271_936,          # 12 * 3 * 2*512*768*768
        "attention_scores": 1_207_959_552,   # 12 * 2*(4*12)*128*128*64
        "attention_softmax": 47_185_920,     # 12 * 5*(4*12)*128*128
        "attention_value": 1_207_959_552,    # 12 * 2*(4*12)*128*128*64
        "output_proj": 7_247_757_312,        # 12 * 2*512*768*768
        "ffn": 86_973_087_744,               # 12 * 3 * 2*512*768*3072
        "lm_head": 7_864_320_000,            # 2*512*768*10000
        "total": 126_291_542_016,
        "matmul_total": 126_244_356_096,
    }


def test_small_ctx128_phases_by_mode():
    assert phase_flops({**SMALL, "mode": "train"}) == {
        "forward": 126_291_542_016,
        "backward": 252_488_712_192,         # 2 * matmul_total
        "optimizer_step": 1_672_130_304,     # 13 * 128,625,408 parameters
        "step": 380_452_384_512,
    }
    assert phase_flops({**SMALL, "mode": "forward"}) == {
        "forward": 126_291_542_016, "step": 126_291_542_016}
    assert phase_flops({**SMALL, "mode": "forward-backward"})["step"] == 378_780_254_208


def test_param_counts_of_the_assignment():
    assert param_count(SMALL) == 128_625_408
    assert param_count(XL_2P7B) == 3_406_809_600


def test_attention_flops_ratio():
    # 5 FLOPs per score against 2*d_head + 2*d_head for the two matmuls: 5 / (4 * d_head).
    assert attention_flops_ratio(SMALL) == 5 / 256
    assert attention_flops_ratio({**SMALL, "context_length": 1024, "batch_size": 1}) == 5 / 256
    assert attention_flops_ratio(XL_2P7B) == 5 / 320


def test_bad_configs():
    with pytest.raises(ValueError, match="lacks d_ff"):
        forward_flops({k: v for k, v in SMALL.items() if k != "d_ff"})
    with pytest.raises(ValueError, match="not divisible"):
        forward_flops({**SMALL, "num_heads": 7})
    with pytest.raises(ValueError, match="unknown mode"):
        phase_flops({**SMALL, "mode": "inference"})
    with pytest.raises(ValueError, match="unknown mode"):
        phase_flops(SMALL)



def _aten_flops_per_element(name: str, kwargs: dict) -> int:
    """Arithmetic per output element of the ATen ops the runner's AdamW calls: add with an alpha
    scales then adds; addcmul/addcdiv multiply or divide two tensors, scale by value and add."""
    if name == "add_.Tensor":
        return 1 + (kwargs.get("alpha", 1) != 1)
    return {"mul_.Tensor": 1, "sqrt.default": 1, "addcmul_.default": 3, "addcdiv_.default": 3}[name]


def test_adamw_flops_count_what_the_runner_executes():
    """One AdamW step of the runner on one parameter, its ATen calls recorded: the per-parameter
    count of analysis.core.flops is the sum of their per-element arithmetic."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from cs336_profile.optim import AdamW

    class CountFlops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not func.__name__.startswith("_record_function"):
                self.calls.append((func.__name__, _aten_flops_per_element(func.__name__, kwargs or {})))
            return func(*args, **(kwargs or {}))

    weight = torch.nn.Parameter(torch.ones(3))
    weight.grad = torch.full((3,), 0.5)
    optimizer = AdamW([weight], lr=0.1, weight_decay=0.1)
    optimizer.step()  # the first step also creates the moment buffers
    with CountFlops() as counter:
        optimizer.step()
    assert [name for name, _ in counter.calls] == [
        "mul_.Tensor", "add_.Tensor", "mul_.Tensor", "addcmul_.default", "sqrt.default",
        "add_.Tensor", "addcdiv_.default", "mul_.Tensor"]
    assert sum(flops for _, flops in counter.calls) == ADAMW_FLOPS_PER_PARAM == 13
