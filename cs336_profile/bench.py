"""Warm-up and measured steps of one configuration: per-phase timings, peak memory, OOM as a result.

Each step runs inside an NVTX range `warmup_<i>` or `step_<i>`, the measured steps together inside
`measured_steps` (where `nsys --capture-range=nvtx` can start, leaving warm-up out); each phase (forward, loss,
backward, optimizer_step) inside its own range, and ends with `torch.cuda.synchronize()` so that
its Python time is GPU time. A configuration that runs out of GPU memory gives a row with status
`OOM` and null measurements; its memory is freed before the next configuration.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from cs336_profile.annotate import annotations, mark, nvtx_range
from cs336_profile.config import RunConfig
from cs336_profile.contract import (
    CONFIG_EVENT,
    GRAD_SYNC,
    MEASURED_STEPS_RANGE,
    PEAK_MEMORY_COLUMN,
    PHASES,
    STATUS_OK,
    STATUS_OOM,
    STEP_TIMING_EVENT,
    TIMED_PARTS,
    peak_column,
    step_range_name,
)
from cs336_profile.environment import gpu_name
from cs336_profile.model import TransformerLM, parameter_count
from cs336_profile.optim import AdamW, cross_entropy

# Settings that identify a configuration in per-step rows.
STEP_ROW_KEYS = ("handout", "size", "context_length", "batch_size", "mode", "dtype", "compile", "attention",
                 "device", "warmup_steps", "measured_steps", "nvtx_annotations", "checkpoint_every")


@dataclass
class ConfigResult:
    """One configuration's summary row and its per-step rows (warm-up steps included)."""

    summary: dict
    steps: list[dict] = field(default_factory=list)


@dataclass
class StepRecord:
    """One step's wall-clock times (per phase and "step") and per-phase peak allocated memory."""

    times_ms: dict[str, float] = field(default_factory=dict)
    peaks_bytes: dict[str, int] = field(default_factory=dict)


@dataclass
class Workload:
    """What every step of a configuration uses: the model, its optimizer (train mode), one batch."""

    model: torch.nn.Module
    optimizer: AdamW | None
    tokens: torch.Tensor
    targets: torch.Tensor
    # Data-parallel runs: averages the gradients across ranks after backward (phase `grad_sync`).
    gradient_sync: Callable[[], None] | None = None


def is_out_of_memory(exc: BaseException) -> bool:
    """True when the error, or one it was raised from (e.g. inside torch.compile), is a CUDA OOM."""
    while exc is not None:
        if isinstance(exc, torch.OutOfMemoryError) or "CUDA out of memory" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def free_device_memory(device: str) -> None:
    """Drop unreachable tensors and return cached GPU blocks, so the next run starts clean."""
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def build_model(run: RunConfig) -> torch.nn.Module:
    """The Transformer LM of `run.size`, initialized on the run's device, compiled if asked."""
    torch.manual_seed(run.seed)
    with torch.device(run.device):
        model = TransformerLM(run.model, run.context_length, run.attention, run.layer_ranges, run.checkpoint_every)
    return torch.compile(model) if run.compile else model


def _autocast(run: RunConfig) -> AbstractContextManager:
    return torch.autocast(run.device, dtype=torch.bfloat16, enabled=run.dtype == "bf16")


def synchronize(device: str) -> None:
    """Wait until the device has run everything queued so far (nothing to wait for on the CPU)."""
    if device == "cuda":
        torch.cuda.synchronize()


def mean_std_columns(prefix: str, samples) -> dict[str, float | None]:
    """`<prefix>_mean` and `<prefix>_std` (sample standard deviation), None where too few samples."""
    values = np.asarray(samples, dtype=float)
    return {f"{prefix}_mean": float(values.mean()) if values.size else None,
            f"{prefix}_std": float(values.std(ddof=1)) if values.size > 1 else None}


@contextmanager
def _timed_phase(name: str, device: str, record: StepRecord) -> Iterator[None]:
    """NVTX range + wall-clock timer that ends after a device synchronize; peak memory per phase."""
    with nvtx_range(name):
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        yield
        synchronize(device)
        record.times_ms[name] = (time.perf_counter() - start) * 1e3
    if device == "cuda":
        record.peaks_bytes[name] = torch.cuda.max_memory_allocated()


def prepare_workload(run: RunConfig) -> Workload:
    """Model (on the device, compiled if asked), optimizer and a fixed random batch of token ids."""
    torch.set_float32_matmul_precision("high" if run.allow_tf32 else "highest")
    model = build_model(run)
    optimizer = AdamW(model.parameters()) if run.mode == "train" else None
    shape = (run.batch_size, run.context_length)
    tokens = torch.randint(run.model.vocab_size, shape, device=run.device)
    targets = torch.randint(run.model.vocab_size, shape, device=run.device)
    return Workload(model, optimizer, tokens, targets)


@dataclass(frozen=True)
class Setup:
    """How a configuration's workload is built and what its marks and rows add (data-parallel runs).

    `labels` go into the config mark and every row (e.g. rank and world size); `timed_parts` are
    the parts whose times the rows hold.
    """

    prepare: Callable[[RunConfig], Workload] = prepare_workload
    labels: dict = field(default_factory=dict)
    timed_parts: tuple[str, ...] = TIMED_PARTS


