"""`python -m nsys_runs.sweep`: every configuration of the grid as its own `nsys profile` run.

The grid is sizes × context lengths × modes × variants (fp32, bf16, fp32-compiled, bf16-compiled),
plus a subset grid for the costlier variants. `--fit-contexts` replaces the context lengths, per
size, by the 2026 handout's three: the longest power of two whose training step fits in memory and
the two below it (probes in <out>/fit.json). `--handout 2026` takes the sizes from the 2026 table
(default 2025); `--nsys-flags 2026` profiles with the 2026 handout's option set, `--memory-events`
adds tensor-level memory events, `--capture-measured` leaves warm-up out of the trace, and
`--probe-options` first drops the options this nsys refuses (recorded in <out>/nsys_options.json).
Each configuration runs
`nsys profile ... -o <out>/<stem> python -m cs336_profile.run bench ...` and leaves

    <out>/<stem>.sqlite (and .nsys-rep)   the export; <stem> = <size>_ctx<L>_<mode>_<dtype>[_compiled]
    <out>/<stem>.timings.json             the Python timer's means per phase (ms)
    <out>/runner/<stem>.json, .csv        the runner's results file (status ok / OOM)
    <out>/logs/<stem>.log                 the run's output
    <out>/sweep.json, sweep.csv           one row per configuration: status ok / OOM / failed,
                                          Python timings, nsys's forward span, GPU name, trace

A configuration whose export and runner results exist is not run again (resume); failed ones are.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm import tqdm

from cs336_profile.config import ATTENTION_KINDS, DEFAULT_HANDOUT, DEVICES, HANDOUTS, MODEL_KEYS, SIZE_NAMES, RunConfig
from cs336_profile.contract import MODES, PEAK_MEMORY_COLUMN, STATUS_FAILED, STATUS_OK, STATUS_OOM, TIMED_PARTS
from cs336_profile.results import read_results, write_results
from cs336_profile.tables import number, plain, print_table
from nsys_runs.context_fit import largest_fitting_context, profiled_contexts
from nsys_runs.nsys_options import NSYS_PROFILE_OPTIONS, OPTION_SETS, profile_setup, usable_options
from nsys_runs.nvtx_spans import measured_phase_spans_ms
from nsys_runs.slim import compress_xz, slim_copy

VARIANTS = {"fp32": ("fp32", False), "bf16": ("bf16", False),
            "fp32-compiled": ("fp32", True), "bf16-compiled": ("bf16", True)}
ASSIGNMENT_SIZES = ("small", "medium", "large", "xl", "2.7B")
OOM_MESSAGES = ("OutOfMemoryError", "CUDA out of memory")


@dataclass(frozen=True)
class TraceConfig(RunConfig):
    """One profiled configuration: the runner's RunConfig, plus the stem that names its files."""

    @property
    def stem(self) -> str:
        """File name stem: `<size>_ctx<L>_<mode>_<dtype>[_compiled][_<attention>][_emitnvtx][_layers][_<handout>]`.

        The handout is named only when it is not the default 2025.
        """
        suffixes = (["compiled"] * self.compile + [self.attention] * (self.attention != "naive")
                    + ["emitnvtx"] * self.emit_nvtx + ["layers"] * self.layer_ranges
                    + [self.handout] * (self.handout != DEFAULT_HANDOUT))
        return "_".join([self.size, f"ctx{self.context_length}", self.mode, self.dtype, *suffixes])


@dataclass(frozen=True)
class RunnerSettings:
    """The Python that runs the runner, and the run settings every configuration of a sweep shares
    (the runner's defaults unless the sweep's options say otherwise)."""

    python: str = sys.executable
    warmup: int = RunConfig.warmup_steps
    steps: int = RunConfig.measured_steps
    batch_size: int = RunConfig.batch_size
    device: str = RunConfig.device


