"""The question figures that are lines and a grid, written as SVG text: each parses as XML, every
completed run is one dot placed in proportion to its value (log-2 lengths, linear GiB), a run out
of memory is a cross at the top of the plot in its mode's colour, the dtype grid has a cell per
quantity and setting with its text escaped, and drawing them imports no plotting library."""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from analysis.questions.records import FigureSpec, ResultsAnswer
from analysis.report import line_figures
from analysis.report.svg import PALETTE
from analysis.report.svg_plot import Line, Panel, line_chart
from cs336_profile.contract import GIB, MIB
from tests.test_svg import NS, parse, texts

PEAKS = pd.DataFrame({"mode": ["forward"] * 4 + ["train"] * 4, "context_length": [128, 256, 512, 1024] * 2,
                      "peak_memory_bytes": [1 * GIB, 2 * GIB, 4 * GIB, None, 3 * GIB, 6 * GIB, None, None],
                      "status": ["ok", "ok", "ok", "OOM", "ok", "ok", "OOM", "OOM"]})
ATTENTION = pd.DataFrame({"head_dim": [16, 16, 16, 64, 64, 64], "seq_len": [256, 1024, 4096] * 2,
                          "forward_ms_mean": [0.1, 1.0, None, 0.2, 2.0, None],
                          "backward_ms_mean": [0.2, 2.0, None, 0.4, 4.0, None],
                          "memory_before_backward_bytes": [1 * MIB, 16 * MIB, None, 2 * MIB, 32 * MIB, None],
                          "forward_speedup": [1.5, 2.0, None, 1.2, 1.8, None],
                          "backward_speedup": [1.1, 1.4, None, 1.0, 1.3, None],
                          "status": ["ok", "ok", "OOM", "ok", "ok", "OOM"]})


def _answer(*tables: pd.DataFrame, downloads: dict | None = None) -> ResultsAnswer:
    return ResultsAnswer("q", "", {f"t{i}": t for i, t in enumerate(tables)}, (), downloads=downloads or {})


def _draw(kind: str, *tables: pd.DataFrame, **answer) -> ET.Element:
    return parse(line_figures.draw(FigureSpec(kind), _answer(*tables, **answer)))


def dots(root: ET.Element) -> list[dict]:
    """Each value's dot: centre, colour and tooltip."""
    return [{"x": float(c.get("cx")), "y": float(c.get("cy")), "fill": c.get("fill"), "title": c.find("s:title", NS).text}
            for c in root.findall(".//s:g[@class='series']/s:circle", NS)]


def crosses(root: ET.Element) -> list[dict]:
    """Each out-of-memory cross: its centre (the middle of its first stroke), colour and tooltip."""
    found = []
    for path in root.findall(".//s:g[@class='oom']/s:path", NS):
        (x1, y1), (x2, y2) = [map(float, p.split(",")) for p in path.get("d")[1:].split("M")[0].split("L")]
        found.append({"x": (x1 + x2) / 2, "y": (y1 + y2) / 2, "stroke": path.get("stroke"), "title": path.find("s:title", NS).text})
    return found


def test_each_completed_run_is_a_dot_at_its_length_on_a_log_2_axis_and_its_gib():
    root = _draw("mem-b", PEAKS)
    forward = [d for d in dots(root) if d["fill"] == PALETTE[0]]
    train = [d for d in dots(root) if d["fill"] == PALETTE[1]]
    assert len(forward) == 3 and len(train) == 2  # one dot per completed run, none for the OOM ones
    octave = forward[1]["x"] - forward[0]["x"]
    assert octave > 10 and forward[2]["x"] - forward[1]["x"] == pytest.approx(octave, abs=0.02)  # 128, 256, 512: equal steps
    assert [d["x"] for d in train] == pytest.approx([d["x"] for d in forward[:2]], abs=0.02)
    per_gib = forward[0]["y"] - forward[1]["y"]  # y grows upwards, in proportion to GiB
    assert per_gib > 0 and forward[1]["y"] - forward[2]["y"] == pytest.approx(2 * per_gib, abs=0.05)
    assert train[0]["y"] == pytest.approx(forward[0]["y"] - 2 * per_gib, abs=0.05)
    assert "512 → 4.00 GiB" in forward[2]["title"]


def test_runs_out_of_memory_are_crosses_at_the_top_in_their_modes_colour():
    root = _draw("mem-b", PEAKS)
    marks, points = crosses(root), dots(root)
    assert sorted((m["stroke"], m["title"]) for m in marks) == sorted(
        [(PALETTE[0], "1,024: out of memory"), (PALETTE[1], "512: out of memory"), (PALETTE[1], "1,024: out of memory")])
    octave = points[1]["x"] - points[0]["x"]
    forward_oom = next(m for m in marks if m["stroke"] == PALETTE[0])
    assert forward_oom["x"] == pytest.approx(points[2]["x"] + octave, abs=0.05)  # 1024: one octave past 512
    assert all(m["y"] < min(p["y"] for p in points) for m in marks)
    assert {"forward: OOM", "train: OOM"} <= set(texts(root))  # in the legend


def test_no_cross_where_every_run_completed():
    assert crosses(_draw("mem-b", PEAKS[PEAKS["status"] == "ok"])) == []


