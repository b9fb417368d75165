"""Checks of a runner command line made before any work: each failure is an argparse error (exit 2).

Argument types refuse zero or negative counts and lengths as they are parsed; :func:`check_args`
then looks at what needs the whole command: a CUDA device that is not there, a results name that
would leave the results folder, a results folder that cannot be written, activation checkpointing
that cannot apply (groups larger than the model, or no backward pass), ``--parallel`` with
``--compile`` or without a launcher's RANK, WORLD_SIZE and LOCAL_RANK (or with values that are
no ranks), and, on the CPU, shapes whose smallest possible memory footprint is larger than the
host's whole memory (so an absurd context length fails at once instead of after allocating tens
of GB). On a GPU, and for shapes that may fit, running out of memory is a result the runner
records (OOM).
"""
from __future__ import annotations

import argparse
import os
import unicodedata

import torch

from cs336_profile.config import DEFAULT_CONTEXT_LENGTH, DEFAULT_HANDOUT, model_config
from cs336_profile.contract import LAUNCHER_VARIABLES
from cs336_profile.results import unwritable_reason

FP32_BYTES = 4
GIB = 1024**3


def positive_int(value: str) -> int:
    """Argument type: an integer of at least 1."""
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def non_negative_int(value: str) -> int:
    """Argument type: an integer of at least 0."""
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {number}")
    return number


def results_name(value: str) -> str:
    """Argument type: a file name without folders, so results stay inside ``--results-dir``."""
    if not value or value in (".", "..") or any(sep in value for sep in ("/", "\\", os.sep)):
        raise argparse.ArgumentTypeError(f"must be a plain file name inside --results-dir, got {value!r}")
    if any(unicodedata.category(char).startswith("C") for char in value):
        raise argparse.ArgumentTypeError(f"must hold no control or formatting characters (escape sequences), "
                                         f"got {value!r}")
    return value


def host_memory_bytes() -> int:
    """The host's physical memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def least_model_bytes(size: str, context_length: int, batch_size: int, mode: str, naive_attention: bool,
                      handout: str = DEFAULT_HANDOUT) -> int:
    """A lower bound of the memory one step needs: parameters (and, when training, their gradients
    and AdamW's two moments), the logits, and with naive attention one layer's score matrix."""
    model = model_config(size, handout)
    copies = 4 if mode == "train" else 2 if mode == "forward-backward" else 1
    tokens = batch_size * context_length
    scores = batch_size * model.num_heads * context_length * context_length if naive_attention else 0
    return FP32_BYTES * (copies * model.parameter_count() + tokens * model.vocab_size + scores)


def least_attention_bytes(batch_size: int, seq_len: int, head_dim: int, naive_attention: bool) -> int:
    """A lower bound of the attention experiment's memory: Q, K, V and, unless fused, the scores."""
    return FP32_BYTES * batch_size * seq_len * (3 * head_dim + (seq_len if naive_attention else 0))


def _shapes(args: argparse.Namespace) -> list[tuple[str, int]]:
    """(what, least bytes) of every configuration the command would run."""
    command = args.command
    if command == "attention":
        naive = any(impl != "sdpa" for impl in args.implementations)
        return [(f"attention seq {s} d {d}", least_attention_bytes(args.batch_size, s, d, naive))
                for s in args.seq_lens for d in args.head_dims]
    handout = getattr(args, "handout", DEFAULT_HANDOUT)
    sizes = getattr(args, "sizes", None) or [getattr(args, "size", None)]
    lengths = getattr(args, "context_lengths", None) or [getattr(args, "context_length", None)
                                                         or DEFAULT_CONTEXT_LENGTH[handout]]
    modes = getattr(args, "modes", None) or [getattr(args, "mode", "train")]
    naive = getattr(args, "attention", "naive") == "naive"
    return [(f"{size} at context {ctx}", least_model_bytes(size, ctx, args.batch_size, mode, naive, handout))
            for size in sizes if size is not None for ctx in lengths for mode in modes]


def checkpointing_problem(args: argparse.Namespace) -> str | None:
    """Why ``--checkpoint-every`` cannot apply to the command's runs, or None (also when not asked)."""
    every = getattr(args, "checkpoint_every", 0)
    if not every:
        return None
    modes = getattr(args, "modes", None) or [getattr(args, "mode", "train")]
    if "forward" in modes:
        return "--checkpoint-every needs a backward pass: it does nothing with --mode forward"
    for size in getattr(args, "sizes", None) or []:
        layers = model_config(size, args.handout).num_layers
        if every > layers:
            return f"--checkpoint-every {every} is more than the {layers} blocks of {size} ({args.handout} handout)"
    return None


def parallel_problem(args: argparse.Namespace) -> str | None:
    """Why ``--parallel`` cannot run: a compiled model, or no process group to join from the
    launcher's variables; None when it can (or is not asked for)."""
    if not getattr(args, "parallel", None):
        return None
    if args.compile:
        return "--parallel runs the eager model: leave out --compile"
    missing = [name for name in LAUNCHER_VARIABLES if name not in os.environ]
    if missing:
        return (f"--parallel needs a launcher that sets {', '.join(missing)}: "
                "python -m cs336_profile.launch --nproc-per-node N --parallel ... "
                "(or torchrun --nproc_per_node=N -m cs336_profile.run --parallel ...)")
    values = {name: os.environ[name] for name in LAUNCHER_VARIABLES}
    if not all(value.strip().isdigit() for value in values.values()):
        return f"--parallel: the launcher's {values} are not all whole numbers"
    rank, world_size, local_rank = (int(value) for value in values.values())
    if not rank < world_size or not local_rank < world_size:
        return f"--parallel: RANK {rank} and LOCAL_RANK {local_rank} must be below WORLD_SIZE {world_size}"
    return None


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, through ``parser.error`` (exit 2), a command that cannot run; create the results folder."""
    for why in (checkpointing_problem(args), parallel_problem(args)):
        if why is not None:
            parser.error(why)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA GPU is visible to torch here; use --device cpu")
    if getattr(args, "emit_nvtx", False) and args.device != "cuda":
        parser.error("--emit-nvtx needs --device cuda")
    try:
        shapes = _shapes(args)
    except ValueError as err:  # a size the chosen handout does not have
        parser.error(str(err))
    # On a GPU, running out of memory is a result the runner records (OOM); on the CPU it is the
    # host's memory, which an absurd shape would exhaust before anything could be recorded.
    available = host_memory_bytes()
    for what, least in shapes if args.device == "cpu" else ():
        if least > available:
            parser.error(f"{what} needs at least {least / GIB:,.1f} GiB, more than the {available / GIB:,.1f} GiB "
                         "of this host's memory")
    why = unwritable_reason(args.results_dir)
    if why is not None:
        parser.error(f"--results-dir {args.results_dir}: cannot write there ({why})")
