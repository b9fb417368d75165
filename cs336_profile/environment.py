"""The software and GPU a run used, written into every results file."""
from __future__ import annotations

import platform
from importlib import metadata

import torch


def gpu_name(device: str) -> str | None:
    """The CUDA device's name (e.g. "NVIDIA H200"), None on the CPU."""
    return torch.cuda.get_device_name() if device == "cuda" else None


def environment(device: str) -> dict:
    """Versions of Python, torch, CUDA, cuDNN, nvtx and the GPU's name, memory and SM count."""
    info = {
        "device": device,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if device == "cuda" else None,
        "nvtx": metadata.version("nvtx"),
        "gpu_name": gpu_name(device),
        "gpu_memory_bytes": None,
        "gpu_sm_count": None,
        "gpu_compute_capability": None,
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        info.update(
            gpu_memory_bytes=props.total_memory,
            gpu_sm_count=props.multi_processor_count,
            gpu_compute_capability=f"{props.major}.{props.minor}",
        )
    return info
