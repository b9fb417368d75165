"""What the runner recorded about a run: its configuration and its Python-timer phase times.

Two sources, read independently for the config and for the timings, first found wins:

1. NVTX marks in the domain ``cs336_profile``: one ``{"event": "config", ...}`` mark and one
   ``{"event": "step_timing", "phases_ms": {...}}`` mark per measured step;
2. ``<trace stem>.timings.json`` beside the trace (runs made before the marks existed): the
   Python timer's mean per measured step in ms under ``forward``, ``loss``, ``backward``,
   ``optimizer_step``, ``step``, plus the config keys ``size``, ``ctx``, ``batch``, ``mode``,
   ``dtype``, ``compile``, ``warmup``, ``steps``, and (the sweep's since editions) ``handout`` and
the model's dimensions.

Config dicts use the config mark's keys whichever the source (``context_length``, ``batch_size``,
...). Every config carries ``handout`` (2025 where the trace does not say); a timings.json config
takes its model dimensions from the file, else from that edition's size table.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.core.numbers import plausible
from cs336_profile.config import DEFAULT_HANDOUT, MODEL_KEYS, SIZES_BY_HANDOUT
from cs336_profile.contract import CONFIG_EVENT, MARK_DOMAIN, MODES, STEP_TIMING_EVENT, TIMED_PARTS, trace_stem

if TYPE_CHECKING:
    import pandas as pd

# timings.json key -> config-mark key
_TIMINGS_JSON_CONFIG_KEYS = {
    "size": "size",
    "ctx": "context_length",
    "batch": "batch_size",
    "mode": "mode",
    "dtype": "dtype",
    "compile": "compile",
    "warmup": "warmup_steps",
    "steps": "measured_steps",
    "emit_nvtx": "emit_nvtx",
    "handout": "handout",
    **{key: key for key in MODEL_KEYS},
}


@dataclass(frozen=True)
class RunRecord:
    """The runner's own account of a run; empty fields when the trace carries none."""

    config: dict | None = None
    config_source: str | None = None  # "marks" | "timings.json" | None
    python_ms: dict[str, float] = field(default_factory=dict)  # phase -> mean ms per measured step
    python_ms_source: str | None = None  # "marks" | "timings.json" | None
    notes: tuple[str, ...] = ()


def timings_json_path(trace_path: Path) -> Path:
    """``run.sqlite``, ``run.sqlite.xz`` or ``run.nsys-rep`` -> ``run.timings.json`` in the same
    folder."""
    return Path(trace_path).with_name(trace_stem(trace_path) + ".timings.json")


def read_run_record(marks: pd.DataFrame, trace_path: Path, has_steps: bool = True) -> RunRecord:
    """Config and Python timings of a trace, from its marks, else from its timings.json.

    The Python timer times measured steps: a trace without step ranges (analyzed whole, warm-up
    included) is not compared with it, and a note says so."""
    notes: list[str] = []
    events = _run_mark_events(marks, notes)
    config = next((e for e in events if e.get("event") == CONFIG_EVENT), None)
    config_source = "marks" if config is not None else None
    python_ms = _mean_step_timings(e for e in events if e.get("event") == STEP_TIMING_EVENT)
    python_ms_source = "marks" if python_ms else None

    if config is None or not python_ms:
        sidecar = _read_timings_json(timings_json_path(trace_path), notes)
        if config is None and sidecar:
            config = _config_from_timings_json(sidecar)
            config_source = "timings.json" if config else None
        if not python_ms and sidecar:
            python_ms = {p: float(sidecar[p]) for p in TIMED_PARTS if plausible(f"{p}_ms", sidecar.get(p))}
            python_ms_source = "timings.json" if python_ms else None
            if not python_ms:
                notes.append(f"{timings_json_path(trace_path).name} has no per-phase timings "
                             f"({', '.join(TIMED_PARTS)}); Python timings unknown")
    if python_ms and not has_steps:
        notes.append(f"the Python timings ({python_ms_source}) are of measured steps, but the trace has no step "
                     "ranges to match them; its phases are not compared with them")
        python_ms, python_ms_source = {}, None
    if config is not None:
        config = _valid_config({"handout": DEFAULT_HANDOUT, **{k: v for k, v in config.items() if k != "event"}},
                               config_source, notes)
    return RunRecord(config, config_source, python_ms, python_ms_source, tuple(notes))


