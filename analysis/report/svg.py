"""Charts written as SVG text directly: a figure of bars costs about a millisecond, and no plotting
library is imported. :mod:`analysis.report.svg_plot` draws lines and grids with the same parts.

Two layers. :class:`Canvas` is a document in CSS pixels (y downwards) that takes rectangles with
``<title>`` tooltips, lines and escaped text, and :func:`legend` writes a wrapping legend onto
it; :class:`Scale` maps values to pixels with nice ticks (linear or 1-2-5 log) and :func:`value_axis`
draws one. :func:`bar_chart` composes them into the report's bar chart: grouped or stacked bars,
horizontal or vertical, a title above, the axis label with its unit, and the legend under the plot.

The document states its ``width``/``height`` in pixels and a matching ``viewBox``, so a page shows it
at its drawn size and scales it down proportionally on a narrow screen.
"""
from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from analysis.core.text import printable
from analysis.report.drawing import CSS_PX_PER_IN, WIDTH_IN

# Okabe & Ito's colour-blind-safe palette, in the order series take it.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
# One colour per kernel category in every figure: Okabe–Ito for the common ones, four of Tol's
# colour-blind-safe colours and greys (by lightness) for the rest.
CATEGORY_COLORS = {
    "gemm": "#0072B2", "convolution": "#882255", "attention": "#56B4E9", "softmax": "#CC79A7",
    "normalization": "#F0E442", "reduction": "#009E73", "elementwise": "#E69F00", "copy_cast": "#D55E00",
    "optimizer": "#332288", "communication": "#44AA99", "cuda_graph": "#AA4499", "memcpy": "#555555", "memset": "#999999", "other": "#CCCCCC",
}

WIDTH_PX = round(WIDTH_IN * CSS_PX_PER_IN)  # a figure's width
FONT_PX = 13  # 10 pt
TITLE_PX = 15
SMALL_PX = 11
# Advance of a character in font sizes, by kind: roughly DejaVu Sans, a little generous, so a
# margin computed from them never clips (no font metrics are read).
NARROW, WIDE = frozenset("iljtfrI.,:;'|!()[] "), frozenset("mwMW@%—×")
CHAR_EM = 0.6  # the average, for wrapping
FONT_FAMILY = "DejaVu Sans, Verdana, Arial, sans-serif"
GRID = "#DDDDDD"
AXIS = "#333333"
PAD = 8
TICKS = 6  # about as many steps on a linear axis
SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")  # no XML 1.0 file may hold them


