"""Figures drawn in worker processes and kept by content: a figure whose drawing function and data
are unchanged since the last report into the same folder is not drawn again.

A :class:`FigureJob` names its drawing function as ``"module:function"`` (a worker imports it; a
report whose figures are all current never imports matplotlib) and holds the function's
arguments. Its key is the SHA-256 of the function's name, its arguments as JSON and the source
of the drawing modules; ``figures/hashes.json`` maps each file to the key it was drawn from.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

FIGURES_DIR = "figures"
MANIFEST = "hashes.json"
# The code a figure's pixels depend on besides its data: a change to it redraws every figure.
DRAWING_MODULES = ("figures.py", "question_figures.py", "timeline.py")


@dataclass(frozen=True)
class FigureFile:
    """A saved figure: ``path`` relative to the output folder, and its alt text."""

    path: str
    alt: str


@dataclass(frozen=True)
class FigureJob:
    """One figure to draw: ``draw`` (``"module:function"``) called with ``args`` returns a
    matplotlib Figure, saved as ``figures/<name>`` (the suffix picks the format)."""

    draw: str
    args: tuple
    name: str
    alt: str

    @property
    def file(self) -> FigureFile:
        return FigureFile(f"{FIGURES_DIR}/{self.name}", self.alt)

    def key(self, code: str) -> str:
        """What the drawn file depends on: the function, its arguments and the drawing ``code``.

        The arguments are hashed as JSON, so the same numbers give the same key whether a summary
        was just computed or read back from the results cache (tuples there come back as lists)."""
        text = json.dumps([self.draw, self.args, code], default=_plain)
        return hashlib.sha256(text.encode()).hexdigest()


def _plain(value):
    """JSON stand-in for what the figure functions take besides plain data: tables, records."""
    if isinstance(value, (pd.DataFrame, pd.Series)):
        return value.to_json(orient="split", double_precision=15)
    if dataclasses.is_dataclass(value):
        return [type(value).__qualname__, {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}]
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


def draw_all(jobs: list[FigureJob], out_dir: Path, workers: int | None = None) -> list[FigureFile]:
    """Draw the figures of ``jobs`` whose file is missing or was drawn from other inputs, in up to
    ``workers`` processes (default: all cores); returns every job's file, in order."""
    folder = Path(out_dir) / FIGURES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path = folder / MANIFEST
    try:
        drawn = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        drawn = {}
    code = _drawing_code()
    keys = {job.name: job.key(code) for job in jobs}
    todo = [job for job in dict((job.name, job) for job in jobs).values()
            if drawn.get(job.name) != keys[job.name] or not (folder / job.name).is_file()]
    workers = min(workers or os.cpu_count() or 1, len(todo))
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            list(pool.map(_draw, *zip(*[(job.draw, job.args, folder / job.name) for job in todo]), chunksize=1))
    else:
        for job in todo:
            _draw(job.draw, job.args, folder / job.name)
    drawn.update({job.name: keys[job.name] for job in todo})
    manifest_path.write_text(json.dumps(drawn, indent=0, sort_keys=True))
    return [job.file for job in jobs]


def _draw(draw: str, args: tuple, path: Path) -> None:
    """Worker side: draw one figure and save it."""
    from analysis.report.figures import save

    module, function = draw.split(":")
    save(getattr(importlib.import_module(module), function)(*args), path)


def _drawing_code() -> str:
    here = Path(__file__).parent
    return hashlib.sha256(b"".join((here / name).read_bytes() for name in DRAWING_MODULES
                                   if (here / name).is_file())).hexdigest()
