"""The `nsys profile` option sets of each handout, and a check of which options this nsys accepts.

2025: CUDA, NVTX and OS-runtime trace, no CPU sampling. 2026 adds what the 2026 handout suggests:
cuDNN/cuBLAS API trace, PyTorch's own NVTX ranges (`functions-trace`: one range per module call;
`autograd-shapes-nvtx`: one range per autograd op, with its input shapes), CUDA and Python
backtraces of CUDA API calls, and GPU metrics sampled on device 0. Two additions go with either:
tensor-level memory events (`--cuda-memory-usage=true`, with PyTorch's allocator switched to
cudaMallocAsync, so every tensor allocation and free is a CUDA call nsys sees, not only the caching
allocator's segment growth), and a capture that starts at the runner's `measured_steps` range (warm-up
left out of the trace).

The 2026 set keeps nsys's default CPU sampling: without it (`--sample=none`) nsys accepts
`--cudabacktrace` but collects no backtraces (it says so in a warning), so the probe counts an
option that nsys answers with "will not be collected" as refused.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from cs336_profile.contract import MEASURED_STEPS_RANGE
from cs336_profile.results import read_results, write_results

NSYS_PROFILE_OPTIONS = ("-t", "cuda,nvtx,osrt", "--sample=none", "--cpuctxsw=none",
                        "--cuda-memory-usage=false", "--export=sqlite", "--force-overwrite=true")
NSYS_2026_OPTIONS = ("--trace=cuda,cudnn,cublas,osrt,nvtx", "--pytorch=functions-trace,autograd-shapes-nvtx",
                     "--cudabacktrace=all", "--python-backtrace=cuda", "--gpu-metrics-devices=0",
                     "--export=sqlite", "--force-overwrite=true")
OPTION_SETS = {"2025": NSYS_PROFILE_OPTIONS, "2026": NSYS_2026_OPTIONS}
MEMORY_EVENT_OPTIONS = ("--cuda-memory-usage=true",)
# Every tensor allocation and free becomes a cudaMallocAsync / cudaFreeAsync call.
MEMORY_EVENT_ENVIRONMENT = {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}
CAPTURE_RANGE = MEASURED_STEPS_RANGE
CAPTURE_OPTIONS = ("--capture-range=nvtx", f"--nvtx-capture={CAPTURE_RANGE}", "--capture-range-end=stop")
# nsys matches capture ranges against registered NVTX strings only, unless this is 0; the nvtx
# package registers its strings, torch.cuda.nvtx does not: 0 makes either work.
CAPTURE_ENVIRONMENT = {"NSYS_NVTX_PROFILER_REGISTER_ONLY": "0"}
# The smallest set every nsys takes; each other option is tried on top of it.
PROBE_BASE = ("--trace=cuda,nvtx", "--export=sqlite", "--force-overwrite=true")
# What nsys prints when it takes an option but will not record what the option asks for.
IGNORED_WARNING = "will not be collected"
# A few CUDA calls inside the capture range, as the runner makes them.
PROBE_PROGRAM = ("import nvtx, torch\n"
                 "x = torch.ones(64, 64, device='cuda' if torch.cuda.is_available() else 'cpu')\n"
                 f"nvtx.push_range('{CAPTURE_RANGE}')\n"
                 "y = (x @ x).sum().item()\n"
                 "nvtx.pop_range()\n")


def option_key(option: str) -> str:
    """`--trace=cuda,nvtx` → `--trace` (what two spellings of one option share)."""
    return {"-t": "--trace"}.get(option.split("=", 1)[0], option.split("=", 1)[0])


def merge_options(base: tuple[str, ...], extra: tuple[str, ...]) -> tuple[str, ...]:
    """`base` with each of `extra`'s options replacing the one of the same key (or appended)."""
    keys = {option_key(option) for option in extra if option.startswith("-")}
    kept, skip_value = [], False
    for option in base:
        if skip_value:
            skip_value = False
            continue
        if option_key(option) in keys:
            skip_value = "=" not in option  # `-t cuda,nvtx`: drop the value too
            continue
        kept.append(option)
    return (*kept, *extra)


