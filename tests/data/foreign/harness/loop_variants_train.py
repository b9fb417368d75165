"""Plain Hugging Face GPT-2 training loop (random weights) in the shapes users' loops take, for
foreign-trace tests.

Ranges of its own (with --nvtx): ``train_step`` around each iteration (one name for every
iteration, warm-up included), and inside it ``forward`` (model call with labels, so the loss is
inside), ``backward`` and ``optimizer`` (AdamW step + zero_grad).

- --eval-every K: after every K-th iteration an evaluation of --eval-batches forward passes under
  ``torch.no_grad()`` in eval mode, outside the step's range (``evaluate``, each pass ``eval_forward``).
- --no-sync: no ``torch.cuda.synchronize()`` per iteration (only after the loop), so the CPU runs
  ahead of the GPU.
- --clip: ``clip_grad_norm_`` between the backward and the optimizer, in no range.
- --side-stream: each iteration's batch is copied to the GPU from pinned memory on a second stream
  (``prefetch``), which the default stream waits for.
- --data-parallel: ``nn.DataParallel`` over every visible GPU (one process, a thread per GPU).
- --muon: two optimizers stepped one after the other in ``optimizer``: ``torch.optim.Muon`` for
  the blocks' 2-D weights and ``torch.optim.AdamW`` for the rest.
- --optimizer-in-backward: no optimizer step after the backward: each parameter's own AdamW steps
  from its post-accumulate-grad hook, inside the backward (PyTorch's "optimizer step in the
  backward pass" recipe); no ``optimizer`` range.
- --timer host: the --warmup iterations with no synchronize, then a ``torch.cuda.synchronize()``
  after each of the --steps timed ones (a benchmark timed by the host's clock, warm-up untimed).
- --timer events: the --warmup iterations, one synchronize, a CUDA event recorded, the --steps
  timed iterations with no synchronize, a second event recorded, a synchronize, and the time
  between the events (a benchmark timed by CUDA events around its loop).
"""

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
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-batches", type=int, default=2)
    p.add_argument("--no-sync", action="store_true")
    p.add_argument("--clip", action="store_true")
    p.add_argument("--side-stream", action="store_true")
    p.add_argument("--data-parallel", action="store_true")
    p.add_argument("--muon", action="store_true")
    p.add_argument("--optimizer-in-backward", action="store_true")
    p.add_argument("--timer", choices=("host", "events"), default=None)
    a = p.parse_args()

    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=a.layers, n_embd=a.d_model, n_head=a.heads, n_positions=a.ctx)
    model = GPT2LMHeadModel(cfg).to(dev)
    model.train()
    if a.data_parallel:
        model = torch.nn.DataParallel(model)
    if a.muon:
        matrices = [q for n, q in model.named_parameters() if q.ndim == 2 and ".h." in f".{n}"]
        rest = [q for n, q in model.named_parameters() if not (q.ndim == 2 and ".h." in f".{n}")]
        optimizers = [torch.optim.Muon(matrices, lr=0.02), torch.optim.AdamW(rest, lr=1e-4)]
    elif a.optimizer_in_backward:
        optimizers = []
        per_parameter = {q: torch.optim.AdamW([q], lr=1e-4, foreach=False) for q in model.parameters()}

        def step_now(q):
            per_parameter[q].step()
            per_parameter[q].zero_grad(set_to_none=True)

        for q in model.parameters():
            q.register_post_accumulate_grad_hook(step_now)
    else:
        optimizers = [torch.optim.AdamW(model.parameters(), lr=1e-4)]
    host = torch.randint(0, cfg.vocab_size, (a.batch, a.ctx)).pin_memory()
    x = host.to(dev)
    copy_stream = torch.cuda.Stream() if a.side_stream else None

    def rng(name):
        return torch.cuda.nvtx.range(name) if a.nvtx else contextlib.nullcontext()

    def loss_of(out):
        return out.loss.mean() if a.data_parallel else out.loss

    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(a.warmup + a.steps):
        if a.timer == "events" and i == a.warmup:
            torch.cuda.synchronize()
            start.record()
        t0 = time.perf_counter()
        if copy_stream is not None:
            with torch.cuda.stream(copy_stream), rng("prefetch"):
                x = host.to(dev, non_blocking=True)
            torch.cuda.current_stream().wait_stream(copy_stream)
        with rng("train_step"):
            with rng("forward"):
                loss = loss_of(model(input_ids=x, labels=x, use_cache=False))
            with rng("backward"):
                loss.backward()
            if a.clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if optimizers:
                with rng("optimizer"):
                    for opt in optimizers:
                        opt.step()
                        opt.zero_grad(set_to_none=True)
        if a.eval_every and (i + 1) % a.eval_every == 0:
            model.eval()
            with rng("evaluate"), torch.no_grad():
                for _ in range(a.eval_batches):
                    with rng("eval_forward"):
                        loss_of(model(input_ids=x, labels=x, use_cache=False))
            model.train()
        if not a.no_sync and a.timer != "events" and (a.timer != "host" or i >= a.warmup):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    if a.timer == "events":
        end.record()
        torch.cuda.synchronize()
        print("timed loop ms", round(start.elapsed_time(end), 1))
    torch.cuda.synchronize()
    print("gpt2 params", sum(q.numel() for q in model.parameters()), "step ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
