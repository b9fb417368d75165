"""Mixed precision, observed by running it.

`accumulation_loops`: the assignment's four loops that add 0.01 a thousand times (exact answer
10.0) with different accumulator and value dtypes, plus the same loop in bfloat16; each result as
PyTorch prints it and its absolute error.

`toy_model_dtypes`: the assignment's ToyModel under autocast; forward hooks record the dtypes of
the fc1, ReLU, LayerNorm and fc2 (logits) outputs, then the loss and the gradients are read off.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cs336_profile.contract import ADDEND, ADDITIONS

EXACT_SUM = ADDEND * ADDITIONS


@dataclass(frozen=True)
class AccumulationLoop:
    """s = 0 (accumulator dtype); s += 0.01 (value dtype, upcast to the accumulator first if asked)."""

    name: str
    accumulator: torch.dtype
    value: torch.dtype
    upcast: bool = False


ACCUMULATION_LOOPS = (
    AccumulationLoop("fp32 accumulator + fp32 values", torch.float32, torch.float32),
    AccumulationLoop("fp16 accumulator + fp16 values", torch.float16, torch.float16),
    AccumulationLoop("fp32 accumulator + fp16 values", torch.float32, torch.float16),
    AccumulationLoop("fp32 accumulator + fp16 values upcast", torch.float32, torch.float16, upcast=True),
    AccumulationLoop("bf16 accumulator + bf16 values", torch.bfloat16, torch.bfloat16),
)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def run_accumulation(loop: AccumulationLoop, device: str) -> dict:
    """Run one loop as the assignment writes it; return its printed result and error vs 10.0."""
    s = torch.tensor(0, dtype=loop.accumulator, device=device)
    for _ in range(ADDITIONS):
        x = torch.tensor(ADDEND, dtype=loop.value, device=device)
        s += x.type(loop.accumulator) if loop.upcast else x
    result = s.item()
    return {
        "loop": loop.name,
        "accumulator_dtype": _dtype_name(loop.accumulator),
        "value_dtype": _dtype_name(loop.value),
        "upcast": loop.upcast,
        "device": device,
        "printed": str(s.cpu()),
        "result": result,
        "abs_error": abs(result - EXACT_SUM),
    }


def accumulation_loops(device: str) -> list[dict]:
    """All loops of ACCUMULATION_LOOPS on `device`."""
    return [run_accumulation(loop, device) for loop in ACCUMULATION_LOOPS]


class ToyModel(nn.Module):
    """The assignment's toy network: fc1 → ReLU → LayerNorm → fc2."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, 10, bias=False)
        self.ln = nn.LayerNorm(10)
        self.fc2 = nn.Linear(10, out_features, bias=False)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.fc1(x))
        x = self.ln(x)
        return self.fc2(x)


def toy_model_dtypes(autocast_dtype: torch.dtype, device: str, seed: int = 0) -> list[dict]:
    """Rows (quantity, dtype) observed while the ToyModel runs one step under autocast."""
    torch.manual_seed(seed)
    model = ToyModel(in_features=20, out_features=5).to(device)
    x = torch.randn(8, 20, device=device)
    y = torch.randint(0, 5, (8,), device=device)
    observed: dict[str, torch.dtype] = {}
    modules = {"fc1 output": model.fc1, "ReLU output": model.relu, "LayerNorm output": model.ln,
               "logits (fc2 output)": model.fc2}
    hooks = [module.register_forward_hook(lambda _m, _i, out, name=name: observed.__setitem__(name, out.dtype))
             for name, module in modules.items()]
    with torch.autocast(device_type=device, dtype=autocast_dtype):
        observed["parameters (inside autocast)"] = next(model.parameters()).dtype
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        observed["loss"] = loss.dtype
    loss.backward()
    for hook in hooks:
        hook.remove()
    for name, parameter in model.named_parameters():
        observed[f"gradient of {name}"] = parameter.grad.dtype
    return [{"autocast_dtype": _dtype_name(autocast_dtype), "device": device, "quantity": quantity,
             "dtype": _dtype_name(dtype)} for quantity, dtype in observed.items()]
