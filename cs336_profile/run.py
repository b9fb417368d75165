"""`python -m cs336_profile.run`: the bench (default subcommand) and one subcommand per experiment.

    python -m cs336_profile.run --sizes small medium --context-lengths 128 256 --mode train
    python -m cs336_profile.run --handout 2026 --sizes xl --checkpoint-every 4
    python -m cs336_profile.run attention | mixed-precision | memory | compile | overhead
    python -m cs336_profile.run checkpoint | layernorm

`--handout 2025|2026` picks the edition's size table (default 2025; `xl` differs between them).

Every subcommand prints a table and writes `<results-dir>/<name>.json` and `.csv`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import nvtx  # noqa: F401  (the annotations' package: checked here with torch, used in annotate)
    import torch
except ModuleNotFoundError as missing:  # an analyzer-only install
    sys.exit(f"the runner needs {missing.name}: pip install 'cs336-profile[runner]' (torch and nvtx)")
from tqdm import tqdm

from cs336_profile.bench import ConfigResult, run_configs
from cs336_profile.config import (
    ATTENTION_KINDS,
    DEFAULT_CONTEXT_LENGTH,
    DEFAULT_HANDOUT,
    DEVICES,
    DTYPES,
    HANDOUTS,
    SIZE_NAMES,
    SIZES,
    RunConfig,
)
from cs336_profile.contract import (
    ATTENTION,
    BENCH,
    CHECKPOINT,
    COMPILE,
    GIB,
    MEMORY,
    MEMORY_LARGEST_ALLOCATIONS,
    MIXED_PRECISION,
    MODES,
    NORM_PRECISION,
    NORM_PRECISION_SUMMARY,
    OVERHEAD,
    PEAK_MEMORY_COLUMN,
    SNAPSHOT_FOLDER,
    peak_column,
)
from cs336_profile.environment import environment
from cs336_profile.experiments.attention import IMPLEMENTATIONS, AttentionGrid, run_attention_grid
from cs336_profile.experiments.checkpointing import CheckpointStudy, checkpoint_runs
from cs336_profile.experiments.compile import compile_runs
from cs336_profile.experiments.memory import MemoryStudy, run_memory_study
from cs336_profile.experiments.mixed_precision import accumulation_loops, toy_model_dtypes
from cs336_profile.experiments.norm_precision import NormStudy, norm_precision_rows, worst_over_sites
from cs336_profile.experiments.overhead import alternating_steps, overhead_rows
from cs336_profile.parallel import JOIN_TIMEOUT_S, PARALLEL_MODES, run_parallel_configs
from cs336_profile.preflight import check_args, non_negative_int, positive_int, results_name
from cs336_profile.results import write_results
from cs336_profile.tables import mean_std, number, plain, print_table

SUBCOMMANDS = ("bench", "attention", "mixed-precision", "memory", "compile", "overhead", "checkpoint", "layernorm")

BENCH_COLUMNS = {
    "size": plain("size"), "ctx": plain("context_length"), "mode": plain("mode"), "dtype": plain("dtype"),
    "compiled": plain("compile"), "nvtx": plain("nvtx_annotations"),
    "forward ms": mean_std("forward_ms"), "loss ms": mean_std("loss_ms"),
    "backward ms": mean_std("backward_ms"), "optimizer ms": mean_std("optimizer_step_ms"),
    "step ms": mean_std("step_ms"), "tokens/s": number("tokens_per_s", digits=0),
    "peak GiB": number(PEAK_MEMORY_COLUMN, GIB),
}

PARALLEL_COLUMNS = {"rank": plain("rank"), **BENCH_COLUMNS, "grad sync ms": mean_std("grad_sync_ms")}


# ----------------------------------------------------------------------------- arguments
def _add_common(parser: argparse.ArgumentParser, experiment: str) -> None:
    """Options of every subcommand; its results files are named after `experiment` unless --name says otherwise."""
    parser.set_defaults(experiment=experiment)
    parser.add_argument("--device", choices=DEVICES, default="cuda" if torch.cuda.is_available() else "cpu",
                        help="where the model runs (default: cuda when available)")
    parser.add_argument("--results-dir", type=Path, default=Path("results"),
                        help="folder of the results files (default: results)")
    parser.add_argument("--name", type=results_name, default=experiment, help="results file name (without extension)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_handout(parser: argparse.ArgumentParser, default: str = DEFAULT_HANDOUT) -> None:
    parser.add_argument("--handout", choices=HANDOUTS, default=default,
                        help=f"the edition whose size table names the sizes (default {default})")


def _add_model_input(parser: argparse.ArgumentParser, study) -> None:
    """--handout, --size, --context-length and --batch-size of a one-model study, its defaults from `study`."""
    _add_handout(parser, study.handout)
    parser.add_argument("--size", choices=SIZE_NAMES, default=study.size, help=f"model size (default: {study.size})")
    parser.add_argument("--context-length", type=positive_int, default=study.context_length,
                        help=f"sequence length (default: {study.context_length})")
    parser.add_argument("--batch-size", type=positive_int, default=study.batch_size,
                        help=f"sequences per batch (default: {study.batch_size})")


def _add_run_settings(parser: argparse.ArgumentParser, warmup: int, steps: int) -> None:
    _add_handout(parser)
    parser.add_argument("--sizes", nargs="+", choices=SIZE_NAMES, default=["small"],
                        help="model sizes of the handout's table (default: small)")
    parser.add_argument("--batch-size", type=positive_int, default=RunConfig.batch_size, help="sequences per step (default: 4)")
    parser.add_argument("--warmup", type=non_negative_int, default=warmup, help="warm-up steps")
    parser.add_argument("--steps", type=positive_int, default=steps, help="measured steps")
    parser.add_argument("--dtype", choices=DTYPES, default="fp32", help="bf16 = torch.autocast(bfloat16)")
    parser.add_argument("--attention", choices=ATTENTION_KINDS, default="naive",
                        help="the model's attention: its own (naive) or torch's scaled_dot_product_attention (sdpa)")
    parser.add_argument("--no-nvtx", action="store_true", help="no NVTX ranges or marks")
    parser.add_argument("--layer-ranges", action="store_true", help="an NVTX range around each block")
    parser.add_argument("--allow-tf32", action="store_true", help="let fp32 matmuls use TF32")
    parser.add_argument("--checkpoint-every", type=non_negative_int, default=0, metavar="K",
                        help="activation checkpointing over groups of K consecutive blocks (0: none)")


def _run_settings(args: argparse.Namespace) -> dict:
    return dict(batch_size=args.batch_size, warmup_steps=args.warmup, measured_steps=args.steps,
                dtype=args.dtype, attention=args.attention, device=args.device, handout=args.handout,
                nvtx_annotations=not args.no_nvtx, layer_ranges=args.layer_ranges, allow_tf32=args.allow_tf32,
                checkpoint_every=args.checkpoint_every)


def _context_lengths(args: argparse.Namespace) -> list[int]:
    """The lengths asked for, else the handout's default context length."""
    return args.context_lengths or [DEFAULT_CONTEXT_LENGTH[args.handout]]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m cs336_profile.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    bench = commands.add_parser("bench", help="time warm-up and measured steps (default subcommand)")
    _add_common(bench, BENCH)
    _add_run_settings(bench, warmup=2, steps=3)
    bench.add_argument("--context-lengths", nargs="+", type=positive_int,
                       help="sequence lengths (default: the handout's, 2025: 128, 2026: 512)")
    bench.add_argument("--mode", choices=MODES, default="train", help="the phases each step runs (default: train)")
    bench.add_argument("--compile", action="store_true", help="torch.compile the model")
    bench.add_argument("--emit-nvtx", action="store_true",
                       help="torch.autograd.profiler.emit_nvtx around the measured steps (one range per op)")
    bench.add_argument("--parallel", choices=PARALLEL_MODES,
                       help="data-parallel run over torchrun's processes (batch size per rank)")
    bench.add_argument("--join-timeout", type=positive_int, default=int(JOIN_TIMEOUT_S), metavar="S",
                       help=f"with --parallel, seconds a rank waits for the others to join "
                            f"(default: {JOIN_TIMEOUT_S:g})")
    bench.set_defaults(handler=cmd_bench)

    attention = commands.add_parser("attention", help="attention alone: eager, compiled, SDPA")
    _add_common(attention, ATTENTION)
    attention.add_argument("--head-dims", nargs="+", type=positive_int, default=list(AttentionGrid.head_dims),
                           help="head dimensions d of the grid")
    attention.add_argument("--seq-lens", nargs="+", type=positive_int, default=list(AttentionGrid.seq_lens),
                           help="sequence lengths of the grid")
    attention.add_argument("--implementations", nargs="+", choices=IMPLEMENTATIONS, default=list(IMPLEMENTATIONS),
                           help="attention implementations to time (default: all)")
    attention.add_argument("--batch-size", type=positive_int, default=AttentionGrid.batch_size, help="batch size (default: 8)")
    attention.add_argument("--warmup-passes", type=non_negative_int, default=AttentionGrid.warmup_passes,
                           help="untimed forward and backward passes per cell")
    attention.add_argument("--passes", type=positive_int, default=AttentionGrid.passes, help="timed passes per cell")
    attention.set_defaults(handler=cmd_attention)

    mixed = commands.add_parser("mixed-precision", help="accumulation loops and the ToyModel's dtypes")
    _add_common(mixed, MIXED_PRECISION)
    mixed.set_defaults(handler=cmd_mixed_precision)

    memory = commands.add_parser("memory", help="peak memory and allocator snapshots of one size")
    _add_common(memory, MEMORY)
    memory.add_argument("--size", choices=list(SIZES), default=MemoryStudy.size, help="the model size")
    memory.add_argument("--context-lengths", nargs="+", type=positive_int, default=list(MemoryStudy.context_lengths),
                        help="sequence lengths whose peaks are measured")
    memory.add_argument("--modes", nargs="+", choices=MODES, default=list(MemoryStudy.modes), help="modes measured")
    memory.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(MemoryStudy.dtypes), help="dtypes measured")
    memory.add_argument("--snapshot-context-length", type=positive_int, default=MemoryStudy.snapshot_context_length,
                        help="the sequence length whose fp32 runs record allocator snapshots (CUDA only)")
    memory.add_argument("--snapshot-dir", type=Path, help="where snapshots go (default: <results-dir>/snapshots)")
    memory.add_argument("--batch-size", type=positive_int, default=MemoryStudy.batch_size, help="sequences per step")
    memory.set_defaults(handler=cmd_memory)

    compiled = commands.add_parser("compile", help="whole model compiled vs eager, per size")
    _add_common(compiled, COMPILE)
    _add_run_settings(compiled, warmup=2, steps=5)
    compiled.add_argument("--context-length", type=positive_int, default=256, help="sequence length (default: 256)")
    compiled.add_argument("--modes", nargs="+", choices=MODES, default=["forward", "train"],
                          help="modes timed compiled and eager (default: forward train)")
    compiled.set_defaults(handler=cmd_compile)

    overhead = commands.add_parser("overhead", help="steps with and without NVTX annotations, alternating")
    _add_common(overhead, OVERHEAD)
    _add_run_settings(overhead, warmup=3, steps=100)
    overhead.add_argument("--context-lengths", nargs="+", type=positive_int,
                          help="sequence lengths (default: the handout's, 2025: 128, 2026: 512)")
    overhead.add_argument("--mode", choices=MODES, default="train", help="the phases each step runs (default: train)")
    overhead.set_defaults(handler=cmd_overhead)

    checkpointed = commands.add_parser("checkpoint", help="peak memory and step time per checkpointed block group")
    _add_common(checkpointed, CHECKPOINT)
    _add_model_input(checkpointed, CheckpointStudy())
    checkpointed.add_argument("--warmup", type=non_negative_int, default=CheckpointStudy.warmup_steps,
                              help=f"warm-up steps per group size (default: {CheckpointStudy.warmup_steps})")
    checkpointed.add_argument("--steps", type=positive_int, default=CheckpointStudy.measured_steps,
                              help=f"measured steps per group size (default: {CheckpointStudy.measured_steps})")
    checkpointed.add_argument("--dtype", choices=DTYPES, default="fp32", help="bf16 = torch.autocast(bfloat16)")
    checkpointed.set_defaults(handler=cmd_checkpoint)

    norms = commands.add_parser("layernorm", help="LayerNorm and RMSNorm in fp16/bf16 against fp32 on real activations")
    _add_common(norms, NORM_PRECISION)
    _add_model_input(norms, NormStudy())
    norms.add_argument("--train-steps", type=non_negative_int, default=NormStudy.train_steps,
                       help="training steps before the activations are taken (0: freshly initialized)")
    norms.set_defaults(handler=cmd_layernorm)
    return parser


