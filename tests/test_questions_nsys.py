"""The nsys questions a-e and their extras on the reference traces, checked against nsys's own
reports where it has one and against the raw SQLite where it has none."""
from __future__ import annotations

import csv
import json
import sqlite3
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from analysis.compare.diff import diff_summaries
from analysis.core import text
from analysis.core.attribution import ops_in_windows
from analysis.core.flops import phase_flops
from analysis.core.intervals import union_length_per_group
from analysis.core.kernel_names import kernel_label
from analysis.core.phases import gpu_ops, label_ops
from analysis.core.timings import RunRecord, read_run_record, timings_json_path
from analysis.load import load_trace
from analysis.load.tables import op_ends
from analysis.questions import nsys_a, nsys_b, nsys_c, nsys_d, nsys_e
from analysis.questions.registry import PER_TRACE
from analysis.questions.sentences import efficiency_sentence, with_sentences
from analysis.trace import efficiency
from analysis.trace.nsys_inputs import MEASURED_COLUMNS, NsysInputs, kernel_totals, op_classes
from analysis.trace.phase_breakdown import phase_summaries
from analysis.trace.step_timeline import merged_bars, slotted_bars
from analysis.trace.summary import summarize

TRAIN = "small_ctx128_train_fp32.sqlite"
FORWARD = "small_ctx256_forward_fp32.sqlite"
TOP_FORWARD_GEMM = (
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_"
    "execute_kernel__5x_cublas"
)


@pytest.fixture(scope="module")
def train_trace(fixture_trace):
    return load_trace(fixture_trace(TRAIN))


@pytest.fixture(scope="module")
def train_inputs(train_trace):
    run = read_run_record(train_trace.marks, train_trace.path)
    return NsysInputs.build(label_ops(train_trace), run, train_trace.gpu_name)


@pytest.fixture(scope="module")
def train_summary(train_trace):
    return with_sentences(summarize(train_trace, PER_TRACE))


def _shown_summary(path) -> dict:
    """The summary of the trace at ``path`` as ``analyze_trace`` gives it, with its sentences."""
    return with_sentences(summarize(load_trace(path), PER_TRACE))


def _nsys_csv(fixture_trace, report: str) -> list[dict]:
    path = fixture_trace(TRAIN).with_name(TRAIN.replace(".sqlite", f".{report}.csv"))
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _nvtx_kernel_instances(fixture_trace, range_name: str) -> int:
    """Kernel launches nsys's nvtx_kern_sum counts in all instances of a range (same-thread rule)."""
    return sum(int(r["Kern Inst"]) for r in _nsys_csv(fixture_trace, "nvtx_kern_sum") if r["NVTX Range"] == range_name)


# ---------------------------------------------------------------- against nsys's own reports


def test_kernel_totals_over_the_whole_trace_equal_nsys_cuda_gpu_kern_sum(fixture_trace, train_inputs):
    kernels = train_inputs.ops[train_inputs.ops["op_kind"] == "kernel"]
    ours = kernel_totals(kernels, passes=1).set_index("kernel")
    nsys = pd.DataFrame(_nsys_csv(fixture_trace, "cuda_gpu_kern_sum")).set_index("Name")
    assert len(ours) == len(nsys) == 66
    assert (ours.loc[nsys.index, "total_ns"] == nsys["Total Time (ns)"].astype(int)).all()
    assert (ours.loc[nsys.index, "calls"] == nsys["Instances"].astype(int)).all()


def test_same_thread_forward_projections_add_up_to_nsys_nvtx_gpu_proj_sum(fixture_trace, train_trace):
    ops = gpu_ops(train_trace)
    ops = ops.assign(end_ns=op_ends(ops))
    forward = train_trace.ranges[train_trace.ranges["name"] == "forward"].reset_index(drop=True)
    window = ops_in_windows(ops, forward, same_thread=True)
    held = ops[window >= 0].assign(window=window[window >= 0])
    spans = held.groupby("window").agg(first_ns=("start_ns", "min"), last_ns=("end_ns", "max"))
    nsys = {r["Range"]: r for r in _nsys_csv(fixture_trace, "nvtx_gpu_proj_sum")}[":forward"]
    assert len(forward) == int(nsys["Range Instances"]) == 5
    assert int((spans["last_ns"] - spans["first_ns"]).sum()) == int(nsys["Total Proj Time (ns)"]) == 790_869_607
    assert len(held) == int(nsys["Total GPU Ops"]) == 4840


