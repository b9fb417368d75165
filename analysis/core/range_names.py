"""The range names a user gives for some roles of the run's structure (the command line's
flags); every role not named is found in the trace by :mod:`analysis.core.structure`. Apart from
it, so that a run served from the results cache checks its options without loading the analysis."""
from __future__ import annotations

from dataclasses import dataclass

from cs336_profile.contract import PHASES


@dataclass(frozen=True)
class RangeNames:
    """Range names the user gave for some roles (the command line's flags); None = found in the
    trace. ``phases`` names, in order, forward, backward, optimizer (3 names: no loss range),
    forward, loss, backward, optimizer (4), or forward and backward (2), or the forward alone.
    Raises ValueError on an empty or repeated name or equal step prefixes."""

    warmup_prefix: str | None = None
    step_prefix: str | None = None
    phases: tuple[str, ...] | None = None
    regions: tuple[str, str, str] | None = None  # scores, softmax, final matmul
    warmup_steps: int | None = None

    def __post_init__(self):
        if self.phases is not None:
            object.__setattr__(self, "phases", tuple(self.phases))
            if not 1 <= len(self.phases) <= len(PHASES):
                raise ValueError(f"phase names: give 1 to {len(PHASES)} names, got {len(self.phases)}")
        if self.regions is not None:
            object.__setattr__(self, "regions", tuple(self.regions))
        named = [self.warmup_prefix, self.step_prefix, *(self.phases or ()), *(self.regions or ())]
        if any(name is not None and (not isinstance(name, str) or not name.strip()) for name in named):
            raise ValueError("a range name is empty")
        if self.warmup_prefix is not None and self.warmup_prefix == self.step_prefix:
            raise ValueError(f"the warm-up and step prefixes are both {self.step_prefix!r}")
        for group, values in (("phase", self.phases or ()), ("attention sub-range", self.regions or ())):
            if len(set(values)) != len(values):
                raise ValueError(f"the {group} names repeat a name: {', '.join(values)}")
        if self.warmup_steps is not None and self.warmup_steps < 0:
            raise ValueError("warm-up steps must be 0 or more")

    def phase_roles(self) -> dict[str, str]:
        """Range name -> phase, for the phases the user named."""
        if self.phases is None:
            return {}
        order = {1: ("forward",), 2: ("forward", "backward"), 3: ("forward", "backward", "optimizer_step"),
                 4: PHASES}[len(self.phases)]
        return dict(zip(self.phases, order))
