"""Hugging Face GPT-2 forward-only benchmark (random weights), for foreign-trace tests: one range
around the warm-up calls (``warmup``) and one around the timed calls (``--range-name``), the calls
themselves with no range of their own, as a benchmark that times a loop inside one range does;
with --sync a synchronize after each call, else one after the loop; with --compile-mode the model
is ``torch.compile``d in that mode (``reduce-overhead`` replays each call as a CUDA graph)."""

import argparse
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--range-name", default="inference")
    p.add_argument("--sync", action="store_true")
    p.add_argument("--compile-mode", default=None)
    a = p.parse_args()

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=a.layers, n_embd=a.d_model, n_head=a.heads, n_positions=a.context)
    model = GPT2LMHeadModel(cfg).cuda().eval()
    if a.compile_mode:
        model = torch.compile(model, mode=a.compile_mode)
    x = torch.randint(0, cfg.vocab_size, (a.batch, a.context), device="cuda")

    def calls(count: int) -> None:
        for _ in range(count):
            model(input_ids=x)
            if a.sync:
                torch.cuda.synchronize()

    with torch.no_grad():
        with torch.cuda.nvtx.range("warmup"):
            calls(a.warmup)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.cuda.nvtx.range(a.range_name):
            calls(a.steps)
        torch.cuda.synchronize()
    print("forward ms", round((time.perf_counter() - t0) / a.steps * 1e3, 2))


if __name__ == "__main__":
    main()
