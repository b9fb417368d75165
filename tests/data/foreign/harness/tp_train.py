"""Tensor-parallel training of a small Transformer of its own with PyTorch's DTensor API
(``parallelize_module``: the attention's q, k, v and the MLP's first layer split by columns, the
attention's output and the MLP's second layer by rows), one process per GPU under ``torchrun``,
for foreign-trace tests (random weights, no download).

Ranges of its own (with --nvtx): ``train_step`` around each iteration (warm-up included), and
inside it ``forward`` (loss included), ``backward`` and ``optimizer``. Unlike data parallelism, the
all-reduces run inside the forward (after each row-split layer) and inside the backward (the
gradients of the column-split layers' inputs), not after the backward.
"""

import argparse
import contextlib
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


class Block(nn.Module):
    def __init__(self, d: int, local_heads: int):
        super().__init__()
        self.local_heads = local_heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.norm1(x)
        q, k, v = (m(h).view(b, t, self.local_heads, -1).transpose(1, 2) for m in (self.q, self.k, self.v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, -1)
        x = x + self.o(att)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class LM(nn.Module):
    def __init__(self, vocab: int, d: int, local_heads: int, layers: int, ctx: int):
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, local_heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return next_token_loss(self.head(self.norm(x)), ids)


def next_token_loss(logits, ids):
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def nvtx_range(on: bool, name: str):
    return torch.cuda.nvtx.range(name) if on else contextlib.nullcontext()


def synchronize(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--device", default="cuda")
    a = p.parse_args()

    world = int(os.environ["WORLD_SIZE"])
    rank = int(os.environ["LOCAL_RANK"])
    if a.device == "cuda":
        torch.cuda.set_device(rank)
    mesh = init_device_mesh(a.device, (world,))
    dev = torch.device(a.device, rank) if a.device == "cuda" else torch.device("cpu")
    torch.manual_seed(0)  # the same weights and batches on every rank
    model = LM(a.vocab, a.d_model, a.heads // world, a.layers, a.ctx).to(dev)
    split = {"q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(), "o": RowwiseParallel(),
             "fc1": ColwiseParallel(), "fc2": RowwiseParallel()}
    for block in model.blocks:
        parallelize_module(block, mesh, split)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)  # DTensor and plain tensors do not mix in foreach
    x = torch.randint(0, a.vocab, (a.batch, a.ctx), device=dev)

    times = []
    for _ in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with nvtx_range(a.nvtx, "train_step"):
            with nvtx_range(a.nvtx, "forward"):
                loss = model(x)
            with nvtx_range(a.nvtx, "backward"):
                loss.backward()
            with nvtx_range(a.nvtx, "optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        synchronize(dev)
        times.append(time.perf_counter() - t0)
    synchronize(dev)
    if rank == 0:
        print("world", world, "params per rank", sum(q.to_local().numel() if hasattr(q, "to_local") else q.numel()
                                                      for q in model.parameters()),
              "loss", float(loss), "step ms", [round(t * 1e3, 1) for t in times])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