def test_backward_gets_its_kernels_from_the_autograd_thread(fixture_trace, train_trace, train_summary):
    ops = gpu_ops(train_trace)
    backward = train_trace.ranges[train_trace.ranges["name"] == "backward"].reset_index(drop=True)
    same_thread_ops = int((ops_in_windows(ops, backward, same_thread=True) >= 0).sum())
    nsys = {r["Range"]: r for r in _nsys_csv(fixture_trace, "nvtx_gpu_proj_sum")}[":backward"]
    assert same_thread_ops == int(nsys["Total GPU Ops"]) == 5  # what the same-thread rule sees
    assert train_summary["phases"]["backward"]["kernels_per_pass"] == 1463


def test_per_pass_counts_match_nsys_range_instances(fixture_trace, train_summary):
    # Every forward pass launches the same kernels, so nsys's totals over 5 passes / 5 = one pass.
    questions = train_summary["questions"]
    assert train_summary["phases"]["forward"]["kernels_per_pass"] == _nvtx_kernel_instances(fixture_trace, ":forward") / 5 == 956
    top_calls = {
        r["Kernel Name"]: int(r["Kern Inst"]) for r in _nsys_csv(fixture_trace, "nvtx_kern_sum") if r["NVTX Range"] == ":forward"
    }
    assert questions["b"]["top_forward_kernel"] == TOP_FORWARD_GEMM
    assert questions["b"]["calls_per_forward_pass"] == top_calls[TOP_FORWARD_GEMM] / 5 == 73
    assert questions["e"]["softmax_kernels_per_pass"] == _nvtx_kernel_instances(fixture_trace, ":computing softmax") / 5 == 60
    matmul_launches = _nvtx_kernel_instances(fixture_trace, ":computing attention scores") + _nvtx_kernel_instances(
        fixture_trace, ":final matmul"
    )
    assert questions["e"]["matmul_range_kernels_per_pass"] == matmul_launches / 5 == 72
    assert questions["e"]["matmul_gemm_kernels_per_pass"] == 24  # two per layer: scores and final matmul


def test_forward_cpu_span_is_the_mean_of_the_measured_forward_ranges_in_the_sqlite(fixture_trace, train_summary):
    with sqlite3.connect(f"file:{fixture_trace(TRAIN)}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT start, end FROM NVTX_EVENTS WHERE text = 'forward' ORDER BY start").fetchall()
    measured = rows[2:]  # two warm-up steps, then three measured ones
    assert len(measured) == 3
    answer = train_summary["questions"]["a"]
    assert answer["nsys_forward_ms"] * 3e6 == pytest.approx(sum(end - start for start, end in measured), abs=1e-3)
    assert sum(end - start for start, end in measured) == 114_756_718


# ---------------------------------------------------------------- exact figures of the reference trace


def test_phase_figures_of_the_training_trace(train_summary):
    phases = train_summary["phases"]
    assert list(phases) == ["forward", "backward", "optimizer_step"]
    assert train_summary["measured_passes"] == 3
    summed_ns = {p: round(f["kernel_ms_per_pass"] * 3e6) for p, f in phases.items()}
    assert summed_ns == {"forward": 16_332_083, "backward": 33_885_885, "optimizer_step": 8_690_070}
    assert round(phases["forward"]["gpu_span_ms_per_pass"] * 3e6) == 113_957_518
    assert [f["kernels_per_pass"] for f in phases.values()] == [956, 1463, 888]
    for figures in phases.values():
        assert sum(figures["by_category_ms_per_pass"].values()) == pytest.approx(figures["kernel_ms_per_pass"])
        assert figures["busy_ms_per_pass"] <= figures["gpu_span_ms_per_pass"] <= figures["cpu_span_ms_per_pass"]
        assert figures["idle_ms_per_pass"] == pytest.approx(figures["gpu_span_ms_per_pass"] - figures["busy_ms_per_pass"])
    # The optimizer's kernels never overlap, and it launches no copies: busy time is kernel time.
    assert phases["optimizer_step"]["busy_ms_per_pass"] == phases["optimizer_step"]["kernel_ms_per_pass"]


