"""Plain Hugging Face GPT-2 training loop (random weights), for foreign-trace tests.

Ranges of its own (with --nvtx): one range per iteration named ``train_iter_<i>`` (global index,
warm-up iterations included, nothing marks them as warm-up), and inside it ``fwd`` (model call with
labels, so the loss is inside), ``bwd`` and ``opt`` (AdamW step + zero_grad). With --accum K, K
``fwd``/``bwd`` pairs (micro-batches) come before each ``opt``; under DDP all but the last skip
the gradient all-reduce (``no_sync``). With --fsdp (under torchrun) each block and the model are
sharded with FSDP2's ``fully_shard``. With --compile the model is ``torch.compile``d (the first
iterations compile its forward and backward graphs); --compile-mode passes a mode, e.g.
``reduce-overhead``, which replays the compiled graphs as CUDA graphs. With --zero (under DDP) the
optimizer is ``ZeroRedundancyOptimizer`` over AdamW: each rank updates its shard of the parameters,
then broadcasts it to the others. With --nvtx-rank0 (under DDP) only rank 0 opens the ranges, as a
script that guards its annotations with ``if rank == 0`` does. With --per-epoch K the iterations are
named by epoch and step instead, ``epoch_<e>/step_<s>`` (K steps an epoch, the step counted from 0
again in each). --opt-range none leaves the optimizer step in no range (users who annotate only the
passes), --opt-range joined puts the backward and the optimizer step in one ``bwd+opt`` range, and
--opt-range outside ranges it as ``opt`` after the iteration's range has closed. --phase-format
names the phase ranges (``step_{i}_{phase}``: each iteration's number in its phases' names),
--forward-name the forward's alone (``forward+loss``), and --no-iter-range leaves out the
iteration's range. With --record-function the ranges are ``torch.profiler.record_function`` scopes
instead of NVTX ranges: nsys records them only under its ``--pytorch=autograd-nvtx`` or
``autograd-shapes-nvtx`` (each as ``<name>, op_id = <n>``).
"""

import argparse
import contextlib
import os
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

PHASE_WORDS = {"fwd": "forward", "bwd": "backward", "opt": "optimizer"}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--ddp", action="store_true")
    p.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step (DDP syncs on the last)")
    p.add_argument("--fsdp", action="store_true", help="shard each block and the model with FSDP2 (fully_shard)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--compile-mode", default=None, help="torch.compile's mode (reduce-overhead: CUDA graphs)")
    p.add_argument("--zero", action="store_true", help="ZeroRedundancyOptimizer over AdamW (with --ddp)")
    p.add_argument("--nvtx-rank0", action="store_true", help="with --nvtx under DDP: ranges on rank 0 only")
    p.add_argument("--per-epoch", type=int, default=0, help="name iterations epoch_<e>/step_<s>, this many steps an epoch")
    p.add_argument("--opt-range", choices=("opt", "none", "joined", "outside"), default="opt",
                   help="the optimizer step's range: its own, none, one with the backward (bwd+opt), or its own "
                        "after the iteration's range")
    p.add_argument("--phase-format", default="{short}",
                   help="the phase ranges' names: {short} (fwd, bwd, opt), {phase} (forward, backward, optimizer), "
                        "{i} the iteration (step_{i}_{phase})")
    p.add_argument("--forward-name", default=None, help="the forward's range name instead (forward+loss)")
    p.add_argument("--no-iter-range", action="store_true", help="no range around each iteration")
    p.add_argument("--record-function", action="store_true", help="with --nvtx: record_function scopes, not NVTX ranges")
    a = p.parse_args()

    rank = 0
    if a.ddp or a.fsdp:
        import torch.distributed as dist

        dist.init_process_group("nccl")
        rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=a.layers, n_embd=a.d_model, n_head=a.heads, n_positions=a.ctx)
    model = GPT2LMHeadModel(cfg).to(dev)
    model.train()
    if a.ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[rank])
    if a.fsdp:
        from torch.distributed.fsdp import fully_shard

        for block in model.transformer.h:
            fully_shard(block)
        fully_shard(model)
    if a.compile:
        model = torch.compile(model, mode=a.compile_mode)
    if a.zero:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-4)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, cfg.vocab_size, (a.batch, a.ctx), device=dev)

    def rng(name):
        ranged = a.nvtx and (rank == 0 or not a.nvtx_rank0)
        if not ranged:
            return contextlib.nullcontext()
        return torch.profiler.record_function(name) if a.record_function else torch.cuda.nvtx.range(name)

    def phase(short, i):
        name = a.phase_format.format(short=short, phase=PHASE_WORDS[short], i=i)
        return rng(a.forward_name if short == "fwd" and a.forward_name else name)

    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        if a.compile_mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        iteration = f"epoch_{i // a.per_epoch}/step_{i % a.per_epoch}" if a.per_epoch else f"train_iter_{i}"
        with rng(iteration) if not a.no_iter_range else contextlib.nullcontext():
            for k in range(a.accum):
                sync = contextlib.nullcontext() if not a.ddp or k == a.accum - 1 else model.no_sync()
                with sync:
                    with phase("fwd", i):
                        loss = model(input_ids=x, labels=x).loss
                    if a.opt_range == "joined":
                        with rng("bwd+opt"):
                            loss.backward()
                            opt.step()
                            opt.zero_grad(set_to_none=True)
                    else:
                        with phase("bwd", i):
                            loss.backward()
            if a.opt_range in ("opt", "none"):
                with phase("opt", i) if a.opt_range == "opt" else contextlib.nullcontext():
                    opt.step()
                    opt.zero_grad(set_to_none=True)
        if a.opt_range == "outside":
            with phase("opt", i):
                opt.step()
                opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    if rank == 0:
        print("gpt2 params", sum(q.numel() for q in model.parameters()), "step ms", [round(t * 1e3, 1) for t in times])
    if a.ddp or a.fsdp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
