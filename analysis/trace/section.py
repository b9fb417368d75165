"""How a section of the summary is declared: :class:`Section` (its key, how it is built and the
sections it reads), and :class:`SummarySources`, what every section is built from."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from analysis.core.phases import LabelledOps
from analysis.core.timings import RunRecord
from analysis.load import Trace
from analysis.trace.nsys_inputs import NsysInputs


@dataclass(frozen=True)
class SummarySources:
    """One trace's inputs to its summary: the loaded trace, its labelled operations, the run
    record and the GPU's name (the trace's, else the run config's)."""

    trace: Trace
    labelled: LabelledOps
    run: RunRecord
    gpu: str | None

    @cached_property
    def inputs(self) -> NsysInputs:
        """The labelled operations with their kernel categories, built when a section first reads
        them. Then ``labelled.ops`` keeps only their columns: nothing reads the others (launch
        calls, correlation ids, bytes) any more, and at millions of kernels they would stay beside
        the sections' tables."""
        inputs = NsysInputs.build(self.labelled, self.run, self.gpu, self.trace.gemm_ops)
        self.labelled.ops = inputs.ops
        return inputs


@dataclass(frozen=True)
class Section:
    """A key of the summary: ``build(sources, *needed)`` makes its value (JSON-ready or numpy
    scalars) from the :class:`SummarySources` and the values of the sections named in ``needs``,
    in that order; those are built before it."""

    key: str
    build: Callable[..., Any]
    needs: tuple[str, ...] = ()
