"""Figures drawn and kept by content: a figure whose drawing function and data are unchanged since
the last report into the same folder is not drawn again. Every figure is SVG text, a millisecond
or so each, drawn in this process (a worker would cost more to start and to send the data to than
the drawing itself).

Every file is written through the safe writer (:mod:`analysis.core.safe_write`: a link where a figure
or the manifest belongs, or a ``figures`` folder leading out of the output folder, is refused).
A figure that cannot be drawn or written is a :class:`FigureNotDrawn` in place of its file, so
the page that shows it says why and the other pages are still made.

A :class:`FigureJob` names its drawing function as ``"module:function"`` (imported when a figure
of it is drawn: a report whose figures are all current imports none) and holds the function's
arguments. Its key is the SHA-256 of the function's name, its arguments as JSON and the source of
the drawing modules; ``figures/hashes.json`` maps each file to the key it was drawn from.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.core.safe_write import write_file

FIGURES_DIR = "figures"
MANIFEST = "hashes.json"
# Drawn at a width a page shows unscaled on a laptop (two side by side) and a phone scales down
# to three quarters, where text at 10 pt stays legible; a figure that spans the page (the step
# timeline) is drawn wide as well, and a phone shows its narrow drawing.
WIDTH_IN = 5.2
WIDE_IN = 10.4
CSS_PX_PER_IN = 96
PHONE_SUFFIX = "-phone"
# The code a figure's pixels depend on besides its data: a change to it redraws every figure.
DRAWING_MODULES = ("svg.py", "svg_plot.py", "bar_figures.py", "line_figures.py", "timeline.py")


@dataclass(frozen=True)
class FigureFile:
    """A saved figure: ``path`` relative to the output folder, its alt text (the SVG file states
    its size), and for a figure drawn wide (``wide``: it spans the page) the ``phone`` drawing of
    the same data that a narrow screen shows instead."""

    path: str
    alt: str
    phone: str | None = None
    wide: bool = False


class FigureNotDrawn(Exception):
    """A figure whose drawing or saving failed; the message says which and why."""


def shown(files: list[FigureFile | FigureNotDrawn]) -> list[FigureFile]:
    """A page's figure files; raises the first :class:`FigureNotDrawn` among them, which the page
    writer turns into a page saying why."""
    for file in files:
        if isinstance(file, FigureNotDrawn):
            raise file
    return files


@dataclass(frozen=True)
class FigureJob:
    """One figure to draw: ``draw`` (``"module:function"``) called with ``args`` returns an SVG
    document, written as it is as ``figures/<name>``."""

    draw: str
    args: tuple
    name: str
    alt: str
    # Drawn twice, with the width in inches as a last argument: WIDE_IN as ``name`` for a laptop and
    # WIDTH_IN as ``<stem>-phone.<suffix>`` for a phone.
    wide: bool = False

    def drawings(self) -> list[tuple[str, tuple]]:
        """(file name, arguments) of each file the job draws."""
        if not self.wide:
            return [(self.name, self.args)]
        stem, suffix = self.name.rsplit(".", 1)
        return [(self.name, (*self.args, WIDE_IN)), (f"{stem}{PHONE_SUFFIX}.{suffix}", (*self.args, WIDTH_IN))]

    def keys(self, code: str) -> dict[str, str]:
        """File name -> what that drawing depends on: the function, its arguments and the drawing
        ``code``. The arguments are hashed as JSON, so the same numbers give the same key whether a
        summary was just computed or read back from the results cache (tuples come back as lists)."""
        return {name: hashlib.sha256(json.dumps([self.draw, args, code], default=_plain).encode()).hexdigest()
                for name, args in self.drawings()}

    def file(self) -> FigureFile:
        """The saved figure as a page shows it."""
        paths = [f"{FIGURES_DIR}/{name}" for name, _ in self.drawings()]
        return FigureFile(paths[0], self.alt, phone=paths[1] if self.wide else None, wide=self.wide)



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


def draw_all(jobs: list[FigureJob], out_dir: Path) -> list[FigureFile | FigureNotDrawn]:
    """Draw the figures of ``jobs`` whose file is missing or was drawn from other inputs; returns
    every job's file, in order, or a :class:`FigureNotDrawn` for a job one of whose files could not
    be drawn or written."""
    out_dir = Path(out_dir)
    folder = out_dir / FIGURES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path = folder / MANIFEST
    try:
        drawn = {} if manifest_path.is_symlink() else json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        drawn = {}
    code = _drawing_code()
    planned = {name: (job.draw, args) for job in jobs for name, args in job.drawings()}
    keys = {name: key for job in jobs for name, key in job.keys(code).items()}
    todo = [name for name in planned if drawn.get(name) != keys[name] or (folder / name).is_symlink()
            or not (folder / name).is_file()]
    errors = {name: _draw(*planned[name], folder / name, out_dir) for name in todo}
    failed = {name: error for name, error in errors.items() if error is not None}
    drawn.update({name: keys[name] for name in todo if name not in failed})
    for name in failed:
        drawn.pop(name, None)
    write_file(manifest_path, json.dumps(drawn, indent=0, sort_keys=True), root=out_dir)
    return [_file_or_failure(job, failed) for job in jobs]


def _file_or_failure(job: FigureJob, failed: dict[str, str]) -> FigureFile | FigureNotDrawn:
    errors = [failed[name] for name, _ in job.drawings() if name in failed]
    return FigureNotDrawn(f"its figure {job.name} could not be drawn ({errors[0]})") if errors else job.file()


def _draw(draw: str, args: tuple, path: Path, root: Path) -> str | None:
    """Draw one figure and write it safely under ``root``; None, or why it failed."""
    try:
        module, function = draw.split(":")
        write_file(path, getattr(importlib.import_module(module), function)(*args), root=root)
    except Exception as err:  # noqa: BLE001 - one figure's defect must not cost the report
        return f"{type(err).__name__}: {err}"
    return None


def _drawing_code() -> str:
    here = Path(__file__).parent
    return hashlib.sha256(b"".join((here / name).read_bytes() for name in DRAWING_MODULES
                                   if (here / name).is_file())).hexdigest()
