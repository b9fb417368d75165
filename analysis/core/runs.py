"""Names and order of the runs behind trace summaries: the label a report gives a run, the order
its tables and pages list runs in, and the position of a model size."""
from __future__ import annotations

from typing import TYPE_CHECKING

from cs336_profile.config import DEFAULT_HANDOUT, SIZE_NAMES
from cs336_profile.contract import trace_stem

if TYPE_CHECKING:
    import pandas as pd


def size_order(sizes: pd.Series) -> pd.Series:
    """Position of each model size in the assignment's table (``tiny`` first, unknown sizes last)."""
    order = {name: index for index, name in enumerate(SIZE_NAMES)}
    return sizes.map(order).fillna(len(order))


def summary_stem(summary: dict) -> str:
    """The summary's trace file name without its suffix."""
    return trace_stem(summary["trace"])


def edition(summary: dict) -> str:
    """The handout edition of a summary's run: its config's ``handout``, 2025 where it does not say."""
    return config_value(summary.get("config") or {}, "handout")


def names_edition(summary: dict) -> bool:
    """Whether the trace says which handout edition it answers: the runner's traces do (2025 where
    their config names none, as the runner wrote before it knew editions); a user's own program
    does not, unless its config names a ``handout``."""
    return has_runner_config(summary) or "handout" in (summary.get("config") or {})


# Boolean config switches that change what a run executes or records, as its label writes them.
VARIANT_FLAGS = (("compile", "compiled"), ("allow_tf32", "tf32"), ("emit_nvtx", "emit_nvtx"),
                 ("layer_ranges", "layer ranges"))


def run_label(summary: dict) -> str:
    """``small ctx128 train fp32 compiled`` from the config, with every variant that makes two runs
    of one size differ (attention kind, TF32, emit_nvtx, layer ranges, a handout edition other than
    the default: the same size name is another model there); the trace stem without a config.
    A data-parallel run names its mode (``ddp-naive``): otherwise it reads like the one-GPU run."""
    config = summary.get("config") or {}
    if not {"size", "context_length", "mode"} <= set(config):
        return summary_stem(summary)
    parts = [config["size"], f"ctx{config['context_length']}", config["mode"], config.get("dtype", "")]
    parts += [name for key, name in VARIANT_FLAGS if config.get(key)]
    if config.get("attention") not in (None, "naive"):
        parts.append(config["attention"])
    if config.get("parallel"):
        parts.append(config["parallel"])
    if config.get("handout") not in (None, DEFAULT_HANDOUT):
        parts.append(f"handout {config['handout']}")
    return " ".join(str(p) for p in parts if p)


def sorted_summaries(summaries: list[dict]) -> list[dict]:
    """Summaries with a config first, by size, context length, mode, dtype, compile; then the rest by name."""
    import pandas as pd

    def key(summary: dict):
        config = summary.get("config") or {}
        order = size_order(pd.Series([config.get("size")])).iloc[0]
        return (not config, edition(summary), order, config.get("context_length") or 0, str(config.get("mode")),
                str(config.get("dtype")), bool(config.get("compile")), summary["trace"])
    return sorted(summaries, key=key)


DEFAULTS = {"attention": "naive", "handout": DEFAULT_HANDOUT}


def config_value(config: dict, key: str):
    """A config's setting; naive attention and the 2025 handout when it names none."""
    import pandas as pd

    value = config.get(key)
    if key in DEFAULTS and (value is None or (isinstance(value, float) and pd.isna(value))):
        return DEFAULTS[key]
    return str(value) if key == "handout" else value


# Like-for-like groups: what the answers across traces and the index's lists keep apart. A rank
# waiting for another inside a collective is no one-GPU behaviour, so each multi-GPU mode is a
# group of its own; a trace without the runner's config mark (a user's own program) goes under
# OWN_RUNS, named by its trace.
OWN_RUNS = "your own runs"
ONE_GPU_GROUPS = ("fp32 eager", "bf16", "compiled")
MULTI_GPU_SUFFIX = " GPUs"  # ends the group name of a multi-GPU mode
RUNNER_KEYS = ("size", "context_length", "mode")  # what the runner's config mark always holds


def has_runner_config(summary: dict) -> bool:
    """Whether the trace carries the runner's config mark (size, context length, mode)."""
    return set(RUNNER_KEYS) <= set(summary.get("config") or {})


def is_multi_gpu(summary: dict) -> bool:
    """Whether the trace is one rank of a data-parallel run (its config names a parallel mode)."""
    return bool((summary.get("config") or {}).get("parallel"))


def run_group(summary: dict) -> str:
    """The like-for-like group of a run: :data:`OWN_RUNS` without the runner's config, a multi-GPU
    run's mode and GPU count (``ddp-naive on 2 GPUs``), else compiled or its dtype (``fp32 eager``)."""
    config = summary.get("config") or {}
    if not has_runner_config(summary):
        return OWN_RUNS
    if is_multi_gpu(summary):
        return f"{config['parallel']} on {config.get('world_size') or 'several'}{MULTI_GPU_SUFFIX}"
    if config.get("compile"):
        return "compiled"
    dtype = config.get("dtype")
    return "fp32 eager" if dtype in (None, "fp32") else str(dtype)


def runs_of(group: str) -> str:
    """How a sentence names the runs of a group: ``bf16 runs``, but ``your own runs`` as it is."""
    return group if group == OWN_RUNS else f"{group} runs"


def is_multi_gpu_group(group: str) -> bool:
    """Whether a :func:`run_group` name is a multi-GPU mode's."""
    return group.endswith(MULTI_GPU_SUFFIX)


def group_order(groups: pd.Series) -> pd.Series:
    """Sort key of groups: the one-GPU groups in :data:`ONE_GPU_GROUPS` order, other one-GPU
    dtypes, the multi-GPU modes, then :data:`OWN_RUNS`."""
    def key(group: str) -> int:
        if group in ONE_GPU_GROUPS:
            return ONE_GPU_GROUPS.index(group)
        return len(ONE_GPU_GROUPS) + (2 if group == OWN_RUNS else 1 if is_multi_gpu_group(group) else 0)
    return groups.map(key)