def test_question_a_compares_with_the_python_timer_from_timings_json(train_summary):
    answer = train_summary["questions"]["a"]
    assert round(answer["python_forward_ms"], 2) == 38.26
    assert answer["nsys_to_python_ratio"] == pytest.approx(answer["nsys_forward_ms"] / answer["python_forward_ms"])
    assert "38.25 ms" in answer["answer"] and "38.26 ms" in answer["answer"]
    assert train_summary["python_ms_source"] == "timings.json"


def test_question_b_same_kernel_leads_forward_and_backward(train_summary):
    answer = train_summary["questions"]["b"]
    assert answer["same_kernel"] is True
    assert answer["top_forward_backward_kernel"] == TOP_FORWARD_GEMM
    assert round(answer["top_forward_ms_per_pass"] * 3e6) == 8_208_818
    assert "73 calls" in answer["answer"]


def test_question_b_names_the_leading_kernel_as_an_operation(train_summary):
    answer = train_summary["questions"]["b"]
    # 73 calls in 12 layers: 6 per layer and one outside them (the lm_head)
    assert (answer["calls_per_layer"], answer["calls_outside_layers"]) == (6, 1)
    assert answer["top_forward_precision"] == "fp32" and answer["top_forward_tensor_core"] is False
    assert answer["top_forward_label"] == kernel_label(TOP_FORWARD_GEMM)
    assert "6 per layer × 12 layers + 1" in answer["answer"] and "and the lm_head" in answer["answer"]
    assert "fp32 on CUDA cores (FFMA, no TF32)" in answer["answer"]


def test_question_c_lists_non_gemm_kernels_above_one_percent(train_summary):
    answer = train_summary["questions"]["c"]
    rows = answer["top_non_gemm_forward"]
    assert [r["calls_per_pass"] for r in rows] == [145, 72, 74, 37, 26, 24, 12, 13]
    assert all(r["category"] != "gemm" and r["share"] > 0.01 for r in rows)
    assert {r["category"] for r in answer["non_gemm_categories_forward"]} == {"elementwise", "reduction", "copy_cast"}
    assert answer["non_gemm_share"] == pytest.approx(1 - train_summary["questions"]["d"]["gemm_share_forward"])


def test_question_c_places_non_gemm_time_in_the_attention_sub_ranges_or_outside(train_summary):
    answer = train_summary["questions"]["c"]
    regions = {r["region"]: r["share"] for r in answer["non_gemm_by_region"]}
    assert set(regions) == {"outside the attention sub-ranges", "softmax", "attention scores", "final matmul"}
    assert sum(regions.values()) == pytest.approx(answer["non_gemm_share"])
    assert answer["attention_non_gemm_share"] == pytest.approx(answer["non_gemm_share"]
                                                               - regions["outside the attention sub-ranges"])
    rows = answer["top_non_gemm_forward"]
    assert all(r["label"] == kernel_label(r["kernel"]) for r in rows)
    assert len({r["label"] for r in rows}) == len(rows)  # distinct kernels, distinct labels
    softmax_max = next(r for r in rows if r["label"].startswith("reduce MaxOps"))
    assert (softmax_max["region"], softmax_max["region_share"]) == ("softmax", 1.0)
    assert f"Inside the attention sub-ranges (the score matrix's scale, mask, softmax: T² work) they take " \
           f"{answer['attention_non_gemm_share'] * 100:.1f}%" in answer["answer"]


def test_question_d_gemm_share_falls_from_forward_to_training_step(train_summary):
    answer = train_summary["questions"]["d"]
    overall = train_summary["overall"]
    forward = train_summary["phases"]["forward"]
    assert answer["gemm_share_forward"] == pytest.approx(forward["by_category_ms_per_pass"]["gemm"] / forward["kernel_ms_per_pass"])
    assert answer["gemm_share_train_step"] == pytest.approx(overall["by_category_ms_per_pass"]["gemm"] / overall["kernel_ms_per_pass"])
    assert answer["gemm_share_train_step"] < answer["gemm_share_forward"]
    shares = {r["category"]: r for r in answer["category_shares"]}
    assert sum(r["train_step_share"] for r in shares.values()) == pytest.approx(1)
    assert "71.1%" in answer["answer"] and "58.0%" in answer["answer"]


