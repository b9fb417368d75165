"""NVTX ranges and the self-describing marks the analyzer reads.

Ranges go to NVTX's default domain under the names of docs/architecture.md (`warmup_<i>`,
`step_<i>`, `forward`, `loss`, `backward`, `optimizer_step`, `attention` and its three parts).
Marks go to the domain `cs336_profile`; each message is one JSON object with an `"event"` key:
`config` once before the first step, `step_timing` after each measured step.

One switch turns every range and mark off (to measure their overhead). Inside code that
`torch.compile` is tracing, ranges are left out: an NVTX call there would break the graph and
change what is measured, and a compiled region's kernels are fused across those boundaries anyway.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import nvtx
import torch

from cs336_profile.contract import MARK_DOMAIN

_enabled = True


def is_enabled() -> bool:
    """Whether ranges and marks are emitted."""
    return _enabled


@contextmanager
def annotations(enabled: bool) -> Iterator[None]:
    """Turn all ranges and marks on or off for the duration of the block."""
    global _enabled
    previous, _enabled = _enabled, enabled
    try:
        yield
    finally:
        _enabled = previous


@contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """A push/pop NVTX range in the default domain (a no-op when off or being compiled)."""
    if not _enabled or torch.compiler.is_compiling():
        yield
        return
    nvtx.push_range(name)
    try:
        yield
    finally:
        nvtx.pop_range()


def mark(event: str, **fields) -> None:
    """Emit one mark in the `cs336_profile` domain whose message is `{"event": event, **fields}`."""
    if _enabled:
        nvtx.mark(message=json.dumps({"event": event, **fields}), domain=MARK_DOMAIN)