def _config(args: argparse.Namespace) -> dict:
    return {key: (str(value) if isinstance(value, Path) else value)
            for key, value in vars(args).items() if key not in ("handler", "experiment", "written")}


def _write(args: argparse.Namespace, rows: list[dict], part: str = "") -> Path:
    """Results of the experiment `<experiment><part>` to `<name><part>.json/csv` (e.g. part `_steps`)."""
    path = write_results(args.results_dir, f"{args.experiment}{part}", rows, config=_config(args),
                         environment=environment(args.device), name=f"{args.name}{part}")
    args.written[path] = None  # ordered and without repeats: a grid rewrites its file after each row
    return path


# ----------------------------------------------------------------------------- subcommands
def _write_bench(args: argparse.Namespace, results: list[ConfigResult]) -> None:
    """`<name>.json/csv` (one row per configuration) and `<name>_steps.json/csv` (one per step)."""
    _write(args, [result.summary for result in results])
    _write(args, [row for result in results for row in result.steps], "_steps")


def _bench_and_write(args: argparse.Namespace, runs: list[RunConfig]) -> list[ConfigResult]:
    """Run configurations, rewriting the results files after each one (a cut-off run keeps them)."""
    return run_configs(runs, progress=not args.no_progress, on_result=lambda results: _write_bench(args, results))


