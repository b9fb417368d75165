"""Whole-model torch.compile against eager, per size: forward, and forward+backward+optimizer."""
from __future__ import annotations

from cs336_profile.config import RunConfig


def compile_runs(sizes: list[str], context_length: int, modes: list[str], **settings) -> list[RunConfig]:
    """Eager and compiled runs of each size and mode, side by side (same other settings)."""
    return [RunConfig(size=size, context_length=context_length, mode=mode, compile=compiled, **settings)
            for size in sizes for mode in modes for compiled in (False, True)]