def test_question_e_softmax_against_the_gemms_of_the_matmul_ranges(train_summary):
    answer = train_summary["questions"]["e"]
    assert round(answer["softmax_ms_per_pass"] * 3e6) == 661_534
    assert round(answer["matmul_range_ms_per_pass"] * 3e6) == 863_933
    gemm_ns = round(answer["matmul_gemm_ms_per_pass"] * 3e6)
    assert gemm_ns < 863_933
    # against the GEMMs alone the softmax is slower; against the whole ranges it looked faster
    assert answer["runtime_ratio"] == pytest.approx(661_534 / gemm_ns) and answer["runtime_ratio"] > 1
    assert answer["range_runtime_ratio"] == pytest.approx(661_534 / 863_933) and answer["range_runtime_ratio"] < 1
    assert answer["runtime_ratio_pass_min"] <= answer["runtime_ratio"] <= answer["runtime_ratio_pass_max"]
    others = sum(o["ms_per_pass"] for o in answer["matmul_range_other"])
    assert others + answer["matmul_gemm_ms_per_pass"] == pytest.approx(answer["matmul_range_ms_per_pass"])
    assert {o["category"] for o in answer["matmul_range_other"]} <= {"elementwise", "copy_cast", "reduction"}
    # FLOPs: 5 per score for the softmax, 2·d_head per matmul
    assert (answer["d_head"], answer["softmax_flops_per_score"], answer["matmul_flops_per_score"]) == (64, 5, 256)
    assert answer["flops_ratio"] == 5 / 256
    # 12 layers, 60 softmax kernels per pass: 5 per attention call, named by kernel_label
    assert answer["attention_calls_per_pass"] == 12 and answer["softmax_source"] == "ranges"
    assert sum(k["calls_per_pass"] for k in answer["softmax_kernels"]) == 60
    assert all(k["label"] == kernel_label(k["kernel"]) for k in answer["softmax_kernels"])
    assert "5 kernels per attention call" in answer["answer"] and "4 × 64 = 256" in answer["answer"]
    assert f"{answer['runtime_ratio']:.2f}× their time" in answer["answer"]


def test_mfu_is_model_flops_over_gpu_span_against_the_h200_fp32_peak(train_summary):
    forward = train_summary["phases"]["forward"]
    flops = phase_flops(train_summary["config"])["forward"]
    assert forward["model_flops_per_pass"] == flops
    achieved = flops / (forward["gpu_span_ms_per_pass"] / 1e3)
    assert forward["achieved_tflop_per_s"] == pytest.approx(achieved / 1e12)
    assert forward["mfu"] == pytest.approx(achieved / 67e12)
    assert train_summary["efficiency"]["precision"] == "fp32"
    assert train_summary["efficiency"]["precision_source"] == "GEMM kernels"
    assert set(train_summary["efficiency"]["gemm_precision_mix"]) == {"fp32", "unknown"}
    assert "launch-bound" in train_summary["efficiency"]["answer"]


def test_an_fp32_run_with_tf32_gemms_is_held_to_the_tf32_peak(train_summary):
    """The config says fp32 without TF32; kernels named TF32 set the peak all the same."""
    phases, config = train_summary["phases"], train_summary["config"]
    assert not config.get("allow_tf32")
    tf32 = efficiency.gpu_usage(config, "NVIDIA H200", {"tf32": 0.8, "unknown": 0.2})
    achieved = phases["forward"]["achieved_tflop_per_s"]
    assert (tf32.peak.precision, tf32.peak.flops_per_s / 1e12) == ("tf32", 494.5)
    assert efficiency.phase_usage(phases["forward"], "forward", tf32)["mfu"] == pytest.approx(achieved / 494.5)
    record = {**train_summary["efficiency"], "precision": "tf32", "peak_tflop_per_s": 494.5,
              "precision_source": "GEMM kernels", "gemm_precision_mix": {"tf32": 0.8, "unknown": 0.2}}
    sentence = efficiency_sentence(train_summary | {"efficiency": record})
    assert "tf32 peak (the precision of 80.0% of its GEMM kernels' time)" in sentence
    from_config = efficiency.gpu_usage(config, "NVIDIA H200", {"unknown": 1.0})
    assert (from_config.kernel_precision, from_config.peak.precision) == (None, "fp32")


# ---------------------------------------------------------------- traces that cannot answer