def run_step(run: RunConfig, workload: Workload, range_name: str) -> StepRecord:
    """One step of the run's mode inside the NVTX range `range_name`, each phase timed."""
    record = StepRecord()
    grad_mode = torch.no_grad() if run.mode == "forward" else nullcontext()
    with nvtx_range(range_name):
        start = time.perf_counter()
        if workload.optimizer is not None:
            workload.optimizer.zero_grad(set_to_none=True)
        with _timed_phase("forward", run.device, record), grad_mode, _autocast(run):
            logits = workload.model(workload.tokens)  # (B, T, vocab)
        if "loss" in run.phases:
            with _timed_phase("loss", run.device, record), _autocast(run):
                loss = cross_entropy(logits, workload.targets)
            with _timed_phase("backward", run.device, record):
                loss.backward()
            if workload.gradient_sync is not None:
                with _timed_phase(GRAD_SYNC, run.device, record):
                    workload.gradient_sync()
        if workload.optimizer is not None:
            with _timed_phase("optimizer_step", run.device, record):
                workload.optimizer.step()
        record.times_ms["step"] = (time.perf_counter() - start) * 1e3
    return record


def step_row(run: RunConfig, config_index: int, measured: bool, index: int, record: StepRecord,
             setup: Setup = Setup()) -> dict:
    """One row of the per-step results: the configuration's keys, the step and its times."""
    settings = run.as_dict()
    return {
        **{key: settings[key] for key in STEP_ROW_KEYS},
        **setup.labels,
        "config_index": config_index,
        "step_kind": "measured" if measured else "warmup",
        "step_index": index,
        **{f"{part}_ms": record.times_ms.get(part) for part in setup.timed_parts},
    }


def _summary_row(run: RunConfig, config_index: int, status: str, parameters: int | None,
                 measured: list[StepRecord], setup: Setup) -> dict:
    """Mean and sample standard deviation per phase over the measured steps (null when absent)."""
    row = {**run.as_dict(), **setup.labels, "config_index": config_index, "status": status, "parameters": parameters}
    for part in setup.timed_parts:
        row |= mean_std_columns(f"{part}_ms", [r.times_ms[part] for r in measured if part in r.times_ms])
    step_mean_ms = row["step_ms_mean"]
    row["tokens_per_s"] = run.tokens_per_step / (step_mean_ms / 1e3) if step_mean_ms else None
    peaks = {phase: [r.peaks_bytes[phase] for r in measured if phase in r.peaks_bytes] for phase in PHASES}
    row[PEAK_MEMORY_COLUMN] = max((max(p) for p in peaks.values() if p), default=None)
    for phase, values in peaks.items():
        row[peak_column(phase)] = max(values) if values else None
    return row


def _measure(run: RunConfig, config_index: int, around_measured_steps: Callable[[], AbstractContextManager],
             steps: list[dict], setup: Setup) -> tuple[int, list[StepRecord]]:
    workload = setup.prepare(run)
    for index in range(run.warmup_steps):
        record = run_step(run, workload, step_range_name(index, measured=False))
        steps.append(step_row(run, config_index, False, index, record, setup))
    measured = []
    emit_nvtx = torch.autograd.profiler.emit_nvtx() if run.emit_nvtx else nullcontext()
    with nvtx_range(MEASURED_STEPS_RANGE), emit_nvtx, around_measured_steps():
        mark(CONFIG_EVENT, **run.as_dict(), gpu_name=gpu_name(run.device), **setup.labels)
        for index in range(run.measured_steps):
            record = run_step(run, workload, step_range_name(index, measured=True))
            mark(STEP_TIMING_EVENT, step=index, phases_ms=record.times_ms)
            steps.append(step_row(run, config_index, True, index, record, setup))
            measured.append(record)
    return parameter_count(workload.model), measured


def run_config(run: RunConfig, config_index: int = 0,
               around_measured_steps: Callable[[], AbstractContextManager] = nullcontext,
               setup: Setup = Setup()) -> ConfigResult:
    """Build, warm up and measure one configuration; an OOM becomes a row with status `OOM`.

    `config_index` is the configuration's position in this process (0 pays the process's one-off
    costs). `around_measured_steps` returns a context manager entered around the measured steps
    (the memory experiment records an allocator snapshot there); `setup` builds the workload.
    """
    steps: list[dict] = []
    with annotations(run.nvtx_annotations):
        try:
            parameters, measured = _measure(run, config_index, around_measured_steps, steps, setup)
            summary = _summary_row(run, config_index, STATUS_OK, parameters, measured, setup)
        except Exception as exc:  # noqa: BLE001 - only out-of-memory errors are turned into rows
            if not is_out_of_memory(exc):
                raise
            summary = _summary_row(run, config_index, STATUS_OOM, None, [], setup)
    if run.compile:
        torch._dynamo.reset()  # compiled graphs of this model would only count against cache limits
    free_device_memory(run.device)
    return ConfigResult(summary, steps)


def run_configs(runs: list[RunConfig], progress: bool = True,
                on_result: Callable[[list[ConfigResult]], None] | None = None,
                setup: Setup = Setup()) -> list[ConfigResult]:
    """Run configurations one after the other, with a progress bar across them.

    `on_result` is called with the results so far after each configuration (to save partial results).
    """
    bar = tqdm(runs, desc="configs", unit="config", disable=not progress)
    results = []
    for index, run in enumerate(bar):
        bar.set_postfix_str(f"{run.size} ctx{run.context_length} {run.mode} {run.dtype}")
        results.append(run_config(run, config_index=index, setup=setup))
        if on_result is not None:
            on_result(results)
    return results