def cmd_bench(args: argparse.Namespace) -> None:
    runs = [RunConfig(size=size, context_length=ctx, mode=args.mode, compile=args.compile,
                      emit_nvtx=args.emit_nvtx, **_run_settings(args))
            for size in args.sizes for ctx in _context_lengths(args)]
    if not args.parallel:
        results = _bench_and_write(args, runs)
        print_table("bench", [result.summary for result in results], BENCH_COLUMNS)
        return
    results = run_parallel_configs(runs, args.parallel, progress=not args.no_progress,
                                   on_result=lambda results: _write_bench(args, results),
                                   join_timeout_s=args.join_timeout)
    if results:  # rank 0 holds every rank's rows
        print_table(f"bench, {args.parallel}", [result.summary for result in results], PARALLEL_COLUMNS)


def cmd_compile(args: argparse.Namespace) -> None:
    runs = compile_runs(args.sizes, args.context_length, args.modes, **_run_settings(args))
    results = _bench_and_write(args, runs)
    print_table("compile", [result.summary for result in results], BENCH_COLUMNS)


def cmd_overhead(args: argparse.Namespace) -> None:
    runs = [RunConfig(size=size, context_length=ctx, mode=args.mode, **_run_settings(args))
            for size in args.sizes for ctx in _context_lengths(args)]
    step_rows = []
    try:
        for run in tqdm(runs, desc="overhead", unit="config", disable=args.no_progress):
            for row in alternating_steps(run):
                step_rows.append(row)
    finally:  # an interrupted run keeps the steps measured so far
        rows = overhead_rows(step_rows)
        _write(args, rows)
        _write(args, step_rows, "_steps")
    print_table("NVTX annotation overhead (medians over measured steps)", rows, {
        "size": plain("size"), "ctx": plain("context_length"), "mode": plain("mode"), "steps each": plain("steps_each"),
        "annotated step ms": number("annotated_step_ms_median", digits=3),
        "plain step ms": number("plain_step_ms_median", digits=3),
        "step overhead %": number("step_overhead_pct"), "forward overhead %": number("forward_overhead_pct"),
    })