def test_forward_only_trace_says_what_it_cannot_answer(fixture_trace):
    summary = _shown_summary(fixture_trace(FORWARD))
    questions = summary["questions"]
    assert list(summary["phases"]) == ["forward"]
    assert questions["b"]["same_kernel"] is None and questions["b"]["calls_per_forward_pass"] == 84
    assert "no measured backward pass" in questions["b"]["answer"]
    assert questions["d"]["gemm_share_train_step"] is None
    assert "no measured backward pass or optimizer step" in questions["d"]["answer"]
    assert round(questions["a"]["python_forward_ms"], 2) == 20.89


def test_trace_without_attention_ranges_cannot_answer_e(fixture_trace):
    summary = _shown_summary(fixture_trace("attention_bench.sqlite"))
    answer = summary["questions"]["e"]
    assert answer["softmax_ms_per_pass"] is None and answer["runtime_ratio"] is None
    assert "`computing softmax`" in answer["answer"] and "cannot" in answer["answer"]
    assert any("timings.json has no per-phase timings" in note for note in summary["notes"])
    assert summary["questions"]["a"]["python_forward_ms"] is None


def test_trace_without_phase_ranges_answers_nothing_but_the_overall_mix(external_trace):
    summary = _shown_summary(external_trace("mock.sqlite"))
    assert summary["phases"] == {} and summary["measured_passes"] == 0
    for question in ("a", "b", "c", "d", "e"):
        assert "cannot" in summary["questions"][question]["answer"]
    assert summary["questions"]["a"]["nsys_forward_ms"] is None
    assert summary["overall"]["kernels_per_pass"] == 2
    assert "no measured `forward` range" in summary["questions"]["b"]["answer"]


# ---------------------------------------------------------------- answers follow the numbers


def test_answers_change_when_the_numbers_change(train_inputs, train_summary):
    phases = train_summary["phases"]

    def sentence_a(run: RunRecord) -> str:
        return nsys_a.write_trace(nsys_a.QUESTION.per_trace(replace(train_inputs, run=run), phases), train_summary)

    slower = sentence_a(replace(train_inputs.run, python_ms={"forward": 50.0}))
    assert "50.00 ms" in slower and slower != train_summary["questions"]["a"]["answer"]
    assert "longer" not in slower and "shorter" in slower
    assert "nothing to compare" in sentence_a(replace(train_inputs.run, python_ms={}))
    without_config = nsys_e.QUESTION.per_trace(replace(train_inputs, run=RunRecord()), phases)
    assert without_config["flops_ratio"] is None
    assert "FLOPs ratio is unknown" in nsys_e.write_trace(without_config, train_summary)
    unknown_gpu = replace(train_inputs, gpu_name="Some Future GPU")
    usage = efficiency.trace_usage(unknown_gpu)
    forward = efficiency.phase_usage(phases["forward"], "forward", usage)
    assert forward["mfu"] is None and forward["achieved_tflop_per_s"] is not None
    shown = train_summary | {"gpu": "Some Future GPU", "efficiency": efficiency.efficiency_record(unknown_gpu)}
    assert "No fp32 peak is known for Some Future GPU" in efficiency_sentence(shown)


def test_a_phase_of_several_names_is_named_by_all_of_them(train_inputs, train_summary):
    """A step that trains two models has two forward names: (a) names both, not the first alone."""
    structure = train_summary["structure"] | {"phase_names": {"forward": ["D_forward", "G_forward"]}}
    answer = nsys_a.write_trace(train_summary["questions"]["a"], train_summary | {"structure": structure})
    assert "measured `D_forward`/`G_forward` ranges" in answer


def test_questions_read_only_measured_passes(train_inputs, train_summary):
    # Relabel the warm-up steps as measured: the per-pass figures must move (warm-up 0 is slow).
    all_steps = replace(
        train_inputs,
        ops=train_inputs.ops.assign(measured=True),
        measured_passes={p: 5 for p in train_inputs.measured_passes},
    )
    phases = train_summary["phases"]
    for question, figure in ((nsys_b, "top_forward_ms_per_pass"), (nsys_c, "non_gemm_ms_per_pass"),
                             (nsys_d, "gemm_share_forward")):
        assert (question.QUESTION.per_trace(all_steps, phases)[figure]
                != question.QUESTION.per_trace(train_inputs, phases)[figure]), question.QUESTION.id


