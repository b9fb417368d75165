"""Tiny runs of the CS336 model on the CPU, shared by the runner's tests.

Importing this module puts torch on one thread: tiny models run fastest that way, and a second
thread would fight the other test worker for the cores.
"""
from __future__ import annotations

import torch

from cs336_profile.config import RunConfig

torch.set_num_threads(1)


def tiny(**settings) -> RunConfig:
    """The tiny model on the CPU, context 8, one warm-up and two measured steps, unless `settings` say otherwise."""
    return RunConfig(**({"size": "tiny", "context_length": 8, "device": "cpu", "warmup_steps": 1,
                         "measured_steps": 2} | settings))
