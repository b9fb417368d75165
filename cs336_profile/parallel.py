"""Data-parallel runs of the bench: one process per rank, started by torchrun.

    torchrun --nproc_per_node=2 -m cs336_profile.run --parallel ddp-overlap --sizes medium
    python -m cs336_profile.launch --nproc-per-node 2 --parallel ddp-overlap --sizes medium  # one-line Ctrl-C

Each process reads RANK, WORLD_SIZE and LOCAL_RANK, joins the default process group (NCCL on
CUDA, gloo on the CPU) and works on GPU LOCAL_RANK. Every rank builds the model from the run's
seed, wraps it as the mode says (`cs336_profile.grad_sync`) and trains on its own batch of
`batch_size` sequences (the batch size is per rank; the global batch is world_size times it).
Steps and phases get the NVTX ranges of single-GPU runs in every process, plus `grad_sync` between
backward and optimizer_step in the DDP modes; the config mark carries `parallel`, `rank`,
`world_size`, `local_rank` and `backend`. Rank 0 gathers every rank's rows for the results files.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

import torch
import torch.distributed as dist

from cs336_profile.bench import ConfigResult, Setup, Workload, prepare_workload, run_configs
from cs336_profile.config import RunConfig
from cs336_profile.contract import GRAD_SYNC, LAUNCHER_VARIABLES, PARALLEL_MODES, PHASES_BY_MODE, STEP
from cs336_profile.grad_sync import NaiveDDP, OverlappedDDP, shard_fsdp
from cs336_profile.optim import AdamW

# Times every row of a data-parallel run holds (grad_sync is null for FSDP, which has no such phase).
PARALLEL_TIMED_PARTS = (*PHASES_BY_MODE["forward-backward"], GRAD_SYNC, "optimizer_step", STEP)
JOIN_TIMEOUT_S = 120.0  # how long a rank waits for the others to join the process group


@dataclass(frozen=True)
class Ranks:
    """This process's place in the process group."""

    rank: int
    world_size: int
    local_rank: int
    backend: str


def join_process_group(device: str, timeout_s: float = JOIN_TIMEOUT_S) -> Ranks:
    """Join the default process group from torchrun's variables (checked by
    :func:`cs336_profile.preflight.parallel_problem`); pick GPU LOCAL_RANK on CUDA. A rank whose
    peers do not all join within ``timeout_s`` ends with one line saying whom it waited for."""
    rank, world_size, local_rank = (int(os.environ[name]) for name in LAUNCHER_VARIABLES)
    backend = "nccl" if device == "cuda" else "gloo"
    timeout = timedelta(seconds=timeout_s)
    try:
        if device == "cuda":
            torch.cuda.set_device(local_rank)
            dist.init_process_group(backend, device_id=torch.device("cuda", local_rank), timeout=timeout)
        else:
            dist.init_process_group(backend, timeout=timeout)
    except (RuntimeError, ValueError) as err:  # torch's DistStoreError and rendezvous errors
        where = f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
        raise SystemExit(f"rank {rank} of {world_size}: the process group at {where} was not complete within "
                         f"{timeout_s:g} s ({type(err).__name__}); start all {world_size} ranks with "
                         f"torchrun --nproc_per_node={world_size}, or raise --join-timeout") from None
    return Ranks(rank, world_size, local_rank, backend)


def rank_batch(run: RunConfig, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank `rank`'s own batch (token ids, targets), each (batch_size, context_length), on the run's device.

    Drawn on the CPU from a generator seeded by the run's seed and the rank, so the same on any device.
    """
    generator = torch.Generator().manual_seed((run.seed << 16) + rank)
    shape = (run.batch_size, run.context_length)
    tokens, targets = (torch.randint(run.model.vocab_size, shape, generator=generator) for _ in range(2))
    return tokens.to(run.device), targets.to(run.device)


def prepare_parallel_workload(run: RunConfig, mode: str, rank: int) -> Workload:
    """The run's model wrapped for `mode`, an optimizer over its (possibly sharded) parameters, the rank's batch."""
    workload = prepare_workload(run)  # the model is built from the run's seed: the same on every rank
    gradient_sync = None
    if mode == "fsdp":
        shard_fsdp(workload.model, run.device)
    else:
        ddp = (NaiveDDP if mode == "ddp-naive" else OverlappedDDP)(workload.model)
        gradient_sync = ddp.finish_gradient_synchronization
    # FSDP replaces the parameters by shards: the optimizer must see the new ones.
    optimizer = AdamW(workload.model.parameters()) if workload.optimizer is not None else None
    tokens, targets = rank_batch(run, rank)
    return Workload(workload.model, optimizer, tokens, targets, gradient_sync)


def parallel_setup(mode: str, ranks: Ranks) -> Setup:
    """How each rank builds its workload, and the labels its config mark and rows carry."""
    if mode not in PARALLEL_MODES:
        raise ValueError(f"parallel mode {mode!r} is not one of {PARALLEL_MODES}")
    labels = {"parallel": mode, "rank": ranks.rank, "world_size": ranks.world_size,
              "local_rank": ranks.local_rank, "backend": ranks.backend}
    return Setup(prepare=partial(prepare_parallel_workload, mode=mode, rank=ranks.rank), labels=labels,
                 timed_parts=PARALLEL_TIMED_PARTS)


def gather_to_rank0(results: list[ConfigResult], ranks: Ranks) -> list[ConfigResult]:
    """On rank 0, every rank's results ordered by configuration then rank; elsewhere an empty list."""
    gathered = [None] * ranks.world_size if ranks.rank == 0 else None
    dist.gather_object(results, gathered, dst=0)
    if ranks.rank != 0:
        return []
    return [per_rank[index] for index in range(len(results)) for per_rank in gathered]


def run_parallel_configs(runs: list[RunConfig], mode: str, progress: bool = True,
                         on_result: Callable[[list[ConfigResult]], None] | None = None,
                         join_timeout_s: float = JOIN_TIMEOUT_S) -> list[ConfigResult]:
    """Run every configuration on every rank of the launcher's process group.

    After each configuration rank 0 gathers every rank's results and passes them to `on_result`;
    it returns them all (one per configuration and rank), the other ranks an empty list.
    """
    ranks = join_process_group(runs[0].device, join_timeout_s)
    gathered: list[ConfigResult] = []

    def collect(results: list[ConfigResult]) -> None:
        gathered[:] = gather_to_rank0(results, ranks)
        if ranks.rank == 0 and on_result is not None:
            on_result(gathered)

    try:
        run_configs(runs, progress=progress and ranks.rank == 0, on_result=collect,
                    setup=parallel_setup(mode, ranks))
    finally:
        dist.destroy_process_group()
    return gathered
