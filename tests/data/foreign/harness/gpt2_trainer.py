"""Hugging Face ``Trainer`` on GPT-2 (random weights, random tokens), for foreign-trace tests:
the training loop is the library's own (bf16, 2 micro-batches of gradient accumulation per
optimizer step, a linear learning-rate schedule, gradient clipping), with no ranges of its own.
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, count: int, ctx: int, vocab: int):
        self.ids = torch.randint(0, vocab, (count, ctx), generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--out", default="/tmp/trainer-out")
    a = p.parse_args()
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=4, n_embd=512, n_head=8, n_positions=256)
    args = TrainingArguments(output_dir=a.out, max_steps=a.steps, per_device_train_batch_size=4,
                             gradient_accumulation_steps=2, learning_rate=1e-4, lr_scheduler_type="linear",
                             max_grad_norm=1.0, bf16=True, logging_steps=1, save_strategy="no", report_to=[],
                             dataloader_num_workers=0, seed=0)
    Trainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=RandomTokens(64, 256, cfg.vocab_size)).train()


if __name__ == "__main__":
    main()