def build_grid(sizes, context_lengths, modes, variants, subset_sizes=(), subset_context_lengths=(),
               subset_variants=(), attention="naive", emit_nvtx=False,
               settings: RunnerSettings = RunnerSettings(), **run_fields) -> list[TraceConfig]:
    """The main grid then the subset grid, without duplicates, in run order.

    `context_lengths` is a list, or a dict size → list (each size's fitted contexts); `run_fields`:
    other RunConfig fields every configuration gets (handout, layer_ranges).
    """
    shared = {"attention": attention, "emit_nvtx": emit_nvtx, "warmup_steps": settings.warmup,
              "measured_steps": settings.steps, "batch_size": settings.batch_size, "device": settings.device,
              **run_fields}

    def grid(sizes_, lengths_, variants_):
        per_size = lengths_ if isinstance(lengths_, dict) else dict.fromkeys(sizes_, lengths_)
        return [TraceConfig(size=size, context_length=length, mode=mode, dtype=VARIANTS[variant][0],
                            compile=VARIANTS[variant][1], **shared)
                for variant in variants_ for size in sizes_ for length in per_size.get(size, []) for mode in modes]
    configs = grid(sizes, context_lengths, variants) + grid(subset_sizes, subset_context_lengths, subset_variants)
    return list(dict.fromkeys(configs))


def runner_command(config: TraceConfig, python: str, results_dir: Path) -> list[str]:
    """The `python -m cs336_profile.run bench` command line of one configuration."""
    command = [python, "-m", "cs336_profile.run", "bench",
               "--sizes", config.size, "--context-lengths", str(config.context_length), "--mode", config.mode,
               "--dtype", config.dtype, "--attention", config.attention,
               "--warmup", str(config.warmup_steps), "--steps", str(config.measured_steps),
               "--batch-size", str(config.batch_size), "--device", config.device,
               "--results-dir", str(results_dir), "--name", config.stem, "--no-progress"]
    handout = ["--handout", config.handout] if config.handout != DEFAULT_HANDOUT else []
    return (command + ["--compile"] * config.compile + ["--emit-nvtx"] * config.emit_nvtx
            + ["--layer-ranges"] * config.layer_ranges + handout)


def nsys_command(nsys: str, out_dir: Path, config: TraceConfig, runner: list[str],
                 options: tuple[str, ...] = NSYS_PROFILE_OPTIONS) -> list[str]:
    """`nsys profile <options> -o <out>/<stem> <runner command>`."""
    return [nsys, "profile", *options, "-o", str(out_dir / config.stem), *runner]


