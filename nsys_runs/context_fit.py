"""The 2026 grid's context lengths: the longest power-of-two context that fits, and the two below it.

The search asks `fits(context)` (one short training step of the runner, OOM or not) from a starting
power of two: upward, doubling, while it fits (up to a maximum); downward, halving, when the start
does not. Every probe is returned, so the OOM rows are kept as results.
"""
from __future__ import annotations

from collections.abc import Callable


def largest_fitting_context(fits: Callable[[int], bool], start: int = 256, minimum: int = 256,
                            maximum: int = 16384) -> tuple[int | None, list[tuple[int, bool]]]:
    """The longest power-of-two context in [minimum, maximum] for which `fits` holds, and every probe made.

    None when not even `minimum` fits. Assumes memory grows with context (once one length does not
    fit, no longer one does).
    """
    if start & (start - 1) or not minimum <= start <= maximum:
        raise ValueError(f"start {start} must be a power of two in [{minimum}, {maximum}]")
    probes = [(start, fits(start))]
    step = 2 if probes[0][1] else 0.5
    while True:
        context, ok = probes[-1]
        if ok and step < 1:
            return context, probes  # backing off: the first length that fits
        if not ok and step > 1:
            return context // 2, probes  # going up: the one before the first that did not fit
        following = int(context * step)
        if not minimum <= following <= maximum:
            return (context if ok else None), probes
        probes.append((following, fits(following)))


def profiled_contexts(largest: int | None, count: int = 3, above: int = 128) -> list[int]:
    """Up to `count` power-of-two contexts longer than `above`, ending at `largest`, shortest first."""
    if largest is None:
        return []
    return [largest // 2**i for i in reversed(range(count)) if largest // 2**i > above]
