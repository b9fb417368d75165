"""How data-parallel ranks keep one model: naive DDP, overlapped DDP and FSDP2 sharding.

- `NaiveDDP`: after backward, one all-reduce per parameter gradient (the handout's naive DDP);
  nothing overlaps with the backward pass.
- `OverlappedDDP`: a hook on each parameter (`register_post_accumulate_grad_hook`) launches an
  asynchronous all-reduce of its gradient as soon as backward has accumulated it, so
  communication runs while backward computes the gradients of earlier layers; before the
  optimizer step the handles are waited for (the handout's ddp_overlap_individual_parameters).
- `shard_fsdp`: FSDP2 `fully_shard` on every Transformer block and on the root module; parameters
  become DTensor shards, all-gathered before each block's forward and backward, gradients
  reduce-scattered during backward (no separate synchronization step).

Both DDPs average gradients: each gradient is divided by the world size, then summed across
ranks (gloo has no averaging all-reduce). Both broadcast rank 0's parameters and buffers at
construction, so every rank starts from the same model.
"""
from __future__ import annotations

import warnings

import torch
import torch.distributed as dist
from torch import nn


def broadcast_from_rank0(module: nn.Module) -> None:
    """Overwrite every rank's parameters and buffers with rank 0's."""
    with torch.no_grad():
        for tensor in [*module.parameters(), *module.buffers()]:
            dist.broadcast(tensor, src=0)


class NaiveDDP:
    """All-reduce of every parameter's gradient, one after the other, once backward is done."""

    def __init__(self, module: nn.Module):
        self.module = module
        self.world_size = dist.get_world_size()
        broadcast_from_rank0(module)

    def finish_gradient_synchronization(self) -> None:
        """Average each gradient across ranks (blocking)."""
        for parameter in self.module.parameters():
            if parameter.grad is not None:
                parameter.grad.div_(self.world_size)
                dist.all_reduce(parameter.grad)


class OverlappedDDP:
    """An asynchronous all-reduce per parameter, launched by its gradient hook during backward."""

    def __init__(self, module: nn.Module):
        self.module = module
        self.world_size = dist.get_world_size()
        self._pending: list[dist.Work] = []
        broadcast_from_rank0(module)
        for parameter in module.parameters():
            if parameter.requires_grad:
                parameter.register_post_accumulate_grad_hook(self._launch_all_reduce)

    def _launch_all_reduce(self, parameter: torch.Tensor) -> None:
        parameter.grad.div_(self.world_size)
        self._pending.append(dist.all_reduce(parameter.grad, async_op=True))

    def finish_gradient_synchronization(self) -> None:
        """Wait for every all-reduce launched during this backward pass."""
        for work in self._pending:
            work.wait()
        self._pending.clear()


def shard_fsdp(model: nn.Module, device_type: str) -> nn.Module:
    """`fully_shard` each block of `model.layers`, then the root (embedding, final norm, LM head)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    # FSDP2 warns that the LM returns a view (its einsum output); nothing writes to it in place.
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")
    mesh = init_device_mesh(device_type, (dist.get_world_size(),))
    for block in model.layers:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model