class Sweep:
    """Runs configurations under nsys into one output folder and keeps the sweep table there."""

    def __init__(self, out_dir: Path, nsys: str, settings: RunnerSettings, timeout_s: float | None = None,
                 slim: bool = False, compress: bool = False, nsys_version: str | None = None,
                 options: tuple[str, ...] = NSYS_PROFILE_OPTIONS, environment: dict[str, str] | None = None):
        """`options`: nsys's profile options; `environment`: set for the profiled (and fit-probe) processes."""
        self.out_dir, self.nsys, self.settings, self.nsys_version = out_dir, nsys, settings, nsys_version
        self.options, self.environment = options, environment or {}
        self.timeout_s, self.slim, self.compress = timeout_s, slim, compress
        self.runner_dir, self.log_dir = out_dir / "runner", out_dir / "logs"
        self.table_path = out_dir / "sweep.json"

    def export_path(self, config: TraceConfig) -> Path:
        return self.out_dir / f"{config.stem}.sqlite"

    def runner_results_path(self, config: TraceConfig) -> Path:
        return self.runner_dir / f"{config.stem}.json"

    def has_export(self, config: TraceConfig) -> bool:
        """nsys's export exists, plain or compressed."""
        export = self.export_path(config)
        return export.exists() or export.with_name(export.name + ".xz").exists()

    def is_done(self, config: TraceConfig) -> bool:
        """The export and the runner's results exist."""
        return self.has_export(config) and self.runner_results_path(config).exists()

    def _profile(self, config: TraceConfig) -> dict:
        """Run one configuration under nsys; return returncode, wall time and error text."""
        command = nsys_command(self.nsys, self.out_dir, config,
                               runner_command(config, self.settings.python, self.runner_dir), self.options)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{config.stem}.log"
        start = time.perf_counter()
        with open(log_path, "w") as log:
            log.write(" ".join(command) + "\n")
            log.flush()
            # Own process group, so that nsys and the profiled process can be stopped together.
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                       env=os.environ | self.environment)
            try:
                returncode = process.wait(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                returncode = None
            finally:  # timed out or interrupted: take nsys and the profiled run down together
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        output = log_path.read_text(errors="replace")
        error = None
        if returncode is None:
            error = f"timed out after {self.timeout_s} s"
        elif returncode != 0:
            error = next((line for line in reversed(output.splitlines()) if line.strip()), "")[-500:]
        return {"returncode": returncode, "wall_s": time.perf_counter() - start, "error": error,
                "out_of_memory": any(message in output for message in OOM_MESSAGES)}

    def _status(self, config: TraceConfig, runner: dict | None, outcome: dict | None) -> tuple[str, str | None]:
        """ok / OOM from the runner's results; else OOM or failed from the process's output."""
        error = outcome["error"] if outcome else None
        if runner is None:
            return (STATUS_OOM if outcome and outcome["out_of_memory"] else STATUS_FAILED), error
        status = runner["rows"][0]["status"]
        if status == STATUS_OK and not self.has_export(config):
            return STATUS_FAILED, error or "nsys wrote no export"
        return status, error

    def _row(self, config: TraceConfig, outcome: dict | None) -> dict:
        """The sweep row of a configuration from its runner results, export and process outcome."""
        runner_path = self.runner_results_path(config)
        runner = read_results(runner_path) if runner_path.exists() else None
        result = runner["rows"][0] if runner else {}
        status, error = self._status(config, runner, outcome)
        export = self.export_path(config)
        spans = measured_phase_spans_ms(export) if status == STATUS_OK and export.exists() else {}
        return {
            "stem": config.stem, "handout": config.handout, "size": config.size,
            **{key: result.get(key) for key in MODEL_KEYS}, "context_length": config.context_length,
            "mode": config.mode, "dtype": config.dtype, "compile": config.compile,
            "attention": config.attention, "emit_nvtx": config.emit_nvtx, "layer_ranges": config.layer_ranges,
            "status": status,
            "gpu_name": runner["environment"]["gpu_name"] if runner else None,
            "trace": str(self._kept_trace(config).relative_to(self.out_dir)) if status == STATUS_OK else None,
            **{f"{part}_ms_mean": result.get(f"{part}_ms_mean") for part in TIMED_PARTS},
            "tokens_per_s": result.get("tokens_per_s"),
            PEAK_MEMORY_COLUMN: result.get(PEAK_MEMORY_COLUMN),
            "nsys_forward_ms": spans.get("forward"),
            "returncode": outcome["returncode"] if outcome else None,
            "wall_s": outcome["wall_s"] if outcome else None,
            "error": error,
        }

    def _kept_trace(self, config: TraceConfig) -> Path:
        """The trace file the sweep leaves for the analyzer (slim and/or compressed when asked)."""
        path = self.out_dir / "slim" / f"{config.stem}.sqlite" if self.slim else self.export_path(config)
        return path.with_name(path.name + ".xz") if self.compress else path

    def _write_timings(self, row: dict, folder: Path) -> None:
        """`<stem>.timings.json` beside the trace: the Python timer's means, for traces without marks."""
        timings = {part: row[f"{part}_ms_mean"] for part in TIMED_PARTS if row[f"{part}_ms_mean"] is not None}
        timings |= {"size": row["size"], "ctx": row["context_length"], "batch": self.settings.batch_size,
                    "mode": row["mode"], "dtype": row["dtype"], "compile": row["compile"],
                    **{key: row[key] for key in ("handout", *MODEL_KEYS) if row.get(key) is not None}}
        (folder / f"{row['stem']}.timings.json").write_text(json.dumps(timings, indent=1) + "\n")

    def _finish_trace(self, config: TraceConfig, row: dict) -> None:
        """Timings file, slim copy and compression of a completed configuration (each done once)."""
        export, kept = self.export_path(config), self._kept_trace(config)
        kept.parent.mkdir(parents=True, exist_ok=True)
        for folder in {self.out_dir, kept.parent}:
            self._write_timings(row, folder)
        if kept.exists():
            return
        if self.slim:
            slim_copy(export, kept.parent / f"{config.stem}.sqlite")
        if self.compress:
            compress_xz(kept.with_suffix(""))

    def run(self, configs: list[TraceConfig], progress: bool = True) -> list[dict]:
        """Profile every configuration not done yet; write and return the sweep table.

        The table keeps the rows of configurations that earlier invocations ran into this folder
        (a sweep done in parts ends with one table).
        """
        self.out_dir.mkdir(parents=True, exist_ok=True)
        previous = {row["stem"]: row for row in read_results(self.table_path)["rows"]} if self.table_path.exists() else {}
        stems = {config.stem for config in configs}
        rows = [row for stem, row in previous.items() if stem not in stems]
        for config in tqdm(configs, desc="sweep", unit="trace", disable=not progress):
            if self.is_done(config):
                row = previous.get(config.stem) or self._row(config, outcome=None)
            else:
                row = self._row(config, self._profile(config))
            if row["status"] == STATUS_OK:
                self._finish_trace(config, row)
            rows.append(row)
            self._write_table(rows)
        return rows

    def fitted_contexts(self, sizes: list[str], mode: str, handout: str, start: int, maximum: int) -> dict[str, list[int]]:
        """Per size, the three contexts ending at the longest that fits (one `mode` step of the runner
        per probe, without nsys); every probe is a row of <out>/fit.json, OOM ones included."""
        fit_dir = self.out_dir / "fit"
        rows, contexts = [], {}
        for size in sizes:
            def fits(context: int) -> bool:
                config = TraceConfig(size=size, context_length=context, mode=mode, handout=handout, warmup_steps=0,
                                     measured_steps=1, batch_size=self.settings.batch_size, device=self.settings.device)
                done = subprocess.run(runner_command(config, self.settings.python, fit_dir), capture_output=True, text=True,
                                      env=os.environ | self.environment, timeout=self.timeout_s)
                path = fit_dir / f"{config.stem}.json"
                result = read_results(path)["rows"][0] if done.returncode == 0 and path.exists() else {}
                status = result.get("status", STATUS_FAILED)
                rows.append({"handout": handout, "size": size, "context_length": context, "mode": mode,
                             "status": status, "peak_memory_bytes": result.get("peak_memory_bytes"),
                             "error": None if result else (done.stderr.strip().splitlines() or [""])[-1][-300:]})
                write_results(self.out_dir, "fit", rows, config={"start": start, "maximum": maximum},
                              environment={"python": self.settings.python})
                return status == STATUS_OK
            largest, _ = largest_fitting_context(fits, start=start, minimum=min(start, 256), maximum=maximum)
            contexts[size] = profiled_contexts(largest)
        return contexts

    def _write_table(self, rows: list[dict]) -> None:
        environment = {"nsys": self.nsys, "nsys_version": self.nsys_version, "python": self.settings.python}
        config = {"nsys_profile_options": list(self.options), "nsys_environment": self.environment,
                  "timeout_s": self.timeout_s,
                  "slim": self.slim, "compress": self.compress, **asdict(self.settings)}
        write_results(self.out_dir, "sweep", rows, config=config, environment=environment)


def nsys_version(nsys: str) -> str:
    """`nsys --version`'s output, or exit with a one-line message when nsys cannot be run."""
    if shutil.which(nsys) is None:
        sys.exit(f"sweep: no nsys executable {nsys!r} on PATH (name one with --nsys)")
    return subprocess.run([nsys, "--version"], capture_output=True, text=True, check=True).stdout.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m nsys_runs.sweep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for exports, logs and the sweep table")
    parser.add_argument("--handout", choices=HANDOUTS, default=DEFAULT_HANDOUT,
                        help=f"the edition whose size table names the sizes (default {DEFAULT_HANDOUT})")
    parser.add_argument("--sizes", nargs="+", choices=SIZE_NAMES, default=list(ASSIGNMENT_SIZES),
                        help="sizes of the main grid (default: the 2025 assignment's five)")
    parser.add_argument("--context-lengths", nargs="+", type=int, default=[128, 256, 512, 1024],
                        help="context lengths of the main grid (default: 128 256 512 1024)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=["forward", "train"],
                        help="modes of both grids (default: forward train)")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=["fp32"],
                        help="dtype and compile variants of the main grid (default: fp32)")
    parser.add_argument("--fit-contexts", action="store_true",
                        help="per size: the longest power-of-two context that fits and the two below (replaces --context-lengths)")
    parser.add_argument("--fit-start", type=int, default=256, help="first context the fit tries (default: 256)")
    parser.add_argument("--fit-max", type=int, default=16384, help="longest context the fit tries (default: 16384)")
    parser.add_argument("--subset-sizes", nargs="*", choices=SIZE_NAMES, default=["small", "medium"],
                        help="sizes of the subset grid")
    parser.add_argument("--subset-context-lengths", nargs="*", type=int, default=[128, 256],
                        help="context lengths of the subset grid")
    parser.add_argument("--subset-variants", nargs="*", choices=list(VARIANTS), default=["bf16", "fp32-compiled"],
                        help="variants of the subset grid")
    parser.add_argument("--attention", choices=ATTENTION_KINDS, default="naive", help="the model's attention (default: naive)")
    parser.add_argument("--emit-nvtx", action="store_true", help="one NVTX range per op (dense traces)")
    parser.add_argument("--layer-ranges", action="store_true", help="an NVTX range layer_<i> around each block")
    parser.add_argument("--nsys-flags", choices=list(OPTION_SETS), default="2025",
                        help="nsys option set: 2025 (default) or the 2026 handout's")
    parser.add_argument("--memory-events", action="store_true",
                        help="--cuda-memory-usage=true with PyTorch's cudaMallocAsync allocator (tensor-level events)")
    parser.add_argument("--capture-measured", action="store_true",
                        help="trace only the runner's measured_steps range (warm-up left out)")
    parser.add_argument("--probe-options", action="store_true",
                        help="try each nsys option first and drop those that fail (<out>/nsys_options.json)")
    parser.add_argument("--warmup", type=int, default=RunnerSettings.warmup, help="warm-up steps per configuration")
    parser.add_argument("--steps", type=int, default=RunnerSettings.steps, help="measured steps per configuration")
    parser.add_argument("--batch-size", type=int, default=RunnerSettings.batch_size, help="sequences per step")
    parser.add_argument("--device", choices=DEVICES, default=RunnerSettings.device, help="where the model runs")
    parser.add_argument("--python", default=sys.executable, help="Python that runs cs336_profile.run")
    parser.add_argument("--nsys", default="nsys", help="nsys executable")
    parser.add_argument("--timeout-s", type=float, default=1800, help="per configuration")
    parser.add_argument("--slim", action="store_true", help="also write <out>/slim/<stem>.sqlite without OSRT tables")
    parser.add_argument("--compress", action="store_true", help="xz the kept trace (the slim copy with --slim)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = RunnerSettings(python=args.python, warmup=args.warmup, steps=args.steps,
                              batch_size=args.batch_size, device=args.device)
    options, environment = profile_setup(args.nsys_flags, args.memory_events, args.capture_measured)
    if not args.dry_run:
        version = nsys_version(args.nsys)
        print(version)
        if args.probe_options:
            options = usable_options(args.nsys, args.python, options, environment, args.out)
    sweep = Sweep(args.out, args.nsys, settings, args.timeout_s, args.slim, args.compress,
                  None if args.dry_run else version, options, environment)
    hardest_mode = max(args.modes, key=MODES.index)  # train needs the most memory
    contexts = (sweep.fitted_contexts(args.sizes, hardest_mode, args.handout, args.fit_start, args.fit_max)
                if args.fit_contexts and not args.dry_run else args.context_lengths)
    configs = build_grid(args.sizes, contexts, args.modes, args.variants, args.subset_sizes,
                         args.subset_context_lengths, args.subset_variants, args.attention, args.emit_nvtx, settings,
                         handout=args.handout, layer_ranges=args.layer_ranges)
    if args.dry_run:
        for config in configs:
            done = "done " if sweep.is_done(config) else "run  "
            print(done + " ".join(nsys_command(args.nsys, args.out, config,
                                               runner_command(config, settings.python, sweep.runner_dir), options)))
        return 0
    rows = sweep.run(configs, progress=not args.no_progress)
    print_table(f"sweep ({len(rows)} configurations)", rows, {
        "trace": plain("stem"), "status": plain("status"), "gpu": plain("gpu_name"),
        "python forward ms": number("forward_ms_mean"), "nsys forward ms": number("nsys_forward_ms"),
        "python step ms": number("step_ms_mean"), "wall s": number("wall_s", digits=1, measured=False)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
