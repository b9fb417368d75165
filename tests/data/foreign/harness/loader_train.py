"""A plain PyTorch loop fed by a DataLoader with worker processes, for foreign-trace tests: the
network of ``cnn_train.py`` on a dataset of random images that the workers batch in processes of
their own (no GPU work there), pinned by the loader's pin-memory thread and copied to the GPU in
the loop. Ranges of its own: ``train_step`` (unindexed, warm-up steps included, nothing marks
them) holding ``forward`` (the loss inside), ``backward`` and ``optimizer``."""

import argparse
import os
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn_train import network  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(a.batch * a.batches, 3, 64, 64), torch.randint(0, 100, (a.batch * a.batches,)))
    loader = DataLoader(data, batch_size=a.batch, num_workers=a.workers, pin_memory=True, shuffle=True)
    model = network((64, 128)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times = []
    for x, y in loader:
        t0 = time.perf_counter()
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.cuda.nvtx.range("train_step"):
            with torch.cuda.nvtx.range("forward"):
                loss = nn.functional.cross_entropy(model(x), y)
            with torch.cuda.nvtx.range("backward"):
                loss.backward()
            with torch.cuda.nvtx.range("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print("loader step ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
