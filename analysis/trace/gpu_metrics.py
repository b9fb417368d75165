"""GPU metrics per phase: the mean of each metric's samples inside the windows of the measured
phase ranges that ran on the sampled GPU (samples are evenly spaced, so this is a time average)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.core.attribution import ops_in_windows
from analysis.load.gpu_metrics import METRICS
from analysis.trace.multi_gpu.ranks import device_pairs


def metrics_per_phase(samples: pd.DataFrame | None, phase_ranges: pd.DataFrame, ops: pd.DataFrame,
                      cuda_devices: pd.DataFrame) -> dict:
    """The summary's ``gpu_metrics``: ``available``, ``samples_per_s`` and ``phases`` (phase ->
    {metric key: mean %}) over the measured phase ranges, each GPU's samples inside the windows of
    the ranges that ran on it. A range runs on its own ``device_id`` (a replica's pass), else on
    every GPU its process launched on (``ops``: the labelled ops' ``pid`` and ``device_id``);
    ``cuda_devices`` (:attr:`analysis.load.Trace.cuda_devices`) says which sampled GPU a process's
    device is. Without it a device is the GPU of its number, but where one GPU is sampled and the
    kernels ran on one, those are the same (a job given one GPU of several)."""
    if samples is None or samples.empty:
        return {"available": False, "samples_per_s": None, "phases": {}}
    windows = _gpu_windows(phase_ranges[phase_ranges["measured"].to_numpy(dtype=bool)], ops, cuda_devices,
                           np.unique(samples["gpu"].to_numpy()))
    # each sample as an op of its GPU, each window as one of that GPU's: ops_in_windows matches them per GPU
    at = pd.DataFrame({"pid": samples["gpu"].to_numpy(), "launch_start_ns": samples["time_ns"].to_numpy()}, copy=False)
    phases = {}
    for phase, mine in windows.groupby("phase", sort=False):
        means = samples[ops_in_windows(at, mine.rename(columns={"gpu": "pid"})) >= 0].groupby("metric")["value"].mean()
        if not means.empty:
            phases[str(phase)] = {key: float(means[key]) for key in METRICS if key in means}
    one = samples[samples["metric"] == samples["metric"].iloc[0]]
    span_s = (one["time_ns"].max() - one["time_ns"].min()) / 1e9
    rate = float((len(one) - 1) / span_s / max(one["gpu"].nunique(), 1)) if span_s > 0 else None
    return {"available": True, "samples_per_s": rate, "phases": phases}


def _gpu_windows(ranges: pd.DataFrame, ops: pd.DataFrame, cuda_devices: pd.DataFrame, sampled: np.ndarray) -> pd.DataFrame:
    """``phase``, ``gpu``, ``start_ns``, ``end_ns`` of each range on each sampled GPU it ran on."""
    own = ranges["device_id"].to_numpy() >= 0
    pairs = pd.DataFrame(device_pairs(ops["pid"].to_numpy(), ops["device_id"].to_numpy()) or None,
                         columns=["pid", "device_id"], dtype=np.int64)
    spread = ranges[~own].drop(columns="device_id").merge(pairs, on="pid")
    windows = pd.concat([ranges[own], spread], ignore_index=True)[["pid", "device_id", "phase", "start_ns", "end_ns"]]
    known = cuda_devices.astype(np.int64).drop_duplicates(["pid", "device_id"])
    windows = windows.merge(known, on=["pid", "device_id"], how="left")
    unmapped = windows["gpu"].isna().to_numpy()
    if len(sampled) == 1 and windows["device_id"].nunique() == 1:
        gpu = np.full(len(windows), sampled[0])
    else:
        gpu = windows["device_id"].to_numpy()
    windows["gpu"] = np.where(unmapped, gpu, windows["gpu"].fillna(-1).to_numpy()).astype(np.int64)
    return windows[["phase", "gpu", "start_ns", "end_ns"]]