def cmd_attention(args: argparse.Namespace) -> None:
    grid = AttentionGrid(head_dims=tuple(args.head_dims), seq_lens=tuple(args.seq_lens),
                         implementations=tuple(args.implementations), batch_size=args.batch_size,
                         warmup_passes=args.warmup_passes, passes=args.passes, device=args.device)
    rows = run_attention_grid(grid, progress=not args.no_progress, on_row=lambda rows: _write(args, rows))
    print_table(f"attention (batch {args.batch_size}, one head)", rows, {
        "implementation": plain("implementation"), "d": plain("head_dim"), "seq": plain("seq_len"),
        "forward ms": mean_std("forward_ms"), "backward ms": mean_std("backward_ms"),
        "before backward GiB": number("memory_before_backward_bytes", GIB),
    })


def cmd_mixed_precision(args: argparse.Namespace) -> None:
    loops = accumulation_loops(args.device)
    dtypes = [row for dtype in (torch.float16, torch.bfloat16) for row in toy_model_dtypes(dtype, args.device)]
    _write(args, loops, "_accumulation")
    _write(args, dtypes, "_toy_model")
    print_table("accumulation loops (exact sum 10.0)", loops, {
        "loop": plain("loop"), "printed": plain("printed"), "abs error": number("abs_error", digits=6)})
    print_table("ToyModel under autocast", dtypes, {
        "autocast": plain("autocast_dtype"), "quantity": plain("quantity"), "dtype": plain("dtype")})


