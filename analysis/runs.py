"""Names and order of the runs behind trace summaries: the label a report gives a run, the order
its tables and pages list runs in, and the position of a model size."""
from __future__ import annotations

import pandas as pd

from cs336_profile.config import DEFAULT_HANDOUT, SIZE_NAMES
from cs336_profile.contract import trace_stem


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
    def key(summary: dict):
        config = summary.get("config") or {}
        order = size_order(pd.Series([config.get("size")])).iloc[0]
        return (not config, edition(summary), order, config.get("context_length") or 0, str(config.get("mode")),
                str(config.get("dtype")), bool(config.get("compile")), summary["trace"])
    return sorted(summaries, key=key)


DEFAULTS = {"attention": "naive", "handout": DEFAULT_HANDOUT}


def config_value(config: dict, key: str):
    """A config's setting; naive attention and the 2025 handout when it names none."""
    value = config.get(key)
    if key in DEFAULTS and (value is None or (isinstance(value, float) and pd.isna(value))):
        return DEFAULTS[key]
    return str(value) if key == "handout" else value
