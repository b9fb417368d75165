"""Line charts and a grid of labelled cells, written as SVG text on :mod:`analysis.report.svg`'s
canvas with its scales, axes, legend and escaping (no matplotlib).

:func:`line_chart` draws one or more :class:`Panel` side by side under one title: each holds
:class:`Line` series (a dot per value with its tooltip, optional ± error whiskers, a dashed
style, a shaded band under the line), out-of-memory crosses along the top of the plot, dotted
:class:`Mark` lines at an x value, shaded x ranges and a reference line. Axes are linear or
logarithmic (positions in proportion to the logarithm, so one axis serves base 2 and base 10,
the ticks saying which); the legend of the named series and crosses sits under the panels.
:func:`cell_grid` draws a table of text cells coloured by their value.
"""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

from analysis.report.svg import (
    AXIS,
    FONT_PX,
    PAD,
    SMALL_PX,
    WIDTH_PX,
    Canvas,
    Scale,
    escape,
    legend,
    number,
    shown_ticks,
    text_width,
    value_axis,
    value_range,
)

PLOT_PX = 200  # a panel's plot height
DOT_PX = 3.0
CROSS_PX = 4.5
DASH = "5 3"
CELL_PX = 24


@dataclass(frozen=True)
class Line:
    """One series: ``ys`` against ``xs``, in ``color``; ``name`` labels it in the legend (empty:
    none); ``errors``: ± per value; ``dots``: a dot per value; ``lower``: a band is shaded from
    it up to the line."""

    name: str
    xs: list[float]
    ys: list[float]
    color: str
    errors: list[float] | None = None
    dashed: bool = False
    dots: bool = True
    lower: list[float] | None = None


@dataclass(frozen=True)
class Mark:
    """A dotted vertical line at ``x`` with ``label``: above the plot (``top``), else written up
    along the line from the bottom."""

    x: float
    label: str
    top: bool = True


@dataclass(frozen=True)
class Cross:
    """An × at ``x`` along the top of the plot (a run out of memory), in ``color``; ``name`` labels
    it in the legend."""

    x: float
    color: str
    name: str


@dataclass(frozen=True)
class Span:
    """A shaded x range, ``start`` to ``end``, in ``color`` at ``opacity``; ``name`` labels it in the legend."""

    start: float
    end: float
    color: str
    opacity: float = 0.2
    name: str = ""


@dataclass(frozen=True)
class Panel:
    """One plot: its lines and axis labels (with units); ``x_log``/``y_log``: logarithmic axes;
    ``x_ticks``: value -> label in place of the scale's ticks; ``unit`` follows a y value in its
    tooltip; ``spans``: shaded x ranges; ``reference``: a black horizontal line at that y."""

    lines: list[Line]
    x_label: str
    y_label: str
    x_log: bool = False
    y_log: bool = False
    x_ticks: dict[float, str] | None = None
    unit: str = ""
    crosses: tuple[Cross, ...] = ()
    marks: tuple[Mark, ...] = ()
    spans: tuple[Span, ...] = ()
    reference: float | None = None


def element(canvas: Canvas, tag: str, title: str | None = None, **attributes: object) -> None:
    """An SVG element of ``attributes`` (``_`` in a name becomes ``-``), with a ``title`` tooltip."""
    text = " ".join(f'{name.replace("_", "-")}="{escape(value)}"' for name, value in attributes.items())
    canvas.parts.append(f"<{tag} {text}><title>{escape(title)}</title></{tag}>" if title else f"<{tag} {text}/>")


def points(pairs: list[tuple[float, float]]) -> str:
    return " ".join(f"{x:.2f},{y:.2f}" for x, y in pairs)