def escape(text: object) -> str:
    """``text`` made safe inside an XML element or a double-quoted attribute: a control character
    or bidirectional override from a trace's names shows as its escape, as on the pages
    (:func:`analysis.core.text.printable`); any other character no XML file may hold becomes U+FFFD."""
    return (NOT_XML.sub("\ufffd", printable(text, one_line=False)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def text_width(text: str, size: float = FONT_PX) -> float:
    """An estimate of ``text``'s width in pixels, on the generous side (no font metrics are read)."""
    return size * sum(0.34 if c in NARROW else 0.92 if c in WIDE else 0.72 if c.isupper() else 0.62 for c in text)


def number(value: float) -> str:
    """A value as a tooltip shows it: three to four significant figures, no exponent below 10^9."""
    if not math.isfinite(value):
        return str(value)
    magnitude = abs(value)
    if magnitude >= 100 or magnitude == 0:
        return f"{value:,.0f}" if magnitude < 1e9 else f"{value:.3g}"
    return f"{value:.2f}" if magnitude >= 1 else f"{value:.3g}"


@dataclass
class Canvas:
    """An SVG document being written, in CSS pixels with y downwards. ``height`` may grow while
    drawing; :meth:`document` closes it."""

    width: float
    height: float = 0.0
    parts: list[str] = field(default_factory=list)

    def rect(self, x: float, y: float, width: float, height: float, fill: str, title: str | None = None,
             stroke: str | None = None) -> None:
        """A filled rectangle (a negative extent is turned round); ``title`` shows on hover."""
        x, width = (x + width, -width) if width < 0 else (x, width)
        y, height = (y + height, -height) if height < 0 else (y, height)
        outline = f' stroke="{stroke}" stroke-width="0.6"' if stroke else ""
        tip = f"<title>{escape(title)}</title></rect>" if title else ""
        self.parts.append(f'<rect x="{x:.2f}" y="{y:.2f}" width="{width:.2f}" height="{height:.2f}" fill="{fill}"'
                          f'{outline}{">" + tip if tip else "/>"}')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = AXIS, width: float = 1.0,
             dash: str | None = None) -> None:
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" stroke="{stroke}" '
                          f'stroke-width="{width}"{dashes}/>')

    def text(self, x: float, y: float, text: str, size: float = FONT_PX, anchor: str = "start",
             rotate: float | None = None, weight: str | None = None) -> None:
        """``text`` escaped, vertically centred on ``y``; ``anchor``: start, middle or end;
        ``rotate``: degrees about (x, y)."""
        turn = f' transform="rotate({rotate:g} {x:.2f} {y:.2f})"' if rotate else ""
        bold = f' font-weight="{weight}"' if weight else ""
        self.parts.append(f'<text x="{x:.2f}" y="{y:.2f}" dy="0.35em" font-size="{size:g}" text-anchor="{anchor}"'
                          f'{bold}{turn}>{escape(text)}</text>')

    @contextmanager
    def group(self, name: str) -> Iterator[None]:
        """What is drawn inside the ``with`` block goes into ``<g class="name">`` (a reader of the
        file, a test or a style, finds the bars or the legend by it)."""
        self.parts.append(f'<g class="{escape(name)}">')
        yield
        self.parts.append("</g>")

    def title(self, text: str, top: float = PAD) -> float:
        """The figure's title centred at ``top``, wrapped to the width; returns the y under it."""
        lines = textwrap.wrap(text, max(20, int((self.width - 2 * PAD) / (TITLE_PX * CHAR_EM)))) or [""]
        for index, line in enumerate(lines):
            self.text(self.width / 2, top + (index + 0.5) * TITLE_PX * 1.25, line, TITLE_PX, "middle")
        return top + len(lines) * TITLE_PX * 1.25 + PAD

    def document(self) -> str:
        """The finished SVG text: size and viewBox in pixels, a white background, the elements."""
        width, height = math.ceil(self.width), math.ceil(self.height)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                f'viewBox="0 0 {width} {height}" font-family="{FONT_FAMILY}" font-size="{FONT_PX}">\n'
                f'<rect width="100%" height="100%" fill="#FFFFFF"/>\n' + "\n".join(self.parts) + "\n</svg>\n")