# ---------------------------------------------------------------- building blocks


@pytest.mark.parametrize("seed", range(10))
def test_busy_time_per_group_matches_a_unit_grid(seed):
    """Random intervals in random groups, in start order and shuffled: the union's length is the
    number of unit cells some interval of the group covers."""
    rng = np.random.default_rng(seed)
    count, groups = int(rng.integers(1, 60)), int(rng.integers(1, 6))
    starts = np.sort(rng.integers(0, 200, size=count))
    ends = starts + rng.integers(0, 30, size=count)
    group = rng.integers(0, groups, size=count)
    covered = np.zeros((groups, 240), dtype=bool)
    for g, start, end in zip(group, starts, ends):
        covered[g, start:end] = True
    expected = covered.sum(axis=1).tolist()
    assert union_length_per_group(group, starts, ends, groups).tolist() == expected
    shuffled = rng.permutation(count)
    assert union_length_per_group(group[shuffled], starts[shuffled], ends[shuffled], groups).tolist() == expected


def test_kernel_totals_rank_by_time_then_name_and_skip_unnamed_rows():
    kernels = pd.DataFrame({
        "demangled_name": pd.Categorical(["b", "a", "c", None, "b", "a"]),
        "category": pd.Categorical(["gemm", "softmax", "gemm", "gemm", "gemm", "softmax"]),
        "tensor_core": [True, False, False, True, True, False],
        "dur_ns": [10, 15, 30, 99, 20, 15],
    })
    totals = kernel_totals(kernels, 2)
    assert totals["kernel"].tolist() == ["a", "b", "c"]  # a and b tie at 30 ns: by name
    assert totals["calls"].tolist() == [2, 2, 1]
    assert totals["total_ns"].tolist() == [30, 30, 30]
    assert totals["ms_per_pass"].tolist() == [15e-6, 15e-6, 15e-6]
    assert totals["share"].tolist() == pytest.approx([1 / 3] * 3)
    assert totals["category"].astype(str).tolist() == ["softmax", "gemm", "gemm"]
    assert totals["tensor_core"].tolist() == [False, True, False]
    assert kernel_totals(kernels.iloc[:0], 1).empty


def test_op_classes_name_kernels_by_rule_and_memory_operations_by_kind():
    ops = pd.DataFrame({
        "op_kind": pd.Categorical(["kernel", "memcpy", "kernel", "memset", "kernel"]),
        "demangled_name": pd.Categorical(["ampere_bf16_s16816gemm_128x64", "[CUDA memcpy]", "softmax_warp_forward",
                                          "[CUDA memset]", None]),
    })
    category, tensor_core = op_classes(ops)
    assert list(category) == ["gemm", "memcpy", "softmax", "memset", "other"]
    assert list(category.categories) == sorted(set(category))
    assert tensor_core.tolist() == [True, False, False, False, False]


def test_timeline_bars_merge_close_ops_of_one_stream_and_category():
    ops = pd.DataFrame({
        "stream_id": [7, 7, 7, 7, 9],
        "category": ["gemm", "gemm", "softmax", "gemm", "gemm"],
        "start_ns": [0, 12, 20, 200, 5],
        "end_ns": [10, 15, 30, 210, 8],
    })
    bars = merged_bars(ops.iloc[::-1], resolution_ns=5)  # order of the rows does not matter
    assert bars.values.tolist() == [[7, "gemm", 0, 15], [7, "softmax", 20, 30], [7, "gemm", 200, 210],
                                     [9, "gemm", 5, 8]]
    slotted = slotted_bars(bars, slot_ns=100)  # one bar per stream, slot and category
    assert slotted.values.tolist() == [[7, "gemm", 0, 15], [7, "softmax", 20, 30], [7, "gemm", 200, 210],
                                       [9, "gemm", 5, 8]]
    assert slotted_bars(bars, slot_ns=1000).values.tolist() == [[7, "gemm", 0, 210], [7, "softmax", 20, 30],
                                                               [9, "gemm", 5, 8]]


