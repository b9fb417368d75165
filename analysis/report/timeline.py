"""Timeline of one measured step: the NVTX phase ranges above the GPU's operations, drawn from the
summary's ``timeline`` record (:mod:`analysis.trace.step_timeline`); operations are drawn per stream and
coloured by category. Written as SVG text directly: a step holds thousands of bars, which a
plotting library takes far longer to draw than it takes to write them.

The phase ranges carry their names inside them and their boundaries run down through the streams
as dashed lines, so the phases need no legend; the category legend sits under the plot. The rank
timeline draws one step of every rank of a multi-GPU trace the same way, compute against
communication kernels.

Bars are coalesced per lane and pixel column (:func:`coalesced`): the bars of a lane narrower than
a pixel that start in the same pixel column become one bar as long as their summed durations (at
least a pixel, so that none vanishes), coloured by the category with the most time among them. So
a file holds at most a bar per pixel column and lane besides the wider bars, a few hundred KB
whatever the step, and every lane shows its busy time. Each bar carries a tooltip (``<title>``):
its category, duration and start, or for a coalesced bar the time of each category in it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from analysis.report.drawing import CSS_PX_PER_IN, WIDTH_IN
from analysis.report.svg import CATEGORY_COLORS, FONT_PX, PAD, SMALL_PX, Canvas, Scale, legend, number, text_width, value_axis

PHASE_FILL = ("#EEEEEE", "#D9D9D9")  # alternating, so neighbouring ranges stay apart
EDGE = "#777777"
KIND_COLORS = {"compute": "#BBBBBB", "communication": CATEGORY_COLORS["communication"]}  # grey under teal
PHASE_PX = 12  # 9 pt
LANE_PX = 40  # the pitch of the lanes
BAR_SHARE = 0.8  # of a lane, the height of its bars
TICK_PX = 4
MIN_BAR_PX = 1.0  # a bar narrower than a pixel is drawn a pixel wide
AXIS_STEP_PX = 90  # about one time tick per this many pixels of axis


@dataclass
class Lane:
    """One row of the plot: its label and either its phase ranges (``phases``: ``start_ms, dur_ms,
    name``) or its ``bars`` (``start_ms, dur_ms, category``)."""

    label: str
    bars: list[tuple[float, float, str]] = field(default_factory=list)
    phases: list[tuple[float, float, str]] | None = None


@dataclass(frozen=True)
class Piece:
    """A drawn bar: ``start_ms``, ``busy_ms`` (the summed duration of the ``bars`` it stands for),
    the ``category`` it is coloured by and the busy ms of each category in it, most first."""

    start_ms: float
    busy_ms: float
    category: str
    by_category: tuple[tuple[str, float], ...]
    bars: int


def coalesced(bars: list[tuple[float, float, str]], px_per_ms: float) -> list[Piece]:
    """The bars of one lane (``start_ms, dur_ms, category``) as drawn: one piece per bar at least
    a pixel wide, and one per run of narrower bars starting in the same pixel column, as long as
    their summed durations and coloured by the category with the most time in it."""
    pieces, run, column = [], [], None
    for start, dur, category in sorted(bars):
        narrow = dur * px_per_ms < MIN_BAR_PX
        if run and not (narrow and math.floor(start * px_per_ms) == column):
            pieces.append(_piece(run))
            run = []
        run.append((start, dur, category))
        column = math.floor(start * px_per_ms) if narrow else None
    return pieces + ([_piece(run)] if run else [])


def _piece(run: list[tuple[float, float, str]]) -> Piece:
    busy: dict[str, float] = {}
    for _, dur, category in run:
        busy[category] = busy.get(category, 0.0) + dur
    by_category = tuple(sorted(busy.items(), key=lambda item: -item[1]))
    return Piece(run[0][0], sum(busy.values()), by_category[0][0], by_category, len(run))


def step_timeline(timeline: dict, width: float = WIDTH_IN) -> str:
    """Bars of the first measured step on one lane per stream, under the phase ranges, ``width``
    inches wide; the SVG document."""
    bars, ranges = timeline["bars"], timeline["phases"]
    streams = sorted(set(bars["stream"]))
    lanes = [Lane("NVTX phases", phases=list(zip(ranges["start_ms"], ranges["dur_ms"], ranges["phase"])))]
    lanes += [Lane(f"GPU stream {stream}") for stream in streams]
    row = {stream: 1 + index for index, stream in enumerate(streams)}
    for stream, start, dur, category in zip(bars["stream"], bars["start_ms"], bars["dur_ms"], bars["category"]):
        lanes[row[stream]].bars.append((start, dur, category))
    title = timeline["title"]
    return _timeline(lanes, timeline["duration_ms"], width, CATEGORY_COLORS,
                     f"Timeline of {title}: kernels under the NVTX phase ranges", f"ms from the start of {title}",
                     boundaries=True)


def rank_timeline(timeline: dict) -> str:
    """One step on every rank, one clock: per rank its phase ranges, then its streams with compute
    and communication kernels in two colours (the communication record's ``timeline``); the SVG
    document."""
    bars, ranges = timeline["bars"], timeline["phases"]
    lanes: dict[tuple[int, int | None], Lane] = {}  # (rank, None): the rank's phase ranges; (rank, stream)
    for rank in sorted(set(bars["rank"])):
        phases = [(start, dur, phase) for r, start, dur, phase
                  in zip(ranges["rank"], ranges["start_ms"], ranges["dur_ms"], ranges["phase"]) if r == rank]
        lanes.update({(rank, None): Lane(f"rank {rank} NVTX phases", phases=phases)} if phases else {})
        streams = sorted({stream for r, stream in zip(bars["rank"], bars["stream"]) if r == rank})
        lanes.update({(rank, stream): Lane(f"rank {rank} stream {stream}") for stream in streams})
    for rank, stream, start, dur, kind in zip(bars["rank"], bars["stream"], bars["start_ms"], bars["dur_ms"],
                                              bars["kind"]):
        lanes[(rank, stream)].bars.append((start, dur, kind))
    return _timeline(list(lanes.values()), timeline["duration_ms"], WIDTH_IN, KIND_COLORS,
                     f"Compute and communication kernels on every rank, {timeline['title']}",
                     f"ms from the start of {timeline['title']} on any rank", boundaries=False)


def _timeline(lanes: list[Lane], duration_ms: float, width_in: float, colors: dict[str, str], title: str,
              xlabel: str, boundaries: bool) -> str:
    """The figure: ``title``, the lanes over a time axis of ``duration_ms``, the legend of the
    categories drawn (in the order of ``colors``); dashed phase boundaries from the first lane down
    through the others when ``boundaries``."""
    canvas = Canvas(width_in * CSS_PX_PER_IN)
    top = canvas.title(title)
    left = PAD + max(text_width(lane.label) for lane in lanes) + TICK_PX + 4
    right = canvas.width - PAD - 4
    bottom = top + LANE_PX * len(lanes)
    time = Scale(0.0, duration_ms or 1.0, left, right, divisions=max(2, round((right - left) / AXIS_STEP_PX)))
    value_axis(canvas, time, True, bottom, (top, bottom), xlabel)
    canvas.line(left, top, left, bottom)
    px_per_ms = (right - left) / (duration_ms or 1.0)
    height = LANE_PX * BAR_SHARE
    for row, lane in enumerate(lanes):
        y = top + row * LANE_PX + (LANE_PX - height) / 2
        canvas.line(left - TICK_PX, y + height / 2, left, y + height / 2)
        canvas.text(left - TICK_PX - 4, y + height / 2, lane.label, anchor="end")
        if lane.phases is not None:
            _phases(canvas, lane.phases, left, right, y, px_per_ms, bottom if boundaries and row == 0 else None)
        for piece in coalesced(lane.bars, px_per_ms):
            width = max(piece.busy_ms * px_per_ms, MIN_BAR_PX)
            canvas.rect(min(left + piece.start_ms * px_per_ms, right - width), y, width, height,
                        colors.get(piece.category, "black"), _tooltip(piece))
    order = {category: index for index, category in enumerate(colors)}
    drawn = sorted({category for lane in lanes for _, _, category in lane.bars},
                   key=lambda category: (order.get(category, len(order)), category))
    canvas.height = legend(canvas, [(category, colors.get(category, "black")) for category in drawn],
                           bottom + 8 + SMALL_PX + FONT_PX * 1.6) + PAD
    return canvas.document()


def _tooltip(piece: Piece) -> str:
    """A bar's category, duration and start; a coalesced bar's time per category."""
    if piece.bars == 1:
        return f"{piece.category}: {number(piece.busy_ms)} ms at {number(piece.start_ms)} ms"
    return (f"{piece.bars} bars from {number(piece.start_ms)} ms: "
            + ", ".join(f"{category} {number(ms)} ms" for category, ms in piece.by_category))


def _phases(canvas: Canvas, phases: list[tuple[float, float, str]], left: float, right: float, y: float,
            px_per_ms: float, boundaries_to: float | None) -> None:
    """Each range as a grey box with its name inside (where it fits), and dashed boundaries down to
    ``boundaries_to`` when given."""
    height = LANE_PX * BAR_SHARE
    for index, (start, dur, name) in enumerate(sorted(phases)):
        x = left + start * px_per_ms
        width = min(max(dur * px_per_ms, MIN_BAR_PX), right - x)
        canvas.rect(x, y, width, height, PHASE_FILL[index % 2], f"{name}: {number(dur)} ms at {number(start)} ms",
                    stroke=EDGE)
        if width >= text_width(name, PHASE_PX) + 4:  # the name fits
            canvas.text(x + width / 2, y + height / 2, name, PHASE_PX, "middle")
        for edge in (x, x + width) if boundaries_to is not None else ():
            canvas.line(edge, y + height, edge, boundaries_to, EDGE, 0.8, dash="3 2")