def without_failed(options: tuple[str, ...], probes: list[dict]) -> tuple[str, ...]:
    """`options` minus every option of a probe row whose status is not ok."""
    failed = {option for row in probes if row["status"] != "ok" for option in row["options"].split()}
    return tuple(option for option in options if option not in failed)


def option_groups(options: tuple[str, ...]) -> list[tuple[str, ...]]:
    """What to try on top of PROBE_BASE: the capture options as one group, each other option alone."""
    capture = tuple(option for option in options if option in CAPTURE_OPTIONS)
    alone = [(option,) for option in options if option not in capture and option not in PROBE_BASE]
    return alone + ([capture] if capture else [])


def _probe(nsys: str, python: str, options: tuple[str, ...], environment: dict[str, str], output: Path,
           timeout_s: float) -> tuple[bool, str | None]:
    """Profile PROBE_PROGRAM with `options`: whether nsys ran and recorded it, else the reason."""
    command = [nsys, "profile", *options, "-o", str(output), python, "-c", PROBE_PROGRAM]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=os.environ | environment)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout_s} s"
    text = (done.stdout + done.stderr).strip().splitlines()
    ignored = [line for line in text if IGNORED_WARNING in line]
    ok = done.returncode == 0 and output.with_suffix(".sqlite").exists() and not ignored
    return ok, None if ok else (ignored or text or [f"exit status {done.returncode}"])[-1][-300:]


def probe_options(nsys: str, python: str, groups: list[tuple[str, ...]], environment: dict[str, str],
                  timeout_s: float = 180, known: list[dict] = ()) -> list[dict]:
    """Profile PROBE_PROGRAM once per option group on top of PROBE_BASE: one row per group, ok or failed.

    Groups with a row in `known` (an earlier probe of this nsys) keep that row and are not run again.
    """
    earlier = {row["options"]: row for row in known if not row.get("together")}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for index, group in enumerate(groups):
            name = " ".join(group)
            if name not in earlier:
                ok, error = _probe(nsys, python, merge_options(PROBE_BASE, group), environment,
                                   Path(folder) / f"probe_{index}", timeout_s)
                earlier[name] = {"options": name, "status": "ok" if ok else "failed", "error": error, "together": False}
            rows.append(earlier[name])
    return rows


def without_failed(options: tuple[str, ...], probes: list[dict]) -> tuple[str, ...]:
    """`options` minus every option of a single-group probe row whose status is not ok."""
    failed = {option for row in probes if row["status"] != "ok" and not row.get("together")
              for option in row["options"].split()}
    return tuple(option for option in options if option not in failed)


def profile_setup(option_set: str, memory_events: bool, capture_measured: bool) -> tuple[tuple[str, ...], dict[str, str]]:
    """nsys options and the profiled process's environment: a handout's set plus the two additions."""
    options, environment = OPTION_SETS[option_set], {}
    if memory_events:
        options, environment = merge_options(options, MEMORY_EVENT_OPTIONS), environment | MEMORY_EVENT_ENVIRONMENT
    if capture_measured:
        options, environment = merge_options(options, CAPTURE_OPTIONS), environment | CAPTURE_ENVIRONMENT
    return options, environment


def usable_options(nsys: str, python: str, options: tuple[str, ...], environment: dict[str, str],
                   out_dir: Path) -> tuple[str, ...]:
    """`options` minus those this nsys refuses, each tried alone; then the rest tried together (a
    combination nsys takes but ignores part of is reported, not dropped). Each probe is a row of
    <out_dir>/nsys_options.json, whose single-option rows from an earlier run are reused."""
    path = out_dir / "nsys_options.json"
    known = read_results(path)["rows"] if path.exists() else []
    rows = probe_options(nsys, python, option_groups(options), environment, known=known)
    kept = without_failed(options, rows)
    with tempfile.TemporaryDirectory() as folder:
        ok, error = _probe(nsys, python, kept, environment, Path(folder) / "together", 180)
    rows.append({"options": " ".join(kept), "status": "ok" if ok else "failed", "error": error, "together": True})
    write_results(out_dir, "nsys_options", rows, config={"options": list(options)}, environment={"nsys": nsys})
    for row in rows:
        label = "nsys options together" if row["together"] else "nsys option"
        print(f"{label} {row['options']}: {row['status']}" + (f" ({row['error']})" if row["error"] else ""))
    return kept