def test_inputs_compute_shared_totals_once(train_inputs):
    forward = train_inputs.kernel_totals(("forward",), train_inputs.passes("forward"))
    assert train_inputs.kernel_totals(("forward",), train_inputs.passes("forward")) is forward
    assert train_inputs.kernel_groups() is train_inputs.kernel_groups()  # kept; a phase's rows are selected per call
    measured = train_inputs.measured_kernels()
    assert list(measured.columns) == list(MEASURED_COLUMNS)
    in_forward = train_inputs.measured_kernels(("forward",))
    assert len(in_forward) == (measured["phase"] == "forward").sum() > 0 and (in_forward["phase"] == "forward").all()
    pd.testing.assert_frame_equal(forward, kernel_totals(train_inputs.measured_kernels(("forward",)),
                                                         train_inputs.passes("forward")))


def test_phase_summaries_survive_a_phase_with_no_operations(train_inputs):
    no_optimizer_ops = replace(train_inputs, ops=train_inputs.ops[train_inputs.ops["phase"] != "optimizer_step"])
    optimizer = phase_summaries(no_optimizer_ops)["optimizer_step"]
    assert optimizer["kernels_per_pass"] == 0 and optimizer["gpu_span_ms_per_pass"] == 0
    assert optimizer["cpu_span_ms_per_pass"] > 15


def test_sentences_and_tables_name_kernels_by_their_kernel_names_label():
    name = ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<float, float, float, "
            "at::native::binary_internal::MulFunctor<float>>, std::array<char *, (unsigned long)3>>(int, T2, T3)")
    assert text.kernel_label(name) == f"`{kernel_label(name)}`"
    assert text.kernel_cell(name) == kernel_label(name) == "elementwise MulFunctor<float> (vectorized 4)"


def test_run_record_prefers_the_runners_marks(tmp_path):
    config = {"event": "config", "size": "tiny", "mode": "train", "d_model": 64}
    steps = [{"event": "step_timing", "step": i, "phases_ms": {"forward": f, "backward": 2 * f}} for i, f in enumerate((1.0, 3.0))]
    marks = pd.DataFrame(
        {
            "name": [json.dumps(config), "not json", *map(json.dumps, steps), json.dumps({"event": "config"})],
            "domain": ["cs336_profile"] * 5,
            "time_ns": [1, 2, 3, 4, 5],
        }
    )
    trace_path = tmp_path / "run.sqlite.xz"
    timings_json_path(trace_path).write_text(json.dumps({"forward": 99.0, "size": "small"}))
    record = read_run_record(marks, trace_path)
    assert record.config == {"handout": "2025", "size": "tiny", "mode": "train", "d_model": 64}  # 2025: not said
    assert record.python_ms == {"forward": 2.0, "backward": 4.0}
    assert (record.config_source, record.python_ms_source) == ("marks", "marks")
    assert len(record.notes) == 1 and "not a JSON object" in record.notes[0]


def test_run_record_falls_back_to_timings_json_with_model_shapes(tmp_path):
    trace_path = tmp_path / "run.sqlite"
    assert timings_json_path(tmp_path / "run.sqlite.xz") == timings_json_path(trace_path) == tmp_path / "run.timings.json"
    timings_json_path(trace_path).write_text(json.dumps({"forward": 5.5, "step": 9.0, "size": "small", "ctx": 256, "batch": 4}))
    record = read_run_record(pd.DataFrame(columns=["name", "domain", "time_ns"]), trace_path)
    assert record.python_ms == {"forward": 5.5, "step": 9.0}
    assert record.config["context_length"] == 256 and record.config["d_model"] == 768 and record.config["num_layers"] == 12
    assert read_run_record(pd.DataFrame(columns=["name", "domain", "time_ns"]), tmp_path / "other.sqlite") == RunRecord()


# ---------------------------------------------------------------- diff


def test_diff_of_external_before_and_after_traces(external_trace):
    before = _shown_summary(external_trace("mfu_2gpu_before.sqlite"))
    after = _shown_summary(external_trace("mfu_2gpu_after.sqlite"))
    diff = diff_summaries(before, after)
    categories = {r["category"]: r for r in diff["categories"]}
    for category, row in categories.items():
        assert row["delta_ms_per_pass"] == pytest.approx(
            after["overall"]["by_category_ms_per_pass"].get(category, 0) - before["overall"]["by_category_ms_per_pass"].get(category, 0)
        )
    # per forward pass (16 calls a rank before, 15 after), not per capture: the work of a pass is
    # the same (4 flash attentions and 4 send/receives over the two ranks); the send/receives slowed
    flash = next(r for r in diff["kernels"] if r["kernel"].startswith("void flash::flash_fwd_kernel"))
    assert flash["a_calls_per_pass"] == flash["b_calls_per_pass"] == 4
    assert diff["categories"][0]["category"] == "communication"
    assert diff["kernels"][0]["kernel"].startswith("ncclDevKernel_SendRecv")
    assert "4 → 4 times per measured step" in diff["why"] and "so no measured difference" in diff["why"]


