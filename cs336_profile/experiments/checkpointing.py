"""Activation checkpointing: peak memory and step time against the number of blocks per checkpoint.

With N blocks in groups of K, backward keeps the N/K group inputs and recomputes one group's
activations at a time, so memory goes as N/K · (one block's input) + K · (one block's activations):
the textbook optimum is K ≈ √N when the two are alike. The study measures, on the runner's own
training step, K = 1, a few values around √N, N, and no checkpointing; an OOM is a row.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from cs336_profile.config import RunConfig, model_config


@dataclass(frozen=True)
class CheckpointStudy:
    """The 2026 handout's question: the xl model, batch 4, sequence 2048, training steps in fp32."""

    size: str = "xl"
    handout: str = "2026"
    context_length: int = 2048
    batch_size: int = 4
    warmup_steps: int = 1
    measured_steps: int = 2


def group_sizes_to_try(num_layers: int) -> list[int]:
    """1, the powers of two up to N, the integers either side of √N, N; then 0 (no checkpointing)."""
    root = math.sqrt(num_layers)
    near_root = {math.floor(root) - 1, math.floor(root), math.ceil(root), math.ceil(root) + 1}
    powers = {2**i for i in range(int(math.log2(num_layers)) + 1)}
    candidates = {num_layers} | near_root | powers
    return [k for k in sorted(candidates) if 1 <= k <= num_layers] + [0]


def checkpoint_runs(study: CheckpointStudy, **settings) -> list[RunConfig]:
    """One training configuration per group size (`settings`: the runner's other RunConfig fields)."""
    num_layers = model_config(study.size, study.handout).num_layers
    return [RunConfig(size=study.size, handout=study.handout, context_length=study.context_length,
                      batch_size=study.batch_size, mode="train", warmup_steps=study.warmup_steps,
                      measured_steps=study.measured_steps, checkpoint_every=k, **settings)
            for k in group_sizes_to_try(num_layers)]
