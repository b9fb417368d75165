"""Bar charts written as SVG text: each file parses as XML and states its size, every value is one
bar whose length is in proportion to it (linear) or to its logarithm (log), text is escaped, a
category has its colour, and the legend sits under the plot."""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from analysis.core.classify import CATEGORIES
from analysis.questions.records import FigureSpec, ResultsAnswer
from analysis.report import bar_figures
from analysis.report.svg import (
    CATEGORY_COLORS,
    PALETTE,
    SMALL_PX,
    Scale,
    Series,
    bar_chart,
    escape,
    shown_ticks,
    text_width,
    value_range,
)

NS = {"s": "http://www.w3.org/2000/svg"}
PHASES = {name: {"by_category_ms_per_pass": {"gemm": 8.0, "elementwise": 3.0, "copy_cast": 1.0},
                 "python_ms_per_pass": 9.0, "cpu_span_ms_per_pass": 9.0, "gpu_span_ms_per_pass": 8.5,
                 "busy_ms_per_pass": 8.0, "kernel_ms_per_pass": 12.0} for name in ("backward", "forward")}


def approx(value):
    """Equal within the two decimals a file writes coordinates with."""
    return pytest.approx(value, rel=1e-3, abs=0.02)


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    width, height = int(root.get("width")), int(root.get("height"))
    assert root.get("viewBox") == f"0 0 {width} {height}" and width > 0 and height > 0
    return root


def bars(root: ET.Element) -> list[dict]:
    """The plot's bars: position, size, fill and tooltip."""
    return [{**{k: float(rect.get(k)) for k in ("x", "y", "width", "height")}, "fill": rect.get("fill"),
             "title": rect.find("s:title", NS).text} for rect in root.findall(".//s:g[@class='bars']/s:rect", NS)]