def cmd_memory(args: argparse.Namespace) -> None:
    study = MemoryStudy(size=args.size, context_lengths=tuple(args.context_lengths), modes=tuple(args.modes),
                        dtypes=tuple(args.dtypes), snapshot_context_length=args.snapshot_context_length,
                        batch_size=args.batch_size, device=args.device)
    def write_tables(tables: dict[str, list[dict]]) -> None:
        for experiment, rows in tables.items():  # "memory", "memory_timeline", ...
            _write(args, rows, experiment.removeprefix(args.experiment))

    tables = run_memory_study(study, args.snapshot_dir or args.results_dir / SNAPSHOT_FOLDER,
                              progress=not args.no_progress, on_run=write_tables)
    print_table(f"peak memory, {args.size}", tables[MEMORY], {
        "ctx": plain("context_length"), "mode": plain("mode"), "dtype": plain("dtype"),
        "peak GiB": number(PEAK_MEMORY_COLUMN, GIB), "forward GiB": number(peak_column("forward"), GIB),
        "backward GiB": number(peak_column("backward"), GIB), "optimizer GiB": number(peak_column("optimizer_step"), GIB),
    })
    print_table("largest allocations of the forward pass", tables[MEMORY_LARGEST_ALLOCATIONS], {
        "MiB": number("size_mib"), "count": plain("count"), "site": plain("site")})


def cmd_checkpoint(args: argparse.Namespace) -> None:
    study = CheckpointStudy(size=args.size, handout=args.handout, context_length=args.context_length,
                            batch_size=args.batch_size, warmup_steps=args.warmup, measured_steps=args.steps)
    results = _bench_and_write(args, checkpoint_runs(study, dtype=args.dtype, device=args.device))
    print_table(f"activation checkpointing, {args.size} ({args.handout}) batch {args.batch_size} "
                f"ctx {args.context_length}", [result.summary for result in results], {
        "blocks per checkpoint": plain("checkpoint_every"), "status": plain("status"),
        "peak GiB": number("peak_memory_bytes", GIB), "step ms": mean_std("step_ms"),
        "backward ms": mean_std("backward_ms")})


def cmd_layernorm(args: argparse.Namespace) -> None:
    study = NormStudy(size=args.size, handout=args.handout, context_length=args.context_length,
                      batch_size=args.batch_size, train_steps=args.train_steps)
    rows = norm_precision_rows(study, args.device)
    worst = worst_over_sites(rows)
    _write(args, rows)
    _write(args, worst, NORM_PRECISION_SUMMARY.removeprefix(NORM_PRECISION))
    print_table(f"normalization in low precision against fp32 ({study.size}, largest over the norm sites)", worst, {
        "norm": plain("norm"), "dtype": plain("dtype"), "compute": plain("compute"),
        "mean err": number("mean_rel_error", digits=6), "var/ms err": number("spread_rel_error", digits=6),
        "rsqrt err": number("inv_rel_error", digits=6), "output err": number("output_rel_error", digits=6),
        "overflow": plain("overflow_count"), "underflow": plain("underflow_squares"),
        "zero var rows": plain("zero_spread_rows")})


def main(argv: list[str] | None = None) -> int:
    """Parse arguments (bench when no subcommand is named) and run the subcommand."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in SUBCOMMANDS + ("-h", "--help"):
        argv.insert(0, "bench")
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    args.written = {}
    try:
        args.handler(args)
        for path in args.written:
            print(f"results: {path} and {path.with_suffix('.csv').name} beside it")
    except KeyboardInterrupt:
        print(f"interrupted: what was measured so far is in {args.results_dir}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