@dataclass(frozen=True)
class Scale:
    """Values ``low``..``high`` onto pixels ``start``..``end`` (``end`` < ``start`` runs upwards);
    ``log``: base 10, ticks at 1, 2 and 5 of each decade; ``divisions``: about how many steps a
    linear axis is cut into."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False
    divisions: int = TICKS

    def __call__(self, value: float) -> float:
        if self.log:
            low, high, value = math.log10(self.low), math.log10(self.high), math.log10(max(value, self.low))
        else:
            low, high = self.low, self.high
        return self.start + (value - low) / ((high - low) or 1.0) * (self.end - self.start)

    def ticks(self) -> list[float]:
        """The tick values inside the range."""
        if self.log:
            decades = range(math.floor(math.log10(self.low)), math.ceil(math.log10(self.high)) + 1)
            ticks = [m * 10.0 ** d for d in decades for m in (1, 2, 5)]
            return [t for t in ticks if self.low * (1 - 1e-9) <= t <= self.high * (1 + 1e-9)]
        step = nice_step((self.high - self.low) / self.divisions)
        first = math.ceil(self.low / step - 1e-9)
        return [round(i * step, 12) for i in range(first, math.floor(self.high / step + 1e-9) + 1)]

    def label(self, value: float) -> str:
        """A tick's text: as many decimals as the step needs (linear); plain numbers (0.5, 2, 100),
        or powers of ten (2·10⁻⁵) on an axis that reaches beyond 0.001..100,000 (log)."""
        if self.log:
            if 1e-3 <= self.low and self.high < 1e5:
                return f"{value:g}"
            exponent = math.floor(math.log10(value) + 1e-9)
            mantissa = round(value / 10.0 ** exponent)
            power = f"10{str(exponent).translate(SUPERSCRIPTS)}"
            return power if mantissa == 1 else f"{mantissa}·{power}"
        step = nice_step((self.high - self.low) / self.divisions)
        return f"{value:.{max(0, -math.floor(math.log10(step) + 1e-9))}f}"


def nice_step(raw: float) -> float:
    """The step of 1, 2 or 5 times a power of ten at or above ``raw``."""
    if not raw > 0 or not math.isfinite(raw):
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))


def value_range(values: list[float], log: bool = False, limits: tuple[float, float] | None = None) -> tuple[float, float]:
    """The axis range for bars of ``values`` (bars start at 0 on a linear axis): ``limits`` when
    given, else the data rounded out to the next tick (linear) or 1-2-5 value (log)."""
    if limits:
        return float(limits[0]), float(limits[1])
    finite = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    if log:
        if not finite:
            return 1.0, 10.0
        # below the smallest value by a margin: a bar drawn from the axis's low end never has no length
        return _log_tick_at_or(min(finite) / 1.5, below=True), _log_tick_at_or(max(finite), below=False)
    low, high = min([0.0, *finite]), max([0.0, *finite])
    if low == high:
        return 0.0, 1.0
    step = nice_step((high - low) / TICKS)
    return math.floor(low / step - 1e-9) * step if low < 0 else 0.0, math.ceil(high / step - 1e-9) * step


def _log_tick_at_or(value: float, below: bool) -> float:
    """The 1, 2 or 5 times a power of ten nearest ``value`` on the ``below`` side (or ``value`` itself)."""
    decade = math.floor(math.log10(value))
    ticks = [m * 10.0 ** d for d in (decade, decade + 1) for m in (1, 2, 5)]
    return max(t for t in ticks if t <= value * (1 + 1e-9)) if below else min(t for t in ticks if t >= value * (1 - 1e-9))


def value_axis(canvas: Canvas, scale: Scale, horizontal: bool, at: float, across: tuple[float, float], label: str,
               ticks: dict[float, str] | None = None) -> None:
    """The value axis of ``scale``: grid lines spanning ``across`` (pixels on the other axis),
    tick labels outside ``at`` (the axis line's position), and ``label`` beyond them. ``horizontal``:
    values run left to right, ticks under the plot; ``ticks``: value -> label, in place of the scale's."""
    ticks = ticks or {tick: scale.label(tick) for tick in shown_ticks(scale, horizontal)}
    for tick, text in ticks.items():
        pixel = scale(tick)
        if horizontal:
            canvas.line(pixel, across[0], pixel, across[1], GRID, 0.8)
            canvas.text(pixel, at + 4 + SMALL_PX / 2, text, SMALL_PX, "middle")
        else:
            canvas.line(across[0], pixel, across[1], pixel, GRID, 0.8)
            canvas.text(at - 4, pixel, text, SMALL_PX, "end")
    if horizontal:
        canvas.line(scale.start, at, scale.end, at)
        canvas.text((scale.start + scale.end) / 2, at + 8 + SMALL_PX + FONT_PX * 0.7, label, FONT_PX, "middle")
    else:
        canvas.line(at, scale.start, at, scale.end)
        widest = max((text_width(text, SMALL_PX) for text in ticks.values()), default=0)
        canvas.text(at - 8 - widest - FONT_PX * 0.7, (scale.start + scale.end) / 2, label, FONT_PX, "middle", rotate=-90)


def shown_ticks(scale: Scale, horizontal: bool) -> list[float]:
    """The ticks whose labels fit side by side: all of them, or on a crowded log axis the powers
    of ten, and of those every second, third... until they fit."""
    ticks = scale.ticks()
    if not scale.log or not _crowded(scale, ticks, horizontal):
        return ticks
    powers = [t for t in ticks if abs(math.log10(t) - round(math.log10(t))) < 1e-9]
    return next((powers[::every] for every in range(1, len(powers) + 1) if not _crowded(scale, powers[::every], horizontal)),
                powers[:1])


def _crowded(scale: Scale, ticks: list[float], horizontal: bool) -> bool:
    """Whether any two neighbouring tick labels would touch."""
    for a, b in zip(ticks, ticks[1:]):
        room = abs(scale(b) - scale(a))
        needed = (text_width(scale.label(a), SMALL_PX) + text_width(scale.label(b), SMALL_PX)) / 2 + 8 if horizontal else SMALL_PX + 2
        if room < needed:
            return True
    return False


def swatch(canvas: Canvas, x: float, y: float, label: str, color: str) -> None:
    """A legend entry's square of colour, 10 px from ``x``, centred on ``y``."""
    canvas.rect(x, y - 5, 10, 10, color, title=label)


def legend(canvas: Canvas, entries: list[tuple[str, str]], top: float, mark: Callable = swatch) -> float:
    """A legend of (label, colour) entries under ``top``, centred, wrapping onto as many rows as
    the width needs, each drawn by ``mark`` (canvas, x, y, label, colour) before its label;
    returns the y under it."""
    rows, row, used = [], [], 0.0
    for label, color in entries:
        width = 14 + text_width(label) + 14
        if row and used + width > canvas.width - 2 * PAD:
            rows.append((row, used))
            row, used = [], 0.0
        row.append((label, color, width))
        used += width
    if row:
        rows.append((row, used))
    line = FONT_PX * 1.5
    with canvas.group("legend"):
        for index, (row, used) in enumerate(rows):
            x, y = (canvas.width - used) / 2, top + (index + 0.5) * line
            for label, color, width in row:
                mark(canvas, x, y, label, color)
                canvas.text(x + 14, y, label)
                x += width
    return top + len(rows) * line


@dataclass(frozen=True)
class Series:
    """One series of a bar chart: a value per label, its colour, and optional ± errors."""

    name: str
    values: list[float]
    color: str
    errors: list[float] | None = None


def bar_chart(labels: list[str], series: list[Series], title: str, value_label: str, *, horizontal: bool = True,
              stacked: bool = False, log: bool = False, limits: tuple[float, float] | None = None,
              unit: str = "", reference: float | None = None, label_axis: str = "", notes: list[str] | None = None) -> str:
    """Bars of ``series`` for each label as an SVG document: side by side (``stacked``: one on top
    of the other, in series order), labels top to bottom (``horizontal``) or left to right;
    ``value_label`` names the value axis (with its unit), ``unit`` follows a value in its tooltip,
    ``reference`` draws a black line at that value, ``log`` a 1-2-5 log axis (bars from its low end),
    ``limits`` fixes the axis range, ``label_axis`` names the labels' axis, ``notes`` (horizontal)
    are written after each label's bars. The legend of the named series sits under the plot and wraps."""
    canvas = Canvas(WIDTH_PX)
    top = canvas.title(title)
    if stacked:
        values = [sum(v for v in column if v > 0) for column in zip(*(s.values for s in series))]
    else:
        values = [v + e for s in series for v, e in zip(s.values, s.errors or [0.0] * len(s.values))]
    low, high = value_range([*values, *([reference] if reference is not None else [])], log, limits)
    groups = 1 if stacked else max(len(series), 1)
    label_px = max((text_width(label) for label in labels), default=0)
    if horizontal:
        left = PAD + label_px + 6 + (FONT_PX * 1.5 if label_axis else 0)
        notes_px = max((text_width(note, SMALL_PX) + 6 for note in notes or ()), default=0)
        canvas.width = max(WIDTH_PX, left + 300 + notes_px)
        band = max(26.0, groups * 11.0 + 8) if groups > 1 else 26.0
        plot_bottom = top + band * len(labels)
        scale = Scale(low, high, left, canvas.width - PAD - max(14, notes_px), log)
        value_axis(canvas, scale, True, plot_bottom, (top, plot_bottom), value_label)
        for index, label in enumerate(labels):
            canvas.text(left - 6, top + (index + 0.5) * band, label, anchor="end")
        if label_axis:
            canvas.text(PAD + FONT_PX * 0.6, (top + plot_bottom) / 2, label_axis, anchor="middle", rotate=-90)
        bottom = plot_bottom + 10 + SMALL_PX + FONT_PX * 1.4
    else:
        ticks = Scale(low, high, 0, 1, log)
        tick_px = max((text_width(ticks.label(t), SMALL_PX) for t in ticks.ticks()), default=0)
        left = PAD + FONT_PX * 1.4 + tick_px + 8
        rotate = label_px > (canvas.width - PAD - left) / max(len(labels), 1) - 6  # side by side they would touch
        if rotate and labels:  # the first label, slanted down to the left of its bar, stays on the canvas
            left = max(left, PAD + text_width(labels[0]) * 0.87 - (canvas.width - PAD - left) / len(labels) / 2)
        plot_bottom = top + 220
        label_depth = label_px * 0.5 + FONT_PX if rotate else FONT_PX * 1.4
        band = (canvas.width - PAD - left) / max(len(labels), 1)
        scale = Scale(low, high, plot_bottom, top, log)
        value_axis(canvas, scale, False, left, (left, canvas.width - PAD), value_label)
        canvas.line(left, plot_bottom, canvas.width - PAD, plot_bottom)
        for index, label in enumerate(labels):
            x = left + (index + 0.5) * band
            if rotate:
                canvas.text(x + 4, plot_bottom + 8, label, anchor="end", rotate=-30)
            else:
                canvas.text(x, plot_bottom + 4 + FONT_PX * 0.6, label, anchor="middle")
        bottom = plot_bottom + label_depth + 8
        if label_axis:
            canvas.text((left + canvas.width - PAD) / 2, bottom + FONT_PX * 0.5, label_axis, anchor="middle")
            bottom += FONT_PX * 1.5
    with canvas.group("bars"):
        _bars(canvas, scale, labels, series, horizontal, stacked, band, top if horizontal else left, unit)
    for index, note in enumerate(notes or () if horizontal else ()):
        reach = max(scale(s.values[index]) for s in series) if series else left
        canvas.text(reach + 4, top + (index + 0.5) * band, note, SMALL_PX)
    if reference is not None:
        at = scale(reference)
        if horizontal:
            canvas.line(at, top, at, plot_bottom, "#000000", 0.9)
        else:
            canvas.line(left, at, canvas.width - PAD, at, "#000000", 0.9)
    named = [(s.name, s.color) for s in series if s.name]
    canvas.height = legend(canvas, named, bottom) + PAD if named else bottom
    return canvas.document()


def _bars(canvas: Canvas, scale: Scale, labels: list[str], series: list[Series], horizontal: bool, stacked: bool,
          band: float, origin: float, unit: str) -> None:
    """Each series' bars in its slot of each label's band (``origin``: where the first band starts)."""
    thickness = band * 0.8 / (1 if stacked else max(len(series), 1))
    base = scale.low if scale.log else 0.0
    ends = [base] * len(labels)
    for slot, one in enumerate(series):
        for index, (label, value) in enumerate(zip(labels, one.values)):
            if not math.isfinite(value) or (scale.log and value <= 0):
                continue
            start = ends[index] if stacked else base
            end = start + value if stacked else value
            if stacked:
                ends[index] = end
            offset = origin + index * band + band * 0.1 + (0 if stacked else slot * thickness)
            tip = f"{label} · {one.name}: {number(value)}{unit}" if one.name else f"{label}: {number(value)}{unit}"
            low, high = scale(start), scale(end)
            if horizontal:
                canvas.rect(low, offset, high - low, thickness, one.color, tip)
            else:
                canvas.rect(offset, high, thickness, low - high, one.color, tip)
            if one.errors and math.isfinite(one.errors[index]) and one.errors[index] > 0:
                _error_bar(canvas, scale, value, one.errors[index], offset + thickness / 2, horizontal)


def _error_bar(canvas: Canvas, scale: Scale, value: float, error: float, middle: float, horizontal: bool) -> None:
    """A ± ``error`` whisker with caps around ``value``, through ``middle`` across the bar."""
    low, high = scale(max(value - error, scale.low) if scale.log else value - error), scale(value + error)
    if horizontal:
        canvas.line(low, middle, high, middle, "#000000", 0.9)
        for end in (low, high):
            canvas.line(end, middle - 2.5, end, middle + 2.5, "#000000", 0.9)
    else:
        canvas.line(middle, low, middle, high, "#000000", 0.9)
        for end in (low, high):
            canvas.line(middle - 2.5, end, middle + 2.5, end, "#000000", 0.9)
