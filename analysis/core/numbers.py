"""The one check of a number read from a file a user gives (results files, timings.json).

JSON lets through what no measurement can be: ``NaN`` and ``Infinity`` (Python's reader accepts
them), 1e308, a negative time. :func:`number_problem` says why such a value cannot stand for the
quantity its name says, so the reader leaves it out with a line instead of printing "nan MiB".
A quantity is taken as one that cannot be negative when a word of its name is a unit or a count
(``step_ms_mean``, ``peak_memory_bytes``, ``tokens_per_s``, ``context_length``).
"""
from __future__ import annotations

import math

MAX_MAGNITUDE = float(2**63)  # past what any 64-bit counter (bytes, epoch nanoseconds) holds
NON_NEGATIVE_WORDS = frozenset({"ms", "us", "ns", "s", "bytes", "mib", "gib", "count", "tokens", "passes",
                                "steps", "length", "size", "parameters", "layers", "heads"})


def is_number(value) -> bool:
    """Whether ``value`` is a JSON number (not a boolean), finite or not."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_problem(name: str, value) -> str | None:
    """Why the number ``value`` cannot be the quantity ``name``, or None when it can."""
    if not math.isfinite(value):
        return "not a finite number"
    if abs(value) > MAX_MAGNITUDE:
        return f"beyond any measurement (more than {MAX_MAGNITUDE:.3g} in size)"
    if value < 0 and NON_NEGATIVE_WORDS & set(name.lower().split("_")):
        return "negative, for a quantity that cannot be"
    return None


def plausible(name: str, value) -> bool:
    """Whether ``value`` is a number that can stand for the quantity ``name``."""
    return is_number(value) and number_problem(name, value) is None
