"""Plain Hugging Face Llama training loop (random weights) with gradient accumulation and bf16
autocast, for foreign-trace tests.

Ranges of its own (with --nvtx): one range per optimizer step named ``step <i>`` (global index,
warm-up steps included, nothing marks them as warm-up); inside it one ``microbatch <k>`` range per
micro-batch holding ``forward`` (model call with labels, so the loss is inside) and ``backward``;
then ``optimizer`` (AdamW step + zero_grad) once per step.
"""

import argparse
import contextlib
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--accum", type=int, default=4)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--nvtx", action="store_true")
    a = p.parse_args()

    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=a.layers, hidden_size=a.d_model, num_attention_heads=a.heads,
                      intermediate_size=4 * a.d_model, max_position_embeddings=a.ctx, vocab_size=32000)
    model = LlamaForCausalLM(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batches = [torch.randint(0, cfg.vocab_size, (a.batch, a.ctx), device=dev) for _ in range(a.accum)]

    def rng(name):
        return torch.cuda.nvtx.range(name) if a.nvtx else contextlib.nullcontext()

    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with rng(f"step {i}"):
            for k, x in enumerate(batches):
                with rng(f"microbatch {k}"):
                    with rng("forward"), torch.autocast("cuda", dtype=torch.bfloat16):
                        loss = model(input_ids=x, labels=x).loss / a.accum
                    with rng("backward"):
                        loss.backward()
            with rng("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print("llama params", sum(q.numel() for q in model.parameters()), "step ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
