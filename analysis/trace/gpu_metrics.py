"""GPU metrics per phase: the mean of each metric's samples inside the windows of the measured
phase ranges (samples are evenly spaced, so this is a time average)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.load.gpu_metrics import METRICS


def metrics_per_phase(samples: pd.DataFrame | None, phase_ranges: pd.DataFrame) -> dict:
    """The summary's ``gpu_metrics``: ``available``, ``samples_per_s`` and ``phases`` (phase ->
    {metric key: mean %}) over the measured phase ranges."""
    if samples is None or samples.empty:
        return {"available": False, "samples_per_s": None, "phases": {}}
    measured = phase_ranges[phase_ranges["measured"]]
    phases = {}
    for phase, windows in measured.groupby("phase", sort=False):
        windows = windows.sort_values("start_ns")
        starts, ends = windows["start_ns"].to_numpy(), windows["end_ns"].to_numpy()
        at = np.searchsorted(starts, samples["time_ns"].to_numpy(), side="right") - 1
        inside = (at >= 0) & (samples["time_ns"].to_numpy() <= ends[np.maximum(at, 0)])
        means = samples[inside].groupby("metric")["value"].mean()
        if means.empty:
            continue
        phases[str(phase)] = {key: float(means[key]) for key in METRICS if key in means}
    one = samples[samples["metric"] == samples["metric"].iloc[0]]
    span_s = (one["time_ns"].max() - one["time_ns"].min()) / 1e9
    rate = float((len(one) - 1) / span_s / max(one["gpu"].nunique(), 1)) if span_s > 0 else None
    return {"available": True, "samples_per_s": rate, "phases": phases}
