"""The trace summary: required keys and types, JSON without NaN, every real trace analyzed or
refused with a one-line TraceError, inputs untouched, and the flat CSV tables."""
from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import analyze_trace
from analysis.load import file_sha256
from analysis.load.errors import NoKernels, TraceError
from analysis.trace.summary import flat_tables, json_ready

EXTERNAL_TRACES = (
    "dlprof_pytorch_cnn_2022.sqlite",
    "extrap_ex-gpu_2021.sqlite",
    "extrap_profile1_2022win.sqlite",
    "h100_2gpu_1s.sqlite",
    "mfu_2gpu_after.sqlite",
    "mfu_2gpu_before.sqlite",
    "mock.sqlite",
)
FIXTURE_TRACES = ("small_ctx128_train_fp32.sqlite", "small_ctx256_forward_fp32.sqlite", "attention_bench.sqlite")
PHASE_KEYS = {
    "kernels_per_pass": float,
    "kernel_ms_per_pass": float,
    "gpu_span_ms_per_pass": float,
    "cpu_span_ms_per_pass": float,
    "by_category_ms_per_pass": dict,
}
QUESTION_KEYS = {
    "a": ("nsys_forward_ms", "python_forward_ms", "answer"),
    "b": ("top_forward_kernel", "calls_per_forward_pass", "top_forward_backward_kernel", "same_kernel", "answer"),
    "c": ("top_non_gemm_forward", "answer"),
    "d": ("gemm_share_forward", "gemm_share_train_step", "answer"),
    "e": ("softmax_ms_per_pass", "matmul_gemm_ms_per_pass", "matmul_range_ms_per_pass", "runtime_ratio", "flops_ratio",
          "answer"),
}


@pytest.fixture(scope="module")
def train_summary(fixture_trace):
    return analyze_trace(fixture_trace("small_ctx128_train_fp32.sqlite"))


def _assert_json_clean(summary: dict) -> None:
    text = json.dumps(summary, allow_nan=False)  # raises on NaN or inf
    assert json.loads(text) == summary


def test_required_keys_and_types(train_summary):
    assert train_summary["trace"] == "small_ctx128_train_fp32.sqlite"
    assert train_summary["gpu"] == "NVIDIA H200"
    assert train_summary["nsys_version"] == "2025.3.2.0"
    assert train_summary["measured_passes"] == 3
    for figures in train_summary["phases"].values():
        for key, kind in PHASE_KEYS.items():
            assert isinstance(figures[key], kind), key
    for question, keys in QUESTION_KEYS.items():
        answer = train_summary["questions"][question]
        assert set(keys) <= set(answer), question
        assert isinstance(answer["answer"], str) and answer["answer"].endswith(".")
    assert isinstance(train_summary["questions"]["c"]["top_non_gemm_forward"][0]["kernel"], str)
    for share in ("gemm_share_forward", "gemm_share_train_step"):
        assert 0 <= train_summary["questions"]["d"][share] <= 1


@pytest.mark.parametrize("name", FIXTURE_TRACES)
def test_fixture_traces_summarize_to_clean_json(fixture_trace, name):
    path = fixture_trace(name)
    digest = file_sha256(path)
    summary = analyze_trace(path)
    _assert_json_clean(summary)
    assert summary["trace_sha256"] == digest == file_sha256(path)


@pytest.mark.parametrize("name", EXTERNAL_TRACES)
def test_external_traces_are_analyzed_and_left_untouched(external_trace, name):
    path = external_trace(name)
    digest = file_sha256(path)
    summary = analyze_trace(path)
    _assert_json_clean(summary)
    assert summary["overall"]["kernels_per_pass"] > 0
    assert file_sha256(path) == digest


def test_trace_without_kernels_is_refused_in_one_line(external_trace):
    path = external_trace("uvmtorch_runtime_only_2025.sqlite")
    with pytest.raises(NoKernels) as refused:
        analyze_trace(path)
    assert isinstance(refused.value, TraceError) and "\n" not in str(refused.value)
    assert "no CUDA kernel records" in str(refused.value)


def test_json_ready_turns_numpy_and_nan_into_json_values():
    cleaned = json_ready({"a": np.int64(3), "b": [np.float64("nan"), math.inf, 1.5], 4: (np.bool_(True),)})
    assert cleaned == {"a": 3, "b": [None, None, 1.5], "4": [True]}
    assert type(cleaned["a"]) is int


def test_flat_tables_have_one_row_per_trace_phase_and_category(train_summary, fixture_trace):
    forward_only = analyze_trace(fixture_trace("small_ctx256_forward_fp32.sqlite"))
    tables = flat_tables([train_summary, forward_only])
    assert list(tables["phases"]["phase"]) == ["forward", "backward", "optimizer_step", "forward"]
    assert tables["phases"].loc[1, "kernels_per_pass"] == 1463
    assert len(tables["questions"]) == 2
    assert tables["questions"].loc[0, "b_calls_per_forward_pass"] == 73
    assert pd.isna(tables["questions"].loc[1, "d_gemm_share_train_step"])
    expected_rows = sum(
        len(section["by_category_ms_per_pass"])
        for summary in (train_summary, forward_only)
        for section in [*summary["phases"].values(), summary["overall"]]
    )
    assert len(tables["categories"]) == expected_rows
    assert set(tables["categories"]["phase"]) == {"forward", "backward", "optimizer_step", "overall"}


def test_flat_tables_of_no_summaries_are_empty():
    tables = flat_tables([])
    assert all(table.empty for table in tables.values())


