"""One model under both handouts' names: the 2026 handout renamed sizes (its ``xl`` is 2025's
``2.7B``), so a 2026 question can be answered from a 2025 run of the same dimensions, and says so."""
from __future__ import annotations

from cs336_profile.config import SIZES_BY_HANDOUT


def same_model(size: str, handout: str, other_handout: str) -> str | None:
    """The name ``other_handout`` gives the model that ``handout`` calls ``size`` (same d_model,
    d_ff, layers and heads), or None when it has no such model."""
    model = SIZES_BY_HANDOUT.get(handout, {}).get(size)
    names = [name for name, other in SIZES_BY_HANDOUT.get(other_handout, {}).items() if other == model]
    return names[0] if model is not None and names else None
