"""Pipeline-parallel training of the Transformer of ``tp_train.py`` with PyTorch's
``torch.distributed.pipelining``, one process per GPU under ``torchrun``, for foreign-trace tests
(random weights, no download).

Rank 0 holds the embeddings and the first half of the blocks, the last rank the other half, the
final norm, the output layer and the loss. Each step's batch is cut into micro-batches that the
schedule (``--schedule gpipe``: every forward, then every backward; ``1f1b``: one forward and one
backward in turn once the pipeline is full) runs through the stages, the activations and their
gradients sent between the ranks by NCCL send/receive; the backward is started by the schedule on
the main thread and runs on the autograd thread. The schedule itself opens ``record_function``
ranges ``Forward <i>`` and ``Backward <i>`` per micro-batch, which become NVTX ranges only under
``--emit-nvtx`` (``torch.autograd.profiler.emit_nvtx``, every operator ranged too).

Ranges of its own (with --nvtx): ``train_step`` around each iteration (warm-up included, nothing
marks it), and inside it ``fwd_bwd`` (the schedule's step: every forward and backward of this
rank's stage, the loss on the last rank) and ``optimizer``.
"""

import argparse
import contextlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_train import Block, next_token_loss, nvtx_range, synchronize  # noqa: E402


class FirstStage(nn.Module):
    def __init__(self, vocab: int, d: int, heads: int, layers: int, ctx: int):
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))

    def forward(self, ids):
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return x


class LastStage(nn.Module):
    def __init__(self, vocab: int, d: int, heads: int, layers: int):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--d-model", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--microbatches", type=int, default=4)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--schedule", choices=("gpipe", "1f1b"), default="1f1b")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--emit-nvtx", action="store_true")
    p.add_argument("--device", default="cuda")
    a = p.parse_args()

    world = int(os.environ["WORLD_SIZE"])
    rank = int(os.environ["LOCAL_RANK"])
    if world != 2:
        raise SystemExit("two stages: run with --nproc_per_node 2")
    if a.device == "cuda":
        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    torch.manual_seed(rank)
    half = a.layers // 2
    module = (FirstStage(a.vocab, a.d_model, a.heads, half, a.ctx) if rank == 0
              else LastStage(a.vocab, a.d_model, a.heads, a.layers - half)).to(dev)
    stage = PipelineStage(module, rank, world, dev)
    kind = ScheduleGPipe if a.schedule == "gpipe" else Schedule1F1B
    schedule = kind(stage, n_microbatches=a.microbatches, loss_fn=next_token_loss)
    opt = torch.optim.AdamW(module.parameters(), lr=1e-4)
    torch.manual_seed(0)  # the same batch on both ranks: the first feeds it, the last takes it as the target
    ids = torch.randint(0, a.vocab, (a.batch, a.ctx), device=dev)

    times, losses = [], []
    with torch.autograd.profiler.emit_nvtx() if a.emit_nvtx else contextlib.nullcontext():
        for _ in range(a.warmup + a.steps):
            t0 = time.perf_counter()
            with nvtx_range(a.nvtx, "train_step"):
                with nvtx_range(a.nvtx, "fwd_bwd"):
                    if rank == 0:
                        schedule.step(ids)
                    else:
                        losses.clear()
                        schedule.step(target=ids, losses=losses)
                with nvtx_range(a.nvtx, "optimizer"):
                    opt.step()
                    opt.zero_grad(set_to_none=True)
            synchronize(dev)
            times.append(time.perf_counter() - t0)
    synchronize(dev)
    if rank == world - 1:
        print("schedule", a.schedule, "micro-batches", a.microbatches, "loss", float(torch.stack(losses).detach().mean()),
              "step ms", [round(t * 1e3, 1) for t in times])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
