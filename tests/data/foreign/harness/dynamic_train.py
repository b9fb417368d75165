"""Training loops whose iterations differ from one another, as users' loops often do, for
foreign-trace tests (random weights, no download).

Ranges of its own (with --nvtx): ``train_step`` around each iteration (warm-up included), and
inside it ``forward`` (loss included), ``backward`` and ``optimizer``.

- --varlen: each iteration's batch has its own sequence length, drawn from --lengths (dynamic
  padding, as a fine-tuning loop over real text has): the same kernels, of durations that differ
  several-fold from one step to the next.
- --moe: a small mixture-of-experts Transformer of its own instead of GPT-2: top-1 routing, each
  expert run only on the tokens routed to it, an expert that receives none skipped (a host read of
  the routing each layer): the kernel count differs from step to step.
- --rl: each iteration first samples continuations with Hugging Face ``generate`` under
  ``torch.no_grad()`` (``rollout``, outside ``train_step``), then trains on them (a policy update,
  as an RL fine-tuning loop does).
- --profile-range: the measured iterations (after --warmup) lie inside one ``profile`` range, for
  ``nsys profile --capture-range=nvtx --nvtx-capture=profile``.
- --sweep-layers 2,6: one run after another in the same process, a model of each depth, each with
  its own warm-up, under the same range names (a benchmark sweep over model sizes).
"""

import argparse
import contextlib
import time

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel


class MoEBlock(nn.Module):
    """Pre-norm attention, then a top-1 routed mixture of MLP experts."""

    def __init__(self, d: int, heads: int, experts: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.router = nn.Linear(d, experts)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                     for _ in range(experts))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        att = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        h = self.norm2(x).reshape(b * t, d)
        gate = self.router(h).softmax(-1)
        weight, choice = gate.max(-1)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            rows = (choice == e).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            out.index_add_(0, rows, expert(h[rows]) * weight[rows, None])
        return x + out.view(b, t, d)


class MoELM(nn.Module):
    def __init__(self, vocab: int, d: int, heads: int, layers: int, experts: int, ctx: int):
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(MoEBlock(d, heads, experts) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


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
    p.add_argument("--varlen", action="store_true")
    p.add_argument("--lengths", default="64,512,128,384,96,256,448,160")
    p.add_argument("--moe", action="store_true")
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--rl", action="store_true")
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--profile-range", action="store_true")
    p.add_argument("--sweep-layers", default="")
    p.add_argument("--device", default="cuda")
    a = p.parse_args()

    dev = torch.device(a.device)
    depths = [int(n) for n in a.sweep_layers.split(",")] if a.sweep_layers else [a.layers]
    for layers in depths:
        train(a, dev, layers)


def train(a, dev: torch.device, layers: int) -> None:
    torch.manual_seed(0)
    vocab = 50257
    max_len = max(int(n) for n in a.lengths.split(",")) if a.varlen else a.ctx + (a.new_tokens if a.rl else 0)
    if a.moe:
        model = MoELM(vocab, a.d_model, a.heads, layers, a.experts, max_len).to(dev)
    else:
        cfg = GPT2Config(n_layer=layers, n_embd=a.d_model, n_head=a.heads, n_positions=max_len)
        model = GPT2LMHeadModel(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    lengths = [int(n) for n in a.lengths.split(",")]

    def rng(name):
        return torch.cuda.nvtx.range(name) if a.nvtx else contextlib.nullcontext()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def loss_of(ids):
        return model(ids) if a.moe else model(input_ids=ids, labels=ids, use_cache=False).loss

    times, shapes = [], []
    profile = contextlib.ExitStack()
    for i in range(a.warmup + a.steps):
        if a.profile_range and i == a.warmup:
            profile.enter_context(torch.cuda.nvtx.range("profile"))
        t0 = time.perf_counter()
        length = lengths[i % len(lengths)] if a.varlen else a.ctx
        x = torch.randint(0, vocab, (a.batch, length), device=dev)
        if a.rl:
            model.eval()
            with rng("rollout"), torch.no_grad():
                x = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=a.new_tokens,
                                   min_new_tokens=a.new_tokens, do_sample=True, pad_token_id=0)
            model.train()
        with rng("train_step"):
            with rng("forward"):
                loss = loss_of(x)
            with rng("backward"):
                loss.backward()
            with rng("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - t0)
        shapes.append(tuple(x.shape))
    profile.close()
    sync()
    print("layers", layers, "params", sum(q.numel() for q in model.parameters()), "shapes", shapes,
          "step ms", [round(t * 1e3, 1) for t in times])

if __name__ == "__main__":
    main()