def line_chart(panels: list[Panel], title: str) -> str:
    """``panels`` side by side under ``title`` as an SVG document, the legend of every named line,
    cross and span under them."""
    canvas = Canvas(WIDTH_PX)
    top = canvas.title(title)
    if any(mark.top for panel in panels for mark in panel.marks):
        top += SMALL_PX + 4
    bottom = top + PLOT_PX
    share = (canvas.width - PAD) / len(panels)
    for index, panel in enumerate(panels):
        _panel(canvas, panel, PAD + index * share, PAD + (index + 1) * share - PAD, top, bottom)
    styles = {line.name: (line.color, "dashed" if line.dashed else "line", line.dots) for panel in panels
              for line in panel.lines if line.name}
    styles.update({cross.name: (cross.color, "cross", False) for panel in panels for cross in panel.crosses})
    styles.update({span.name: (span.color, "span", False) for panel in panels for span in panel.spans if span.name})
    under = bottom + 10 + SMALL_PX + FONT_PX * 1.4

    def mark(canvas: Canvas, x: float, y: float, label: str, color: str) -> None:
        _, kind, dots = styles[label]
        if kind == "cross":
            _cross(canvas, x + 5, y, color, label)
        elif kind == "span":
            element(canvas, "rect", label, x=x, y=y - 5, width=10, height=10, fill=color, fill_opacity=0.4)
        else:
            canvas.line(x - 2, y, x + 12, y, color, 1.5, "3 2" if kind == "dashed" else None)
        if dots:
            element(canvas, "circle", label, cx=f"{x + 5:.2f}", cy=f"{y:.2f}", r=DOT_PX, fill=color)

    entries = [(name, color) for name, (color, *_) in styles.items()]
    canvas.height = (legend(canvas, entries, under, mark) if entries else under) + PAD
    return canvas.document()


def _panel(canvas: Canvas, panel: Panel, left: float, right: float, top: float, bottom: float) -> None:
    """One panel between ``left`` and ``right``: axes, then shaded ranges, marks, lines and crosses."""
    ys = [y for line in panel.lines for y in _reach(line) if math.isfinite(y)]
    if panel.crosses and ys:  # room above the highest value: a cross never sits on a dot
        ys.append(max(ys) * 1.5 if panel.y_log else max(ys) + 0.1 * (max(ys) - min(0.0, *ys)))
    y_scale = Scale(*value_range([*ys, *([panel.reference] if panel.reference is not None else [])], panel.y_log),
                    bottom, top, panel.y_log)
    widest = max((text_width(y_scale.label(t), SMALL_PX) for t in shown_ticks(y_scale, False)), default=0)
    left += FONT_PX * 1.4 + widest + 8
    xs = [x for line in panel.lines for x in line.xs] + [c.x for c in panel.crosses] + [m.x for m in panel.marks]
    xs += [edge for span in panel.spans for edge in (span.start, span.end)]
    x_scale = Scale(*_x_range(xs, panel.x_log), left, right, panel.x_log)
    value_axis(canvas, y_scale, False, left, (left, right), panel.y_label)
    value_axis(canvas, x_scale, True, bottom, (top, bottom), panel.x_label, panel.x_ticks)
    for span in panel.spans:
        element(canvas, "rect", x=f"{x_scale(span.start):.2f}", y=f"{top:.2f}", width=f"{x_scale(span.end) - x_scale(span.start):.2f}",
                height=f"{bottom - top:.2f}", fill=span.color, fill_opacity=span.opacity)
    if panel.reference is not None:
        canvas.line(left, y_scale(panel.reference), right, y_scale(panel.reference), "#000000", 0.9)
    for mark in panel.marks:
        x = x_scale(mark.x)
        canvas.line(x, top, x, bottom, "#808080", 1, "2 2")
        if mark.top:
            canvas.text(x, top - 4 - SMALL_PX / 2, mark.label, SMALL_PX - 2, "middle")
        else:
            canvas.text(x - 5, bottom - 4, mark.label, SMALL_PX - 2, rotate=-90)
    for line in panel.lines:
        with canvas.group("series"):
            _line(canvas, line, x_scale, y_scale, panel.unit)
    with canvas.group("oom"):
        for cross in panel.crosses:
            _cross(canvas, x_scale(cross.x), top, cross.color, f"{number(cross.x)}: out of memory")


def _reach(line: Line) -> list[float]:
    """Every y the line's dots, whiskers and band reach."""
    errors = line.errors or [0.0] * len(line.ys)
    return [*(y + e for y, e in zip(line.ys, errors)), *(y - e for y, e in zip(line.ys, errors)), *(line.lower or [])]


