"""A plain PyTorch language model split across two GPUs of one process (naive model parallelism),
for foreign-trace tests.

The embedding and the first half of the layers (``torch.nn.TransformerEncoderLayer``, causal) live
on ``cuda:0``; the other half, the final norm and the output layer on ``cuda:1``; the activations
move between them inside the forward pass, and the loss is taken on ``cuda:1``. Ranges of its own
(with --nvtx): one range per iteration named ``iteration <i>`` (warm-up iterations included,
nothing marks them), and inside it ``forward`` (model and loss), ``backward`` and ``optimizer``
(AdamW step + zero_grad). With --micro-batches M, the batch is split into M parts whose forward
and backward passes run one after another inside those ranges (gradient accumulation).
"""

import argparse
import contextlib
import time

import torch
from torch import nn


class SplitLM(nn.Module):
    """Embedding and ``layers // 2`` layers on ``first``, the rest, the norm and the head on ``second``."""

    def __init__(self, vocab: int, d_model: int, heads: int, layers: int, ctx: int,
                 first: torch.device, second: torch.device):
        super().__init__()
        self.first, self.second = first, second
        self.embed = nn.Embedding(vocab, d_model).to(first)
        self.pos = nn.Embedding(ctx, d_model).to(first)

        def layer(device):
            return nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0, batch_first=True,
                                              norm_first=True).to(device)

        self.front = nn.ModuleList(layer(first) for _ in range(layers // 2))
        self.back = nn.ModuleList(layer(second) for _ in range(layers - layers // 2))
        self.norm = nn.LayerNorm(d_model).to(second)
        self.head = nn.Linear(d_model, vocab, bias=False).to(second)
        self.mask = {d: nn.Transformer.generate_square_subsequent_mask(ctx, device=d) for d in (first, second)}

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.pos(torch.arange(tokens.shape[1], device=self.first))
        for block in self.front:
            x = block(x, src_mask=self.mask[self.first], is_causal=True)
        x = x.to(self.second)
        for block in self.back:
            x = block(x, src_mask=self.mask[self.second], is_causal=True)
        return self.head(self.norm(x))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--micro-batches", type=int, default=1)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--devices", default="cuda:0,cuda:1", help="the two devices the halves live on")
    a = p.parse_args()

    torch.manual_seed(0)
    first, second = (torch.device(d) for d in a.devices.split(","))
    model = SplitLM(a.vocab, a.d_model, a.heads, a.layers, a.ctx, first, second)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, a.vocab, (a.batch, a.ctx), device=first)
    targets = torch.randint(0, a.vocab, (a.batch, a.ctx), device=second)

    def rng(name):
        return torch.cuda.nvtx.range(name) if a.nvtx else contextlib.nullcontext()

    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with rng(f"iteration {i}"):
            for part, target in zip(tokens.chunk(a.micro_batches), targets.chunk(a.micro_batches)):
                with rng("forward"):
                    logits = model(part)
                    loss = nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten()) / a.micro_batches
                with rng("backward"):
                    loss.backward()
            with rng("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        for device in {first, second}:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    print("split lm params", sum(q.numel() for q in model.parameters()), "step ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
