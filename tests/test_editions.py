"""Handout editions in the analyzer: the edition and the model's dimensions come from the trace (its
config mark or timings.json), never from a size name alone; the 2026 capture traces (no warm-up
ranges, op/module/autograd ranges) analyze like the 2025 ones."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis import analyze_trace
from analysis.app.answers import answer_all
from analysis.core.flops import phase_flops
from analysis.core.runs import edition, run_label
from analysis.core.timings import read_run_record
from analysis.questions.shared.results_files import read_results_dir, results_edition
from cs336_profile.config import SIZES_BY_HANDOUT

REPO = Path(__file__).resolve().parents[1]
CAPTURE_TRACE = REPO / "nsys_runs/traces/2026/small_ctx1024_train_fp32_2026.sqlite.xz"
NO_MARKS = pd.DataFrame(columns=["name", "domain", "time_ns", "pid", "tid"])


def _record(tmp_path, sidecar: dict):
    trace = tmp_path / "run.sqlite"
    (tmp_path / "run.timings.json").write_text(json.dumps({"forward": 1.0, **sidecar}))
    return read_run_record(NO_MARKS, trace).config


def test_timings_json_dims_follow_the_edition_of_the_file(tmp_path):
    assert _record(tmp_path, {"size": "xl", "handout": "2026"})["d_model"] == SIZES_BY_HANDOUT["2026"]["xl"].d_model
    assert _record(tmp_path, {"size": "xl"})["d_model"] == SIZES_BY_HANDOUT["2025"]["xl"].d_model
    assert SIZES_BY_HANDOUT["2026"]["xl"].d_model != SIZES_BY_HANDOUT["2025"]["xl"].d_model
    # dimensions written in the file win over any size table
    assert _record(tmp_path, {"size": "xl", "handout": "2026", "d_model": 128, "d_ff": 512, "num_layers": 2,
                              "num_heads": 2, "vocab_size": 100, "rope_theta": 1.0})["d_model"] == 128
    assert _record(tmp_path, {"size": "xl"})["handout"] == "2025"


def test_run_labels_carry_the_2026_edition():
    config = {"size": "xl", "context_length": 128, "mode": "train", "dtype": "fp32"}
    assert run_label({"trace": "a.sqlite", "config": {**config, "handout": "2026"}}) == "xl ctx128 train fp32 handout 2026"
    assert run_label({"trace": "a.sqlite", "config": config}) == "xl ctx128 train fp32"
    assert edition({"trace": "a.sqlite", "config": None}) == "2025"


def test_results_of_an_edition_folder_are_read_and_know_their_edition(tmp_path):
    document = {"experiment": "checkpoint", "config": {"handout": "2026"}, "rows": [{"status": "ok"}]}
    (tmp_path / "2026").mkdir()
    (tmp_path / "2026" / "checkpoint.json").write_text(json.dumps(document))
    (tmp_path / "bench.json").write_text(json.dumps({"experiment": "bench", "config": {}, "rows": []}))
    results = read_results_dir(tmp_path)
    assert sorted(results.documents) == ["2026/checkpoint.json", "bench.json"]
    assert [results_edition(results.documents[n]) for n in sorted(results.documents)] == ["2026", "2025"]


@pytest.fixture(scope="module")
def capture_summary():
    if not CAPTURE_TRACE.is_file():
        pytest.skip("the 2026 traces are not in this checkout")
    return analyze_trace(CAPTURE_TRACE)


def test_capture_trace_measures_its_step_ranges(capture_summary):
    """--nvtx-capture=measured_steps: no warm-up range, and the measured passes are the step ranges."""
    config = capture_summary["config"]
    assert capture_summary["has_steps"] and capture_summary["notes"] == []
    assert capture_summary["measured_passes"] == config["measured_steps"] == 2
    assert set(capture_summary["measured_passes_by_phase"].values()) == {2}
    assert edition(capture_summary) == "2026"


def test_capture_trace_flops_use_the_marks_dims(capture_summary):
    config = capture_summary["config"]
    forward = capture_summary["phases"]["forward"]
    assert forward["model_flops_per_pass"] == phase_flops(config)["forward"]
    assert config["d_model"] == 768 and config["num_layers"] == 12


def test_op_and_module_ranges_leave_phases_and_attention_regions_alone(capture_summary):
    """Every forward kernel lies in a phase; each attention region holds the same kernels per layer."""
    layers = capture_summary["config"]["num_layers"]
    e = capture_summary["questions"]["e"]
    assert e["softmax_kernels_per_pass"] % layers == 0 and e["softmax_kernels_per_pass"] > 0
    assert e["matmul_range_kernels_per_pass"] % layers == 0 and e["matmul_range_kernels_per_pass"] > 0
    assert e["attention_calls_per_pass"] == layers
    python = capture_summary["python_ms_per_pass"]
    for phase in ("forward", "backward"):
        span = capture_summary["phases"][phase]["cpu_span_ms_per_pass"]
        assert span == pytest.approx(python[phase], rel=0.02)


def test_questions_of_both_editions_are_answered_per_edition():
    """mem-b is asked by both handouts: the 2025 page reads the 2025 results only; the 2026 page
    (its own file) finds no 2026 memory results, so it answers from the 2025 runs of 2.7B, the
    same model as 2026's xl, and says so; the 2026-only ckpt-b reads the 2026 folder."""
    records = answer_all([], read_results_dir(REPO / "nsys_runs/results"))
    mem_b = {r.card.editions: r for r in records if r.card.id == "mem-b"}
    assert mem_b[("2025",)].answered and mem_b[("2025",)].result.inputs == ("memory.json",)
    later = mem_b[("2026",)].result
    assert later.inputs == ("memory.json",)
    assert later.answer.startswith("From the earlier handout's runs of the same model (2025's 2.7B is this handout's xl")
    assert "xl in fp32" in later.answer and "2.7B in fp32" not in later.answer
    assert [mem_b[e].card.page for e in (("2025",), ("2026",))] == ["question-mem-b", "question-mem-b-2026"]
    ckpt = next(r for r in records if r.card.id == "ckpt-b")
    assert ckpt.answered and ckpt.result.inputs == ("2026/checkpoint.json",)


def test_a_users_own_trace_is_read_by_the_nsys_pages_of_both_editions(capture_summary):
    """A trace without the runner's config names no handout: the nsys pages of both editions read it
    (and neither reads it as the other edition's run); a runner trace stays with its edition."""
    own = analyze_trace(REPO / "tests/data/foreign/gpt2_nvtx.sqlite.xz")
    records = answer_all([own, capture_summary], read_results_dir(REPO / "nsys_runs/results/2026"))
    nsys_b = {r.card.editions: r.result for r in records if r.card.id == "nsys-b"}
    assert set(nsys_b) == {("2025",), ("2026",)}
    assert nsys_b[("2025",)].inputs == (own["trace"],)
    assert set(nsys_b[("2026",)].inputs) == {own["trace"], capture_summary["trace"]}