def _x_range(xs: list[float], log: bool) -> tuple[float, float]:
    """The data's x range, a little wider on each side (on a log axis, a quarter of an octave)."""
    finite = [x for x in xs if math.isfinite(x) and (x > 0 or not log)] or [1.0]
    low, high = min(finite), max(finite)
    if log:
        return low / 2 ** 0.25, high * 2 ** 0.25
    margin = (high - low) * 0.03 or 0.5
    return low - margin, high + margin


def _line(canvas: Canvas, line: Line, x_scale: Scale, y_scale: Scale, unit: str) -> None:
    """The band, the line, the whiskers and the dots of one series (values that are not finite skipped)."""
    kept = [(x, y, i) for i, (x, y) in enumerate(zip(line.xs, line.ys)) if math.isfinite(x) and math.isfinite(y)]
    pixels = [(x_scale(x), y_scale(y)) for x, y, _ in kept]
    if line.lower is not None and pixels:
        under = [(x_scale(x), y_scale(line.lower[i])) for x, _, i in reversed(kept)]
        element(canvas, "polygon", points=points(pixels + under), fill=line.color, fill_opacity=0.2)
    dash = {"stroke_dasharray": DASH} if line.dashed else {}
    element(canvas, "polyline", line.name or None, points=points(pixels), fill="none", stroke=line.color,
            stroke_width=1.5, **dash)
    for (x, y, i), (px, py) in zip(kept, pixels):
        error = line.errors[i] if line.errors else 0.0
        if error > 0:
            low, high = y_scale(y - error), y_scale(y + error)
            canvas.line(px, low, px, high, line.color, 1)
            for end in (low, high):
                canvas.line(px - 3, end, px + 3, end, line.color, 1)
        if line.dots:
            spread = f" ± {number(error)}" if error > 0 else ""
            label = f"{line.name}: " if line.name else ""
            element(canvas, "circle", f"{label}{number(x)} → {number(y)}{spread}{unit}", cx=f"{px:.2f}", cy=f"{py:.2f}",
                    r=DOT_PX, fill=line.color)


def _cross(canvas: Canvas, x: float, y: float, color: str, title: str) -> None:
    """An × centred on (``x``, ``y``)."""
    d = CROSS_PX
    element(canvas, "path", title, d=f"M{x - d:.2f},{y - d:.2f}L{x + d:.2f},{y + d:.2f}M{x - d:.2f},{y + d:.2f}L{x + d:.2f},{y - d:.2f}",
            stroke=color, stroke_width=1.8, fill="none")


def cell_grid(rows: list[str], columns: list[str], cells: list[list[str]], colors: dict[str, str], title: str) -> str:
    """A table as an SVG document: a row per ``rows`` label, a column per ``columns`` label (wrapped
    above), each cell's text on its colour from ``colors`` (grey for another value)."""
    canvas = Canvas(WIDTH_PX)
    top = canvas.title(title)
    left = PAD + max((text_width(row) for row in rows), default=0) + 8
    width = (canvas.width - PAD - left) / max(len(columns), 1)
    heads = [textwrap.wrap(str(column), max(8, int(width / (SMALL_PX * 0.6)))) or [""] for column in columns]
    depth = max((len(lines) for lines in heads), default=1) * SMALL_PX * 1.2
    for index, lines in enumerate(heads):
        for number_, line in enumerate(lines):
            canvas.text(left + (index + 0.5) * width, top + (number_ + 0.5) * SMALL_PX * 1.2, line, SMALL_PX, "middle")
    top += depth + 4
    with canvas.group("cells"):
        for row_index, (row, values) in enumerate(zip(rows, cells)):
            y = top + row_index * CELL_PX
            canvas.text(left - 6, y + CELL_PX / 2, row, anchor="end")
            for index, (column, value) in enumerate(zip(columns, values)):
                canvas.rect(left + index * width, y, width, CELL_PX, colors.get(str(value), "#CCCCCC"),
                            f"{row} · {column}: {value}", stroke="#FFFFFF")
                canvas.text(left + (index + 0.5) * width, y + CELL_PX / 2, str(value), SMALL_PX, "middle")
    canvas.line(left, top, left, top + len(rows) * CELL_PX, AXIS)
    canvas.height = top + len(rows) * CELL_PX + PAD
    return canvas.document()
