"""Figures are drawn once per content: a second report into the same folder draws nothing again,
and a figure whose data changed is drawn again alone. With no --format the command writes the
report and says where its index is."""
from __future__ import annotations

from analysis.app import cli
from analysis.report.drawing import WIDE_IN, WIDTH_IN, FigureJob, FigureNotDrawn, draw_all

FORWARD = "small_ctx256_forward_fp32.sqlite"
PHASES = {"forward": {"by_category_ms_per_pass": {"gemm": 2.0, "elementwise": 1.0}, "python_ms_per_pass": 3.5,
                      "cpu_span_ms_per_pass": 3.4, "gpu_span_ms_per_pass": 3.2, "busy_ms_per_pass": 3.0,
                      "kernel_ms_per_pass": 3.0}}


def _job(name: str, phases: dict) -> FigureJob:
    return FigureJob("analysis.report.bar_figures:phase_spans", (phases,), name, "spans")


def test_a_figure_is_drawn_again_only_when_its_data_changes(tmp_path):
    jobs = [_job("a.svg", PHASES), _job("b.svg", PHASES)]
    files = draw_all(jobs, tmp_path)
    assert [f.path for f in files] == ["figures/a.svg", "figures/b.svg"]
    first = {f.path: (tmp_path / f.path).stat().st_mtime_ns for f in files}
    draw_all(jobs, tmp_path)
    assert {f.path: (tmp_path / f.path).stat().st_mtime_ns for f in files} == first
    changed = {"forward": {**PHASES["forward"], "busy_ms_per_pass": 2.0}}
    draw_all([_job("a.svg", PHASES), _job("b.svg", changed)], tmp_path)
    assert (tmp_path / "figures/a.svg").stat().st_mtime_ns == first["figures/a.svg"]
    assert (tmp_path / "figures/b.svg").stat().st_mtime_ns != first["figures/b.svg"]
    (tmp_path / "figures/a.svg").unlink()  # a deleted file is drawn again
    draw_all(jobs, tmp_path)
    assert (tmp_path / "figures/a.svg").is_file()


def test_a_figure_that_fails_or_meets_a_link_is_not_drawn_and_the_others_are(tmp_path):
    victim = tmp_path / "victim.svg"
    victim.write_text("keep")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "linked.svg").symlink_to(victim)
    broken = FigureJob("analysis.report.bar_figures:no_such_drawing", (PHASES,), "broken.svg", "spans")
    good, linked, failed = draw_all([_job("good.svg", PHASES), _job("linked.svg", PHASES), broken], tmp_path)
    assert good.path == "figures/good.svg" and (tmp_path / good.path).is_file()
    assert isinstance(linked, FigureNotDrawn) and "symbolic link" in str(linked)
    assert victim.read_text() == "keep"
    assert isinstance(failed, FigureNotDrawn) and "broken.svg" in str(failed)


def test_no_format_writes_the_report_and_prints_its_index(fixture_trace, tmp_path, capsys):
    assert cli.main([str(fixture_trace(FORWARD)), "--out", str(tmp_path), "--jobs", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"report: {tmp_path / 'index.html'}"]
    assert {"index.html", "index.md", "small_ctx256_forward_fp32.json"} <= {p.name for p in tmp_path.iterdir()}


def test_a_summary_read_back_from_the_cache_keys_its_figures_as_when_computed():
    computed = {"forward": {"range": ("forward", 3), "ms": 1.5}}
    read_back = {"forward": {"range": ["forward", 3], "ms": 1.5}}  # JSON has no tuples
    assert _job("a.svg", computed).keys("code") == _job("a.svg", read_back).keys("code")
    assert _job("a.svg", computed).keys("code") != _job("a.svg", {"forward": {"range": ["forward", 3], "ms": 1.25}}).keys("code")


def test_a_wide_figure_is_drawn_for_a_laptop_and_a_phone(tmp_path):
    job = FigureJob("analysis.report.bar_figures:phase_spans", (PHASES,), "t.svg", "spans", wide=True)
    assert [name for name, _ in job.drawings()] == ["t.svg", "t-phone.svg"]
    assert [args[-1] for _, args in job.drawings()] == [WIDE_IN, WIDTH_IN]
    assert len(set(job.keys("code").values())) == 2


def test_the_drawing_code_key_covers_every_module_that_draws():
    from pathlib import Path

    import analysis.report.drawing as drawing
    here = Path(drawing.__file__).parent
    drawn_by = {"svg.py", "svg_plot.py", "bar_figures.py", "line_figures.py", "timeline.py"}
    assert drawn_by <= set(drawing.DRAWING_MODULES) and all((here / name).is_file() for name in drawing.DRAWING_MODULES)


def test_figures_are_drawn_in_this_process_without_a_pool(tmp_path, monkeypatch):
    import concurrent.futures

    def no_pool(*args, **kwargs):
        raise AssertionError("a worker pool was started for figures written as SVG text")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", no_pool)
    files = draw_all([_job("a.svg", PHASES), _job("b.svg", PHASES)], tmp_path)
    assert [f.path for f in files] == ["figures/a.svg", "figures/b.svg"]
