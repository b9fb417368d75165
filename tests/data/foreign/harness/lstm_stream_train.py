"""A plain PyTorch LSTM language model trained on random tokens, for foreign-trace tests: cuDNN's
recurrent kernels instead of attention, and each next batch copied from pinned host memory on a
side CUDA stream while the current one computes (the copy stream waits on nothing, the compute
stream waits on the copy's event). With --nvtx, ranges as users abbreviate them, warm-up
iterations ranged like the measured ones: ``iter <i>`` around every iteration, ``prefetch``,
``fwd``, ``loss``, ``bwd`` and ``opt`` inside it."""

import argparse
import contextlib
import time

import torch
from torch import nn


class LstmLm(nn.Module):
    """Embedding, a stacked LSTM and a tied-size output projection."""

    def __init__(self, vocab: int, width: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, num_layers=layers, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embed(tokens))
        return self.head(hidden)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--nvtx", action="store_true")
    a = p.parse_args()

    def rng(name: str):
        return torch.cuda.nvtx.range(name) if a.nvtx else contextlib.nullcontext()

    torch.manual_seed(0)
    model = LstmLm(a.vocab, a.width, a.layers).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    host = [torch.randint(0, a.vocab, (a.batch, a.seq + 1)).pin_memory() for _ in range(4)]
    copy_stream = torch.cuda.Stream()
    ready = torch.cuda.Event()
    with torch.cuda.stream(copy_stream):
        batch = host[0].cuda(non_blocking=True)
        ready.record()
    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with rng(f"iter {i}"):
            torch.cuda.current_stream().wait_event(ready)
            current = batch
            current.record_stream(torch.cuda.current_stream())
            with rng("prefetch"), torch.cuda.stream(copy_stream):
                batch = host[(i + 1) % len(host)].cuda(non_blocking=True)
                ready = torch.cuda.Event()
                ready.record()
            with rng("fwd"):
                logits = model(current[:, :-1])
            with rng("loss"):
                loss = nn.functional.cross_entropy(logits.reshape(-1, a.vocab), current[:, 1:].reshape(-1))
            with rng("bwd"):
                loss.backward()
            with rng("opt"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print("lstm step ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
