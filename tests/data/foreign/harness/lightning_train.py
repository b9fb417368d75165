"""GPT-2 (random weights) trained by PyTorch Lightning's ``Trainer``, for foreign-trace tests.

Lightning runs the forward and the backward inside the optimizer's step: ``optimizer.step(closure)``
calls the closure, which runs ``training_step`` and the backward, before the update. With --nvtx
the module opens the ranges a Lightning user writes in its hooks: ``forward`` in
``training_step``, ``backward`` in ``backward`` and ``optimizer_step`` in ``optimizer_step`` (so
the forward and backward ranges lie inside the optimizer's), and a callback opens ``batch_<i>``
in ``on_train_batch_start`` and closes it in ``on_train_batch_end`` (push/pop across two hooks).
With --emit-nvtx, Lightning's ``PyTorchProfiler(emit_nvtx=True)`` names every operator and
Lightning's own actions (``[Strategy]SingleDeviceStrategy.training_step``, …) as NVTX ranges.
With --accumulate K, K batches (``batch_<i>`` each) make one optimizer step: the first K-1 run
``training_step`` and the backward outside the optimizer's step, the last inside its closure.
Nothing marks warm-up steps.
"""

import argparse
import contextlib

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel


class LitGPT(L.LightningModule):
    def __init__(self, cfg: GPT2Config, nvtx: bool):
        super().__init__()
        self.model = GPT2LMHeadModel(cfg)
        self.nvtx = nvtx

    def rng(self, name: str):
        return torch.cuda.nvtx.range(name) if self.nvtx else contextlib.nullcontext()

    def training_step(self, batch, batch_idx):
        (x,) = batch
        with self.rng("forward"):
            return self.model(input_ids=x, labels=x).loss

    def backward(self, loss, *args, **kwargs):
        with self.rng("backward"):
            loss.backward(*args, **kwargs)

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None):
        with self.rng("optimizer_step"):
            optimizer.step(closure=optimizer_closure)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


class BatchRanges(L.Callback):
    """``batch_<i>`` opened in one hook and closed in another, as a user's callback does."""

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        torch.cuda.nvtx.range_push(f"batch_{batch_idx}")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        torch.cuda.nvtx.range_pop()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--precision", default="32-true", help="Lightning's precision, e.g. bf16-mixed")
    p.add_argument("--accumulate", type=int, default=1, help="Trainer(accumulate_grad_batches=...): batches per update")
    p.add_argument("--nvtx", action="store_true", help="the module's and the callback's own ranges")
    p.add_argument("--emit-nvtx", action="store_true", help="Lightning's PyTorchProfiler(emit_nvtx=True)")
    p.add_argument("--accelerator", default="gpu")
    a = p.parse_args()

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=a.layers, n_embd=a.d_model, n_head=a.heads, n_positions=a.ctx)
    tokens = torch.randint(0, cfg.vocab_size, (a.batch * a.steps * a.accumulate, a.ctx))
    data = DataLoader(TensorDataset(tokens), batch_size=a.batch)
    profiler = None
    if a.emit_nvtx:
        from lightning.pytorch.profilers import PyTorchProfiler

        profiler = PyTorchProfiler(emit_nvtx=True)
    trainer = L.Trainer(max_steps=a.steps, accelerator=a.accelerator, devices=1, precision=a.precision,
                        accumulate_grad_batches=a.accumulate,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, profiler=profiler,
                        callbacks=[BatchRanges()] if a.nvtx else [])
    trainer.fit(LitGPT(cfg, a.nvtx), data)
    print("lightning steps", trainer.global_step)


if __name__ == "__main__":
    main()
