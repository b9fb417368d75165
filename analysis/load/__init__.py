"""The loader floor: the only code that reads nsys exports (:mod:`analysis.load.loader`:
``load_trace(path) -> Trace``), the inputs it copies (:mod:`analysis.load.input_cache`) and the
columnar copies of loaded traces (:mod:`analysis.load.table_cache`).

Its names are imported on first use, as the ``analysis`` facade's are: a module of this package
(the input cache, the install's key) is imported without the loader and pandas.
"""
from __future__ import annotations

import importlib

# name -> the module that defines it
_FACADE = {
    "load_trace": "analysis.load.loader",
    "require_claimable_kernels": "analysis.load.loader",
    "Trace": "analysis.load.trace",
    "RangeFilter": "analysis.load.nvtx",
    "InputCache": "analysis.load.input_cache",
    "file_sha256": "analysis.load.input_cache",
}

__all__ = list(_FACADE)


def __getattr__(name: str):
    if name in _FACADE:
        value = getattr(importlib.import_module(_FACADE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'analysis.load' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_FACADE})