def test_diff_of_a_summary_with_itself_reports_no_change(train_summary):
    diff = diff_summaries(train_summary, train_summary)
    assert all(r["delta_ms_per_pass"] == 0 for r in diff["categories"] + diff["kernels"] + diff["phases"])
    assert diff["config_changes"] == []
    assert "largest change" not in diff["why"] and "+0.0%" in diff["why"]


def test_diff_judges_speed_on_step_time_not_kernel_time():
    """On the H200 examples bf16 autocast cuts kernel time but slows the launch-bound small model's
    step; torch.compile speeds the step up. The diff must say which, from the step time."""
    from analysis import analyze_trace
    from analysis.compare.diff import diff_summaries
    from tests.conftest import REPO

    traces = REPO / "nsys_runs" / "traces"
    fp32, bf16, compiled = (analyze_trace(traces / f"small_ctx128_train_{name}.sqlite.xz")
                            for name in ("fp32", "bf16", "fp32_compiled"))
    slower = diff_summaries(fp32, bf16)
    assert slower["overall"]["b_kernel_ms_per_pass"] < slower["overall"]["a_kernel_ms_per_pass"]
    assert slower["overall"]["b_step_ms_per_pass"] > slower["overall"]["a_step_ms_per_pass"]
    assert slower["overall"]["faster"] is False
    assert "GPU waits for launches" in slower["why"]
    faster = diff_summaries(fp32, compiled)
    assert faster["overall"]["faster"] is True and "GPU waits" not in faster["why"]


def test_timings_json_of_an_nsys_report_drops_its_suffix(tmp_path):
    assert timings_json_path(tmp_path / "run.nsys-rep") == tmp_path / "run.timings.json"


def test_ranges_of_different_shapes_are_grouped_and_kept_out_of_model_answers(fixture_trace):
    """The attention benchmark has no step ranges: 24 `forward` ranges, 4 in each of 6 (d, seq)
    ranges `attn d=.. s=.. iter=i`, the very first one cold."""
    summary = _shown_summary(fixture_trace("attention_bench.sqlite"))
    shapes = summary["phase_shapes"]["forward"]
    assert [s["group"] for s in shapes] == ["attn d=16 s=256", "attn d=16 s=1024", "attn d=16 s=4096",
                                           "attn d=64 s=256", "attn d=64 s=1024", "attn d=64 s=4096"]
    assert [s["passes"] for s in shapes] == [4] * 6
    assert round(shapes[0]["first_cpu_span_ms"], 3) == 226.738  # the cold first range
    assert round(shapes[2]["kernel_ms_per_pass"], 3) == 2.622
    answer = summary["questions"]["a"]
    assert answer["nsys_forward_ms"] is None  # no single forward pass to time
    assert "`attn d=16 s=256` 57.08 ms over 4 ranges" in answer["answer"]
    assert "the first of them 226.74 ms against 0.53 ms for the rest" in answer["answer"]
    assert all("run 6 different shapes" in record["answer"] for record in summary["questions"].values())


def test_diff_rows_are_kernels_by_demangled_name_and_their_labels_stay_distinct(fixture_trace, train_summary):
    forward = _shown_summary(fixture_trace(FORWARD))
    diff = diff_summaries(train_summary, forward)
    rows = diff["kernels"]
    assert len({row["kernel"] for row in rows}) == len(rows)
    assert len({text.kernel_cell(row["kernel"]) for row in rows}) == len(rows)  # no two rows read alike
    calls_a = {k["kernel"]: k["calls_per_pass"] for k in train_summary["overall"]["top_kernels"]}
    for row in rows:  # a row's A calls are A's calls of that very kernel, 0 only when A never ran it
        assert row["a_calls_per_pass"] == calls_a.get(row["kernel"], 0)