def texts(root: ET.Element) -> list[str]:
    return [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_each_value_is_one_bar_as_long_as_its_value():
    svg = bar_chart(["a", "b", "c"], [Series("s", [1.0, 2.0, 4.0], PALETTE[0])], "t", "ms")
    widths = [bar["width"] for bar in bars(parse(svg))]
    assert len(widths) == 3 and widths[1] == approx(2 * widths[0]) and widths[2] == approx(4 * widths[0])
    vertical = bars(parse(bar_chart(["a", "b"], [Series("s", [3.0, 1.0], PALETTE[0])], "t", "ms", horizontal=False)))
    assert vertical[0]["height"] == approx(3 * vertical[1]["height"])
    assert vertical[0]["y"] + vertical[0]["height"] == approx(vertical[1]["y"] + vertical[1]["height"])  # one baseline


def test_grouped_bars_keep_series_order_and_colour_and_skip_missing_values():
    series = [Series("A", [1.0, 2.0], PALETTE[0]), Series("B", [float("nan"), 5.0], PALETTE[1])]
    drawn = bars(parse(bar_chart(["x", "y"], series, "t", "ms", unit=" ms")))
    assert [b["fill"] for b in drawn] == [PALETTE[0], PALETTE[0], PALETTE[1]]
    assert [b["title"] for b in drawn] == ["x · A: 1.00 ms", "y · A: 2.00 ms", "y · B: 5.00 ms"]


def test_text_is_escaped_and_reads_back_unchanged():
    label = 'void f<float, 3>(a & "b")'
    root = parse(bar_chart([label], [Series("x < y & z", [1.0], PALETTE[0])], "<title> & more", "ms"))
    assert label in texts(root) and "<title> & more" in texts(root) and "x < y & z" in texts(root)
    assert escape('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"
    root = parse(bar_chart(["nccl\x1b[0m\x00kernel"], [Series("s", [1.0], PALETTE[0])], "t", "ms"))  # still XML
    assert "nccl\\x1b[0m\\x00kernel" in texts(root)


def test_stacked_segments_follow_each_other_in_category_colours():
    root = parse(bar_figures.phase_categories(PHASES))
    drawn = bars(root)
    forward = [b for b in drawn if b["title"].startswith("forward")]  # the contract's order: forward first
    assert [b["fill"] for b in forward] == [CATEGORY_COLORS[c] for c in ("gemm", "elementwise", "copy_cast")]
    for first, second in zip(forward, forward[1:]):
        assert second["x"] == approx(first["x"] + first["width"])
    assert forward[0]["width"] == approx(8 / 3 * forward[1]["width"])
    assert drawn[0]["y"] < [b for b in drawn if b["title"].startswith("backward")][0]["y"]
    assert {"Kernel time by category, per phase", "kernel time per pass (ms)"} <= set(texts(root))


def test_the_legend_sits_under_every_bar():
    categories = pd.DataFrame({"category": ["gemm", "other"], "a_ms_per_pass": [9.0, 0.1], "b_ms_per_pass": [2.0, 0.1]})
    for svg in (bar_figures.phase_categories(PHASES), bar_figures.phase_spans(PHASES),
                bar_figures.category_diff(categories, "A: small fp32", "B: small bf16")):
        root = parse(svg)
        lowest_bar = max(b["y"] + b["height"] for b in bars(root))
        legend = root.findall(".//s:g[@class='legend']/s:rect", NS)
        assert legend and min(float(r.get("y")) for r in legend) > lowest_bar
        assert all(float(r.get("x")) >= 0 and float(r.get("x")) + 10 <= int(root.get("width")) for r in legend)


def test_a_long_legend_wraps_onto_rows_inside_the_width():
    series = [Series(f"a rather long series name {i}", [1.0], PALETTE[i]) for i in range(5)]
    root = parse(bar_chart(["x"], series, "t", "ms"))
    rows = {float(r.get("y")) for r in root.findall(".//s:g[@class='legend']/s:rect", NS)}
    assert len(rows) >= 3


def test_a_log_axis_places_bars_by_their_logarithm_and_labels_1_2_5():
    scale = Scale(0.01, 10.0, 0.0, 300.0, log=True)
    assert scale.ticks() == approx([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10])
    assert scale(1.0) == approx(200.0)
    assert [scale.label(t) for t in (0.01, 2.0)] == ["0.01", "2"]
    assert Scale(1e-5, 5e-3, 0, 1, log=True).label(2e-5) == "2·10⁻⁵"
    drawn = bars(parse(bar_chart(["a", "b"], [Series("s", [0.1, 1.0], PALETTE[0])], "t", "ratio", log=True)))
    low = value_range([0.1, 1.0], log=True)[0]
    assert drawn[1]["width"] / drawn[0]["width"] == approx(math.log10(1.0 / low) / math.log10(0.1 / low))


def test_a_linear_axis_ends_on_a_round_tick():
    assert value_range([11.3]) == (0.0, 12.0)
    assert Scale(0.0, 12.0, 0, 1).ticks() == [0, 2, 4, 6, 8, 10, 12]
    assert value_range([-3.0, 7.0]) == (-4.0, 8.0)
    assert value_range([15.0], limits=(0, 100)) == (0.0, 100.0)


def _answer(table: pd.DataFrame) -> ResultsAnswer:
    return ResultsAnswer("q", "", {"t": table}, ())


def test_trace_bars_draw_one_bar_per_trace_and_series_with_the_spec_labels():
    table = pd.DataFrame({"trace": ["small", "2.7B"], "a": [0.5, None], "b": [2.0, 9.0]})
    spec = FigureSpec("trace_bars", {"series": [["first", "a", 100], ["second", "b", 1], ["absent", "zz", 1]],
                                     "xlabel": "share (%)", "title": "Shares", "xlim": [0, 100]})
    root = parse(bar_figures.draw(spec, _answer(table)))
    assert [b["title"] for b in bars(root)] == ["small · first: 50.00", "2.7B · first: 0",
                                                "small · second: 2.00", "2.7B · second: 9.00"]
    assert {"small", "2.7B", "share (%)", "Shares", "first", "second", "100"} <= set(texts(root))
    assert "absent" not in texts(root)


def test_largest_allocations_figure_draws_one_bar_per_row():
    table = pd.DataFrame({"size_bytes": [20 * 1024**2] * 3, "count": [96, 32, 32],
                          "site": ["model.py:143 in forward", "model.py:31 in forward", "model.py:31 in forward"],
                          "stack": ["model.py:143 ← model.py:158", "model.py:31 ← model.py:142",
                                    "model.py:31 ← model.py:143"], "snapshot": "s"})
    root = parse(bar_figures.mem_e(FigureSpec("mem-e"), _answer(table)))
    assert len(bars(root)) == 3
    assert ["model.py:143 in forward ×96", "model.py:31 in forward ← model.py:142 ×32",
            "model.py:31 in forward ← model.py:143 ×32"] == [t for t in texts(root) if t.startswith("model.py")]


def test_every_kernel_category_has_its_own_colour():
    assert set(CATEGORY_COLORS) == set(CATEGORIES)
    assert len(set(CATEGORY_COLORS.values())) == len(CATEGORIES)


def test_a_crowded_log_axis_labels_fewer_ticks_that_do_not_touch():
    wide = Scale(1e-12, 10.0, 0.0, 250.0, log=True)
    shown = shown_ticks(wide, horizontal=True)
    assert len(shown) >= 2 and all(abs(math.log10(t) - round(math.log10(t))) < 1e-9 for t in shown)
    widths = [text_width(wide.label(t), SMALL_PX) for t in shown]
    assert all(wide(b) - wide(a) >= (wa + wb) / 2 for a, b, wa, wb in zip(shown, shown[1:], widths, widths[1:]))
    roomy = Scale(0.1, 10.0, 0.0, 400.0, log=True)
    assert shown_ticks(roomy, horizontal=True) == roomy.ticks()
