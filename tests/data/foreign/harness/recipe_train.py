"""Training loops annotated the ways tutorials show (plain PyTorch, the convolutional network of
``cnn_train.py``), for foreign-trace tests.

--recipe iteration: the recipe of PyTorch's "Using Nsight Systems to profile GPU workload" post:
  warm-up iterations unannotated, then ``cudaProfilerStart`` and per iteration ``iteration<i>``
  holding ``forward``, ``backward`` and ``opt.step()`` (the loss between forward and backward, in no
  range); run under ``--capture-range=cudaProfilerApi``, so the trace holds the measured iterations only.
--recipe epoch: ``Epoch <i>`` (one batch each) holding ``DataLoader`` (host-to-device copies),
  ``Forward/Backward Pass`` (model, loss and backward in one range) and ``Optimizer Step``.
--recipe batch: ``Batch <i>`` holding ``Load Data``, ``Forward``, ``Calculate Loss/Sync`` (the loss
  and a ``.item()``), ``Backward`` and ``Optimizer Step``; the first 2 batches are warm-up and
  nothing marks them.
"""

import argparse
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn_train import network  # noqa: E402

nvtx = torch.cuda.nvtx


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--recipe", choices=("iteration", "epoch", "batch"), required=True)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=4)
    a = p.parse_args()

    torch.manual_seed(0)
    model = network((64, 128)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    host_x = torch.randn(a.batch, 3, 64, 64).pin_memory()
    host_y = torch.randint(0, 100, (a.batch,)).pin_memory()
    x, y = host_x.cuda(), host_y.cuda()
    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        if a.recipe == "iteration":
            opt.zero_grad()
            on = i >= a.warmup
            if i == a.warmup:
                torch.cuda.cudart().cudaProfilerStart()
            if on:
                nvtx.range_push(f"iteration{i}")
                nvtx.range_push("forward")
            out = model(x)
            if on:
                nvtx.range_pop()
            loss = criterion(out, y)
            if on:
                nvtx.range_push("backward")
            loss.backward()
            if on:
                nvtx.range_pop()
                nvtx.range_push("opt.step()")
            opt.step()
            if on:
                nvtx.range_pop()
                nvtx.range_pop()
        elif a.recipe == "epoch":
            with nvtx.range(f"Epoch {i}"):
                with nvtx.range("DataLoader"):
                    x, y = host_x.cuda(non_blocking=True), host_y.cuda(non_blocking=True)
                opt.zero_grad()
                with nvtx.range("Forward/Backward Pass"):
                    loss = criterion(model(x), y)
                    loss.backward()
                with nvtx.range("Optimizer Step"):
                    opt.step()
        else:
            nvtx.range_push(f"Batch {i}")
            nvtx.range_push("Load Data")
            x, y = host_x.cuda(non_blocking=True), host_y.cuda(non_blocking=True)
            nvtx.range_pop()
            nvtx.range_push("Forward")
            out = model(x)
            nvtx.range_pop()
            nvtx.range_push("Calculate Loss/Sync")
            loss = criterion(out, y)
            loss.item()
            opt.zero_grad()
            nvtx.range_pop()
            nvtx.range_push("Backward")
            loss.backward()
            nvtx.range_pop()
            nvtx.range_push("Optimizer Step")
            opt.step()
            nvtx.range_pop()
            nvtx.range_pop()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    if a.recipe == "iteration":
        torch.cuda.cudart().cudaProfilerStop()
    print(a.recipe, "step ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