def _run_mark_events(marks: pd.DataFrame, notes: list[str]) -> list[dict]:
    """The JSON objects of the runner's marks, in time order; unreadable ones become a note."""
    if marks.empty:
        return []
    ours = marks[marks["domain"] == MARK_DOMAIN].sort_values("time_ns")
    events = []
    for message in ours["name"]:
        try:
            event = json.loads(message)
        except (TypeError, ValueError):
            event = None
        if isinstance(event, dict):
            events.append(event)
        else:
            notes.append(f"ignored a {MARK_DOMAIN} mark that is not a JSON object: {message!r:.80}")
    return events


def _mean_step_timings(step_events) -> dict[str, float]:
    """Mean ms per phase over the ``step_timing`` events (phases absent from a step are skipped)."""
    import pandas as pd

    rows = [e.get("phases_ms") for e in step_events]
    frame = pd.DataFrame([r for r in rows if isinstance(r, dict)])
    if frame.empty:
        return {}
    means = frame.apply(pd.to_numeric, errors="coerce").mean()
    return {phase: float(means[phase]) for phase in TIMED_PARTS if phase in means and pd.notna(means[phase])}


def _read_timings_json(path: Path, notes: list[str]) -> dict:
    if not path.is_file():
        return {}
    try:
        content = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        notes.append(f"{path.name} is unreadable ({err.__class__.__name__}); Python timings unknown")
        return {}
    if not isinstance(content, dict):
        notes.append(f"{path.name} is not a JSON object; Python timings unknown")
        return {}
    return content


def _config_from_timings_json(sidecar: dict) -> dict | None:
    config = {ours: sidecar[theirs] for theirs, ours in _TIMINGS_JSON_CONFIG_KEYS.items() if theirs in sidecar}
    if not config:
        return None
    config.setdefault("handout", DEFAULT_HANDOUT)
    if not set(MODEL_KEYS) <= set(config):
        config = {**_model_dims(config.get("size") if isinstance(config.get("size"), str) else None,
                                           str(config["handout"])), **config}
    return config


def _model_dims(size: str | None, handout: str) -> dict:
    """d_model, d_ff, num_layers, num_heads, vocab_size, rope_theta of a size in ``handout``'s table
    ({} if unknown)."""
    table = SIZES_BY_HANDOUT.get(handout, {})
    return asdict(table[size]) if size in table else {}


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _text(value) -> bool:
    return isinstance(value, str) and value != ""


# Config key -> (check, what a valid value is). Keys not listed are kept as they are.
_CONFIG_CHECKS = {
    **dict.fromkeys(("context_length", "batch_size", "measured_steps", "vocab_size", "d_model", "d_ff",
                     "num_layers", "num_heads"), (_positive_int, "a positive integer")),
    **dict.fromkeys(("warmup_steps", "seed"), (lambda v: _positive_int(v) or v == 0 and isinstance(v, int),
                                                "an integer of at least 0")),
    **dict.fromkeys(("size", "dtype", "attention", "device", "gpu_name"), (_text, "a name")),
    "mode": (lambda v: v in MODES, f"one of {', '.join(MODES)}"),
    **dict.fromkeys(("compile", "nvtx_annotations", "emit_nvtx", "layer_ranges", "allow_tf32"),
                    (lambda v: isinstance(v, bool), "true or false")),
    "rope_theta": (lambda v: plausible("rope_theta", v) and v > 0, "a positive number"),
}


def _valid_config(config: dict, source: str | None, notes: list[str]) -> dict:
    """The config without the values of the wrong type or range; one note per value left out."""
    kept = {}
    for key, value in config.items():
        check, what = _CONFIG_CHECKS.get(key, (lambda v: True, ""))
        try:
            valid = bool(check(value))
        except TypeError:  # an unhashable value tested for membership
            valid = False
        if valid:
            kept[key] = value
        else:
            notes.append(f"the run config ({source}) gives {key} = {json.dumps(value)[:60]}, not {what}; left out")
    return kept

