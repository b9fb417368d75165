"""The step and rank timelines written as SVG: the document parses as XML, every bar lies inside
the time axis, bars narrower than a pixel are coalesced per pixel column without losing busy time,
names are escaped."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from analysis.report.drawing import CSS_PX_PER_IN, WIDE_IN, WIDTH_IN
from analysis.report.svg import CATEGORY_COLORS
from analysis.report.timeline import BAR_SHARE, KIND_COLORS, LANE_PX, MIN_BAR_PX, coalesced, rank_timeline, step_timeline

SVG = "{http://www.w3.org/2000/svg}"
CATEGORIES = ("gemm", "elementwise", "reduction")


def many_bars(count: int = 4000, duration_ms: float = 50.0) -> dict:
    """A step of ``count`` short bars on two streams, most narrower than a pixel, and two wide ones."""
    starts = [i * duration_ms / count for i in range(count)]
    return {"title": "step_0", "duration_ms": duration_ms,
            "bars": {"stream": [7 if i % 3 else 13 for i in range(count)] + [7, 13],
                     "category": [CATEGORIES[i % 3] for i in range(count)] + ["gemm", "memcpy"],
                     "start_ms": starts + [10.0, 20.0], "dur_ms": [duration_ms / count / 4] * count + [5.0, 2.0]},
            "phases": {"phase": ["forward", "backward"], "start_ms": [0.0, 20.0], "dur_ms": [20.0, 30.0]}}


def bar_rects(svg: str) -> list[ET.Element]:
    """The rectangles drawn for bars: of a lane's bar height, without an outline (phase boxes have one)."""
    root = ET.fromstring(svg)
    return [r for r in root.iter(f"{SVG}rect") if r.get("height") == f"{LANE_PX * BAR_SHARE:.2f}" and not r.get("stroke")]


def axis_extent(svg: str) -> tuple[float, float]:
    """(left, right) of the time axis: the horizontal axis line."""
    lines = [line for line in ET.fromstring(svg).iter(f"{SVG}line") if line.get("y1") == line.get("y2")]
    widest = max(lines, key=lambda line: float(line.get("x2")) - float(line.get("x1")))
    return float(widest.get("x1")), float(widest.get("x2"))


@pytest.mark.parametrize("width", [WIDE_IN, WIDTH_IN])
def test_the_step_timeline_is_svg_with_every_bar_inside_the_axis(width):
    svg = step_timeline(many_bars(), width)
    root = ET.fromstring(svg)
    assert float(root.get("width")) == pytest.approx(width * CSS_PX_PER_IN, abs=1)
    left, right = axis_extent(svg)
    rects = bar_rects(svg)
    assert rects
    for rect in rects:
        x, w = float(rect.get("x")), float(rect.get("width"))
        assert left - 0.01 <= x and x + w <= right + 0.01 and w >= MIN_BAR_PX - 0.01
        assert rect.find(f"{SVG}title").text  # a tooltip on every bar
    # 4,002 bars on two lanes: coalesced to at most one per pixel column and lane, besides the two
    # wide bars (each of which may split a column in two), the file stays small.
    assert len(rects) <= 2 * (right - left + 1) + 2 * 2 and len(svg) < 300_000


def test_the_legend_shows_each_category_drawn_in_its_colour_and_phases_are_named():
    root = ET.fromstring(step_timeline(many_bars(), WIDE_IN))
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {*CATEGORIES, "memcpy", "forward", "backward", "GPU stream 7", "GPU stream 13", "NVTX phases"} <= texts
    assert "copy_cast" not in texts  # only the categories drawn
    fills = {r.get("fill") for r in root.iter(f"{SVG}rect")}
    assert {CATEGORY_COLORS[c] for c in (*CATEGORIES, "memcpy")} <= fills


def test_coalescing_keeps_each_lanes_busy_time_and_wide_bars():
    px_per_ms = 10.0  # a pixel is 0.1 ms
    bars = [(i * 0.01, 0.004, CATEGORIES[i % 3]) for i in range(1000)] + [(20.0, 3.0, "gemm")]
    pieces = coalesced(bars, px_per_ms)
    assert sum(p.busy_ms for p in pieces) == pytest.approx(sum(d for _, d, _ in bars), abs=1 / px_per_ms)
    assert sum(p.bars for p in pieces) == len(bars)
    assert len(pieces) == 100 + 1  # one per pixel column of narrow bars, the wide bar alone
    assert pieces[-1].start_ms == 20.0 and pieces[-1].busy_ms == 3.0 and pieces[-1].bars == 1
    # A column's colour is the category with the most time in it.
    assert coalesced([(0.0, 0.01, "gemm"), (0.02, 0.05, "elementwise")], px_per_ms)[0].category == "elementwise"


def test_coalescing_keeps_bars_of_separate_columns_apart():
    pieces = coalesced([(0.0, 0.05, "gemm"), (0.15, 0.05, "gemm"), (0.3, 0.05, "gemm")], px_per_ms=10.0)
    assert [p.start_ms for p in pieces] == [0.0, 0.15, 0.3]


def test_names_with_markup_characters_are_escaped():
    timeline = {"title": "step<0> & co", "duration_ms": 2.0,
                "bars": {"stream": [7], "category": ["a<b>&c"], "start_ms": [0.0], "dur_ms": [1.0]},
                "phases": {"phase": ["fwd <&> \"x\""], "start_ms": [0.0], "dur_ms": [2.0]}}
    svg = step_timeline(timeline, WIDE_IN)
    root = ET.fromstring(svg)  # would fail on a bare < or &
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    titles = " ".join(t.text or "" for t in root.iter(f"{SVG}title"))
    assert "step<0> & co" in texts and "a<b>&c" in texts and 'fwd <&> "x"' in titles


def test_the_rank_timeline_draws_phases_and_both_kinds_per_rank():
    timeline = {"title": "step_0", "duration_ms": 10.0,
                "bars": {"rank": [0, 0, 1, 1], "stream": [7, 17, 7, 17],
                         "kind": ["compute", "communication", "compute", "communication"],
                         "start_ms": [0.0, 5.0, 1.0, 6.0], "dur_ms": [4.0, 3.0, 4.0, 0.001]},
                "phases": {"rank": [0, 1], "phase": ["forward", "forward"], "start_ms": [0.0, 1.0],
                           "dur_ms": [5.0, 5.0]}}
    svg = rank_timeline(timeline)
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"rank 0 NVTX phases", "rank 0 stream 17", "rank 1 stream 7", "compute", "communication"} <= set(texts)
    assert texts.index("compute") < texts.index("communication")  # the legend in the colours' order
    assert [r.get("fill") for r in bar_rects(svg)].count(KIND_COLORS["communication"]) == 2  # the 1 µs one too
