"""Attention alone at scale: eager (naive), compiled naive and SDPA side by side.

Batch 8, one head: q, k, v of shape (batch, seq_len, head_dim) with a causal mask. Per cell:
warm-up passes, `passes` timed forward passes, the memory in use before backward (inputs, output
and what autograd saved), `passes` timed backward passes, each on the graph of a fresh untimed
forward (a compiled backward frees its saved buffers, so a graph cannot be reused). Each timed
pass starts and ends with a synchronize. A cell that runs out of memory is a row with status OOM.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F
from tqdm import tqdm

from cs336_profile.bench import free_device_memory, is_out_of_memory, mean_std_columns, synchronize
from cs336_profile.contract import STATUS_OK, STATUS_OOM
from cs336_profile.model import causal_mask, scaled_dot_product_attention

IMPLEMENTATIONS = ("eager", "compiled", "sdpa")
MEASUREMENT_KEYS = ("forward_ms_mean", "forward_ms_std", "backward_ms_mean", "backward_ms_std",
                    "memory_before_forward_bytes", "memory_before_backward_bytes", "peak_memory_bytes")


@dataclass(frozen=True)
class AttentionGrid:
    """The grid of the assignment's attention benchmark."""

    head_dims: tuple[int, ...] = (16, 32, 64, 128)
    seq_lens: tuple[int, ...] = (256, 1024, 4096, 8192, 16384)
    implementations: tuple[str, ...] = IMPLEMENTATIONS
    batch_size: int = 8
    warmup_passes: int = 5
    passes: int = 100
    device: str = "cuda"
    seed: int = 0

    def __post_init__(self) -> None:
        # The memory before backward is read during the first timed backward pass.
        if self.passes < 1 or self.warmup_passes < 0 or self.batch_size < 1:
            raise ValueError("the attention grid needs passes >= 1, warmup_passes >= 0 and batch_size >= 1")


def _sdpa(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def attention_function(implementation: str) -> Callable:
    """(q, k, v, mask) → output for one implementation name."""
    if implementation == "eager":
        return scaled_dot_product_attention
    if implementation == "compiled":
        return torch.compile(scaled_dot_product_attention)
    if implementation == "sdpa":
        return _sdpa
    raise ValueError(f"unknown attention implementation {implementation!r}; use one of {IMPLEMENTATIONS}")


def _timed_ms(fn: Callable[[], object], device: str) -> float:
    synchronize(device)  # earlier work stays out of this pass's time
    start = time.perf_counter()
    fn()
    synchronize(device)
    return (time.perf_counter() - start) * 1e3


def _allocated_bytes(device: str) -> int | None:
    return torch.cuda.memory_allocated() if device == "cuda" else None


def _measure_cell(fn: Callable, grid: AttentionGrid, head_dim: int, seq_len: int) -> dict:
    device = grid.device
    shape = (grid.batch_size, seq_len, head_dim)
    q, k, v = (torch.randn(shape, device=device, requires_grad=True) for _ in range(3))
    mask = causal_mask(seq_len, device)
    for _ in range(grid.warmup_passes):
        fn(q, k, v, mask).sum().backward()
    forward_ms = [_timed_ms(partial(fn, q, k, v, mask), device) for _ in range(grid.passes)]
    grad_out = torch.randn(shape, device=device)
    synchronize(device)
    memory_before_forward = _allocated_bytes(device)
    backward_ms = []
    for index in range(grid.passes):
        out = fn(q, k, v, mask)
        if index == 0:
            synchronize(device)
            memory_before_backward = _allocated_bytes(device)  # + output and what autograd saved
        backward_ms.append(_timed_ms(partial(out.backward, grad_out), device))  # frees the graph
    return {
        **mean_std_columns("forward_ms", forward_ms),
        **mean_std_columns("backward_ms", backward_ms),
        "memory_before_forward_bytes": memory_before_forward,
        "memory_before_backward_bytes": memory_before_backward,
        "peak_memory_bytes": torch.cuda.max_memory_allocated() if device == "cuda" else None,
    }


def run_attention_grid(grid: AttentionGrid, progress: bool = True,
                       on_row: Callable[[list[dict]], None] | None = None) -> list[dict]:
    """One row per (implementation, head_dim, seq_len): timings and memory, or status OOM.

    `on_row` is called with the rows so far after each cell (to save partial results).
    """
    torch.set_float32_matmul_precision("highest")  # fp32 means fp32, as in the model runs
    cells = [(impl, d, s) for impl in grid.implementations for d in grid.head_dims for s in grid.seq_lens]
    functions = {impl: attention_function(impl) for impl in grid.implementations}
    rows = []
    for implementation, head_dim, seq_len in tqdm(cells, desc="attention", disable=not progress):
        torch.manual_seed(grid.seed)
        free_device_memory(grid.device)
        row = {"implementation": implementation, "head_dim": head_dim, "seq_len": seq_len,
               "batch_size": grid.batch_size, "passes": grid.passes}
        try:
            row |= {"status": STATUS_OK, **_measure_cell(functions[implementation], grid, head_dim, seq_len)}
        except Exception as exc:  # noqa: BLE001 - only out-of-memory errors are turned into rows
            if not is_out_of_memory(exc):
                raise
            row |= {"status": STATUS_OOM, **dict.fromkeys(MEASUREMENT_KEYS)}
        rows.append(row)
        if on_row is not None:
            on_row(rows)
    free_device_memory(grid.device)
    return rows