def test_two_processes_on_two_gpus_are_reported_per_device(external_trace):
    devices = analyze_trace(external_trace("h100_2gpu_1s.sqlite"))["devices"]
    assert [(d["pid"], d["device_id"]) for d in devices] == [(111, 0), (112, 1)]
    assert [d["kernels_per_pass"] for d in devices] == [1721, 1721]
    for device in devices:
        assert 0 < device["busy_ms_per_pass"] <= device["kernel_ms_per_pass"] + 1e-9
        assert device["top_kernel"]["category"] == "gemm"


RENAMED = {"forward": "fwd", "loss": "lossfn", "backward": "bwd", "optimizer_step": "opt",
           "computing attention scores": "qk", "computing softmax": "sm", "final matmul": "av"}


def _renamed_copy(tmp_path, source: Path):
    """The reference training trace with every range the analysis reads renamed, and its timings."""
    import shutil
    import sqlite3

    copy = tmp_path / "renamed.sqlite"
    shutil.copyfile(source, copy)
    shutil.copyfile(source.with_name("small_ctx128_train_fp32.timings.json"), tmp_path / "renamed.timings.json")
    with sqlite3.connect(copy) as conn:
        for old, new in RENAMED.items():
            conn.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", (new, old))
        conn.execute("UPDATE NVTX_EVENTS SET text = 'iter' || substr(text, 6) WHERE text LIKE 'step\\_%' ESCAPE '\\'")
        conn.execute("UPDATE NVTX_EVENTS SET text = 'warm' || substr(text, 8) WHERE text LIKE 'warmup\\_%' ESCAPE '\\'")
    return copy


def _figures(summary: dict) -> dict:
    """The summary's numbers: everything but the file's name and hash, the range names, the notes,
    the answers and the timeline's title (the step's range name)."""
    drop = {"trace", "trace_sha256", "structure", "notes", "efficiency"}
    figures = {k: v for k, v in summary.items() if k not in drop}
    figures["questions"] = {q: {k: v for k, v in f.items() if k != "answer"} for q, f in summary["questions"].items()}
    figures["timeline"] = {k: v for k, v in (summary["timeline"] or {}).items() if k != "title"}
    return figures


def test_other_range_names_find_renamed_ranges(tmp_path, fixture_trace, train_summary):
    from analysis.core.range_names import RangeNames

    names = RangeNames(warmup_prefix="warm", step_prefix="iter", phases=("fwd", "lossfn", "bwd", "opt"),
                       regions=("qk", "sm", "av"))
    copy = _renamed_copy(tmp_path, fixture_trace("small_ctx128_train_fp32.sqlite"))
    renamed = analyze_trace(copy, names)
    # Same figures under the same keys: phases keep their summary names whatever their ranges are called.
    assert _figures(renamed) == _figures(train_summary)
    assert list(renamed["phases"]) == ["forward", "backward", "optimizer_step"]
    assert renamed["structure"]["phase_names"]["forward"] == ["fwd"]   # the report relabels with these
    assert "3 measured `fwd` ranges" in renamed["questions"]["a"]["answer"]
    # Without the flags the same roles are found in the trace, from the families of their names.
    found = analyze_trace(copy)
    assert _figures(found) == _figures(train_summary)
    assert found["structure"]["step_names"][:1] == ["iter0"] and found["structure"]["warmup_steps"] == 2
    assert found["structure"]["attention_names"]["computing softmax"] == ["sm"]


def test_timeline_relabels_with_the_range_names_in_use(tmp_path, fixture_trace):
    from analysis.core.range_names import RangeNames
    from analysis.report.timeline import step_timeline

    names = RangeNames(warmup_prefix="warm", step_prefix="iter", phases=("fwd", "lossfn", "bwd", "opt"),
                       regions=("qk", "sm", "av"))
    svg = ET.fromstring(step_timeline(analyze_trace(_renamed_copy(tmp_path, fixture_trace("small_ctx128_train_fp32.sqlite")),
                                                    names)["timeline"]))
    texts = [text.text for text in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "Timeline of iter0: kernels under the NVTX phase ranges" in " ".join(texts)  # the title, maybe wrapped
    # The phase ranges carry their names inside their boxes (the legend lists kernel categories only).
    assert {"forward", "backward"} <= set(texts)


def test_every_key_of_the_summary_is_one_declared_section_built_after_those_it_reads():
    from analysis.questions.registry import PER_TRACE
    from analysis.trace.summary import SUMMARY_KEYS, sections

    keys = [section.key for section in sections(PER_TRACE)]
    assert sorted(keys) == sorted(SUMMARY_KEYS) and len(set(keys)) == len(keys)
    assert keys[0] == "communication"  # before the questions' tables exist
    assert keys.index("notes") > max(keys.index("memory_ledger"), keys.index("gpu_metrics"))
    for position, section in enumerate(sections(PER_TRACE)):
        assert all(keys.index(needed) < position for needed in section.needs), section.key


def _keys_anywhere(value) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys_anywhere(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys_anywhere(item) for item in value))
    return set()


@pytest.mark.parametrize("name", FIXTURE_TRACES)
def test_the_stored_summary_holds_figures_and_the_shown_one_adds_the_sentences(fixture_trace, name):
    import copy

    from analysis.app.analyze import stored_summary, stored_summary_schema, summary_schema
    from analysis.questions.sentences import with_sentences
    from analysis.trace.summary_schema import problems

    stored = stored_summary(fixture_trace(name))
    kept = copy.deepcopy(stored)
    shown = with_sentences(stored)
    assert stored == kept  # the stored summary is left as it is
    assert "answer" not in _keys_anywhere(stored)
    assert problems(stored, stored_summary_schema()) == [] and problems(shown, summary_schema()) == []
    assert list(shown) == list(stored)  # the same keys in the same order
    answers = [shown["efficiency"], shown["memory_ledger"], *shown["questions"].values()]
    assert all(record["answer"] for record in answers)
    assert shown == analyze_trace(fixture_trace(name))