def test_checkpoint_groups_that_ran_out_of_memory_are_crosses():
    table = pd.DataFrame({"blocks_per_group": [0, 1, 2, 4, 8, 16], "peak_memory_bytes": [9 * GIB, 5 * GIB, 6 * GIB, 7 * GIB, None, None],
                          "status": ["ok", "ok", "ok", "ok", "OOM", "OOM"]})
    root = _draw("ckpt-b", table)
    assert len(dots(root)) == 3 and len(crosses(root)) == 2
    xs = [d["x"] for d in dots(root)] + sorted(m["x"] for m in crosses(root))
    assert [b - a for a, b in zip(xs, xs[1:])] == pytest.approx([xs[1] - xs[0]] * 4, abs=0.05)  # 1, 2, 4, 8, 16
    assert {"1", "2", "4", "8", "16"} <= set(texts(root))


def test_mem_c_draws_fp32_solid_and_bf16_dashed_with_their_crosses():
    table = PEAKS.rename(columns={"peak_memory_bytes": "fp32_peak_bytes"}).assign(bf16_peak_bytes=PEAKS["peak_memory_bytes"] / 2)
    root = _draw("mem-c", pd.DataFrame(), table)
    lines = root.findall(".//s:g[@class='series']/s:polyline", NS)
    assert [line.get("stroke-dasharray") for line in lines] == [None, None, "5 3", "5 3"]
    assert len(dots(root)) == 10 and len(crosses(root)) == 6


def test_attention_marks_each_sequence_length_that_ran_out_of_memory():
    root = _draw("attn-a", ATTENTION)
    assert texts(root).count("OOM") == 2  # one per panel: time and memory
    assert len(dots(root)) == 8 and {"d=16", "d=64"} <= set(texts(root))
    assert {"256", "1k", "4k"} <= set(texts(root))
    compiled = _draw("compile-a", ATTENTION)
    assert len(dots(compiled)) == 8 and texts(compiled).count("OOM") == 2


def test_error_whiskers_span_the_standard_deviation():
    table = pd.DataFrame({"size": ["small"] * 2, "context_length": [256] * 2, "mode": ["train"] * 2, "warmup_steps": [0, 1],
                          "step_ms_mean": [100.0, 50.0], "step_ms_std": [40.0, 0.0]})
    root = _draw("bench-c", table)
    first, second = dots(root)
    assert "± 40.00 ms" in first["title"] and "±" not in second["title"]
    whisker = [line for line in root.findall(".//s:g[@class='series']/s:line", NS)
               if float(line.get("x1")) == float(line.get("x2")) == pytest.approx(first["x"], abs=0.01)]
    low, high = sorted(float(y) for y in (whisker[0].get("y1"), whisker[0].get("y2")))
    per_decade = (second["y"] - first["y"]) / math.log10(100 / 50)  # log y: 60..140 around 100
    assert high - first["y"] == pytest.approx(per_decade * math.log10(100 / 60), abs=0.05)
    assert first["y"] - low == pytest.approx(per_decade * math.log10(140 / 100), abs=0.05)


def test_memory_over_time_shades_ranges_and_marks_phase_peaks():
    timeline = pd.DataFrame({"mode": ["train"] * 3, "context_length": [128] * 3, "time_ms": [0.0, 5.0, 9.0],
                             "allocated_bytes": [1 * GIB, 3 * GIB, 2 * GIB]})
    peaks = pd.DataFrame({"mode": ["train", "train"], "phase": ["backward", "optimizer_step"], "reached_at_ms": [5.0, None]})
    root = _draw("mem-a", pd.DataFrame(), peaks, downloads={"timeline": timeline})
    assert "backward peak" in texts(root) and "optimizer step peak" not in texts(root)
    spans = pd.DataFrame({"block": [0, 0], "phase": ["forward", "backward"], "start_ms": [1.0, 6.0], "dur_ms": [2.0, 2.0]})
    ledger = _draw("mem-f", *[pd.DataFrame()] * 3, timeline[["time_ms", "allocated_bytes"]], spans)
    shaded = [r for r in ledger.iter("{http://www.w3.org/2000/svg}rect") if r.get("fill-opacity")]
    assert [r.get("fill") for r in shaded][:2] == [PALETTE[1], PALETTE[2]]
    assert {"blocks' forward ranges", "blocks' backward ranges"} <= set(texts(ledger))


def test_fsdp_lead_has_a_band_down_to_the_worst_pass():
    table = pd.DataFrame({"trace": ["t"] * 3, "rank": [0] * 3, "block": [0, 1, 2], "lead_ms": [1.0, -0.5, 2.0],
                          "min_lead_ms": [0.5, -1.0, 1.0]})
    root = _draw("fsdp-b", table)
    assert len(dots(root)) == 3 and len(root.findall(".//s:g[@class='series']/s:polygon", NS)) == 1
    assert "t, rank 0" in texts(root)


def test_the_dtype_grid_has_a_cell_per_quantity_and_setting_and_escapes_text():
    table = pd.DataFrame({"quantity": ["weights", "<logits> & \"loss\""], "under fp16": ["float32", "float16"],
                          "under bf16": ["float32", "bfloat16"]})
    svg = line_figures.draw(FigureSpec("mp-a"), _answer(table))
    root = parse(svg)
    cells = root.findall(".//s:g[@class='cells']/s:rect", NS)
    assert len(cells) == 4
    assert [c.get("fill") for c in cells] == [line_figures.DTYPE_COLORS[d] for d in ("float32", "float32", "float16", "bfloat16")]
    assert "<logits> & \"loss\"" in texts(root) and "&lt;logits&gt; &amp; &quot;loss&quot;" in svg


def test_a_name_with_markup_is_escaped_in_the_legend_and_tooltips():
    svg = line_chart([Panel([Line("<a & b>", [1, 2], [1, 2], "#000000")], "x (ms)", "y (GiB)")], "t <&>")
    root = parse(svg)
    assert "<a & b>" in texts(root) and "t <&>" in texts(root)
