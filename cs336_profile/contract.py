"""What the runner writes and the analyzer reads, declared once (no torch, no pandas).

The runner (`cs336_profile`), the sweep (`nsys_runs`) and the analyzer (`analysis`) import these
names instead of repeating the literals: modes and their phases, the default NVTX range names,
the mark domain and events, results-file names and the columns both sides read, row statuses,
units, and the file-name stem of a trace. docs/architecture.md describes the same contract.
"""
from __future__ import annotations

from pathlib import PurePath

# ----------------------------------------------------------------------------- modes and phases
MODES = ("forward", "forward-backward", "train")
# The phases each mode runs, in order; every phase gets an NVTX range and a Python timer.
PHASES_BY_MODE = {
    "forward": ("forward",),
    "forward-backward": ("forward", "loss", "backward"),
    "train": ("forward", "loss", "backward", "optimizer_step"),
}
PHASES = PHASES_BY_MODE["train"]


def has_backward(config: dict | None) -> bool:
    """Whether the run config's mode (any, when it names none) runs a backward pass."""
    mode = (config or {}).get("mode")
    return mode is None or (isinstance(mode, str) and "backward" in PHASES_BY_MODE.get(mode, ()))


# The whole step (phases included), timed beside the phases.
STEP = "step"
TIMED_PARTS = (*PHASES, STEP)

# ----------------------------------------------------------------------------- NVTX range names
# Defaults; the analyzer takes other names from its options (analysis.core.phases.RangeNames).
WARMUP_PREFIX = "warmup_"
STEP_PREFIX = "step_"
ATTENTION_RANGE = "attention"
ATTENTION_SCORES_RANGE = "computing attention scores"
SOFTMAX_RANGE = "computing softmax"
FINAL_MATMUL_RANGE = "final matmul"
LAYER_PREFIX = "layer_"
# Around all measured steps; the config mark is emitted first inside it, so that an nsys capture
# starting at this range (`--capture-range=nvtx --nvtx-capture=measured_steps`) still holds it.
MEASURED_STEPS_RANGE = "measured_steps"
# Data-parallel runs (`--parallel`): the DDP modes' gradient averaging, a phase between backward
# and optimizer_step; the config mark adds `parallel` (one of PARALLEL_MODES), `rank`, `world_size`.
GRAD_SYNC = "grad_sync"
PARALLEL_MODES = ("ddp-naive", "ddp-overlap", "fsdp")
LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")  # what torchrun sets in each process


def step_range_name(index: int, measured: bool) -> str:
    """`step_<i>` for measured steps, `warmup_<i>` for warm-up steps."""
    return f"{STEP_PREFIX if measured else WARMUP_PREFIX}{index}"


# ----------------------------------------------------------------------------- marks
# Each mark's message is one JSON object whose "event" key is one of the events below.
MARK_DOMAIN = "cs336_profile"
CONFIG_EVENT = "config"            # once, opening MEASURED_STEPS_RANGE: the run config and model shapes
STEP_TIMING_EVENT = "step_timing"  # after each measured step: {"step": i, "phases_ms": {...}}

# ----------------------------------------------------------------------------- results files
STATUS_COLUMN = "status"
STATUS_OK = "ok"
STATUS_OOM = "OOM"
STATUS_FAILED = "failed"

BENCH = "bench"
BENCH_STEPS = "bench_steps"
ATTENTION = "attention"
COMPILE = "compile"
OVERHEAD = "overhead"
MEMORY = "memory"
MEMORY_TIMELINE = "memory_timeline"
MEMORY_LARGEST_ALLOCATIONS = "memory_largest_allocations"
MEMORY_ACTIVATION = "memory_activation"
MIXED_PRECISION = "mixed_precision"
MIXED_PRECISION_ACCUMULATION = "mixed_precision_accumulation"
MIXED_PRECISION_TOY_MODEL = "mixed_precision_toy_model"
CHECKPOINT = "checkpoint"                    # peak memory and step time per blocks-per-checkpoint K
CHECKPOINT_STEPS = "checkpoint_steps"
NORM_PRECISION = "layernorm"                # mp-b: one row per norm site, norm, dtype, computation
NORM_PRECISION_SUMMARY = "layernorm_summary"  # the largest error over the sites, per norm, dtype, computation
SNAPSHOT_FOLDER = "snapshots"

PEAK_MEMORY_COLUMN = "peak_memory_bytes"


def peak_column(phase: str) -> str:
    """The results column of a phase's peak allocated bytes: `forward` -> `forward_peak_bytes`."""
    return f"{phase}_peak_bytes"


PEAK_COLUMNS = (*(peak_column(phase) for phase in PHASES), PEAK_MEMORY_COLUMN)

# The mixed-precision accumulation loops add ADDEND to a sum ADDITIONS times (the handout's loops).
ADDEND = 0.01
ADDITIONS = 1000

# ----------------------------------------------------------------------------- units
FP32_BYTES = 4
MIB = 1024**2
GIB = 1024**3

# ----------------------------------------------------------------------------- trace files
# What `nsys profile` and `nsys export` leave, longest first so `.sqlite.xz` wins over `.xz`.
TRACE_SUFFIXES = (".sqlite.xz", ".sqlite", ".nsys-rep", ".qdrep")


def trace_stem(name: str | PurePath) -> str:
    """A trace's file name without its suffix and folder: `runs/a.sqlite.xz`, `a.sqlite`,
    `a.nsys-rep`, `a.qdrep` -> `a`; any other name loses its last suffix only."""
    name = PurePath(name).name
    for suffix in TRACE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return PurePath(name).stem
