"""A typical mixed-precision fine-tuning loop on Hugging Face GPT-2 (random weights), for
foreign-trace tests: fp16 autocast with ``torch.amp.GradScaler``, gradient clipping and a cosine
learning-rate schedule stepped after every optimizer step.

Ranges of its own (with --nvtx), named with a ``train/`` prefix: ``train/step_<i>`` for every
iteration (warm-up included, nothing marks it), inside it ``train/forward`` (loss inside, from
``labels=``), ``train/backward`` (the scaled loss's backward), ``train/clip_grad`` (unscale and
clip) and ``train/optimizer_step`` (scaler step and update, scheduler step, zero_grad). With
--checkpointing each block's forward runs again inside the backward.
"""

import argparse
import contextlib
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--checkpointing", action="store_true", help="recompute each block's activations in the backward")
    a = p.parse_args()

    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=4, n_embd=512, n_head=8, n_positions=a.ctx)
    model = GPT2LMHeadModel(cfg).to(dev)
    model.train()
    if a.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.warmup + a.steps)
    scaler = torch.amp.GradScaler("cuda")
    x = torch.randint(0, cfg.vocab_size, (a.batch, a.ctx), device=dev)

    def rng(name):
        return torch.cuda.nvtx.range(name) if a.nvtx else contextlib.nullcontext()

    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with rng(f"train/step_{i}"):
            with rng("train/forward"), torch.autocast("cuda", dtype=torch.float16):
                loss = model(input_ids=x, labels=x).loss
            with rng("train/backward"):
                scaler.scale(loss).backward()
            with rng("train/clip_grad"):
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            with rng("train/optimizer_step"):
                scaler.step(opt)
                scaler.update()
                schedule.step()
                opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print("gpt2 params", sum(q.numel() for q in model.parameters()), "step ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
