"""Hugging Face GPT-2 text generation (random weights, KV cache), for foreign-trace tests: no
backward, no optimizer, each ``generate`` call a prompt pass and then one short forward per new
token. With --nvtx one range per call named ``generate_<i>`` (warm-up calls included, nothing marks
them as warm-up)."""

import argparse
import contextlib
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--nvtx", action="store_true")
    a = p.parse_args()

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=a.layers, n_embd=a.d_model, n_head=a.heads, n_positions=a.prompt + a.new_tokens)
    model = GPT2LMHeadModel(cfg).cuda().eval()
    x = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt), device="cuda")
    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with torch.cuda.nvtx.range(f"generate_{i}") if a.nvtx else contextlib.nullcontext(), torch.no_grad():
            model.generate(x, max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens, do_sample=False,
                           pad_token_id=0)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print("generate ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
