"""The nsys questions across traces: what each cross-trace answer computes from the per-trace
records (hand-made summaries, so every figure is known) and the results files beside them."""
from __future__ import annotations

import pytest

from analysis.core.runs import run_label
from analysis.questions import nsys_a, nsys_b, nsys_c, nsys_d, nsys_e
from analysis.questions.question import Evidence
from analysis.questions.shared.results_files import ResultsSet, read_results_dir
from cs336_profile.results import write_results


def summary(size, ctx, mode="forward", dtype="fp32", questions=None, phases=None, **config):
    return {"trace": f"{size}_ctx{ctx}_{mode}_{dtype}.sqlite", "phases": phases or {},
            "config": {"size": size, "context_length": ctx, "mode": mode, "dtype": dtype, **config},
            "questions": questions or {}}


def forward_phase(kernel_ms, span_ms):
    return {"forward": {"kernel_ms_per_pass": kernel_ms, "gpu_span_ms_per_pass": span_ms,
                        "idle_ms_per_pass": span_ms - kernel_ms}}


def record_a(nsys_ms, python_ms):
    return {"a": {"nsys_forward_ms": nsys_ms, "nsys_forward_gpu_ms": nsys_ms - 0.1, "python_forward_ms": python_ms,
                  "nsys_to_python_ratio": nsys_ms / python_ms, "answer": "one trace"}}


@pytest.fixture
def results(tmp_path):
    bench = [{"size": size, "context_length": 256, "batch_size": 4, "mode": "forward-backward", "dtype": "fp32",
              "compile": False, "attention": "naive", "device": "cuda", "warmup_steps": 5, "measured_steps": 10,
              "status": "ok", "forward_ms_mean": ms} for size, ms in (("xl", 124.0), ("xl", 125.0), ("small", 20.0))]
    write_results(tmp_path, "bench", bench, config={}, environment={}, name="bench_fp32")
    overhead = {"size": "small", "context_length": 128, "mode": "train", "dtype": "fp32", "compile": False}
    write_results(tmp_path, "overhead", [overhead | {"plain_step_ms_median": 70.0, "plain_forward_ms_median": 20.0}],
                  config={}, environment={}, name="overhead")
    write_results(tmp_path, "overhead", [overhead | {"plain_step_ms_median": 105.0, "plain_forward_ms_median": 28.0}],
                  config={}, environment={}, name="overhead_nsys")
    return read_results_dir(tmp_path)


def test_nsys_a_sets_the_traced_forward_against_the_unprofiled_benchmark_and_the_overhead(results):
    summaries = [summary("xl", 256, questions=record_a(145.0, 144.9), phases=forward_phase(119.0, 144.0)),
                 summary("small", 256, questions=record_a(17.5, 17.49), phases=forward_phase(9.0, 17.4)),
                 summary("small", 128, questions=record_a(20.0, 20.0))]
    record = nsys_a.QUESTION.answer(Evidence(summaries, results))
    against = record.tables[nsys_a.BENCH_TITLE].set_index("trace")
    assert list(against.index) == ["small ctx256 forward fp32", "xl ctx256 forward fp32"]  # small ctx128: no bench
    xl = against.loc["xl ctx256 forward fp32"]
    assert (xl["bench_forward_ms_min"], xl["bench_forward_ms_max"], xl["bench_runs"]) == (124.0, 125.0, 2)
    assert xl["nsys_over_bench_low_ratio"] == 145.0 / 125.0
    assert (xl["trace_mode"], xl["bench_mode"]) == ("forward", "forward-backward")
    text = record.full_answer
    assert "Beyond the spread between plain runs of the size: xl ctx256 forward fp32 145.00 against 124.00–125.00 ms " \
           "(1.16×; kernels 119.00 ms, idle 25.00 ms)" in text
    assert "Within it (or no spread known): small ctx256 forward fp32 17.50 against 20.00 ms (0.88×" in text
    assert "small ctx128 train steps 70.00 → 105.00 ms (+50.0%), forward 20.00 → 28.00 ms (+40.0%)" in text
    assert record.answer.startswith("nsys's `forward` range and the Python timer time the same synchronized span, so "
                                    "they match (nsys/Python 1.000–1.001, 3 traces)")
    # a small run alone: no spread between plain runs to weigh the profiler's +40% against
    assert "goes 20.00 → 28.00 ms under nsys (+40.0%), with no repeated plain runs to weigh it against" in record.answer
    assert "It exceeds that spread most: xl ctx256 forward fp32 145.00 against 125.00 ms unprofiled (1.16×)" in text


@pytest.mark.parametrize("untimed, said", [(1, "1 trace carries no Python timings"), (2, "2 traces carry no Python timings")])
def test_nsys_a_says_how_many_traces_lack_python_timings(untimed, said):
    timed = [summary("xl", 256, questions=record_a(145.0, 144.9))]
    missing = [summary("small", 128 * (i + 1), questions={"a": {"nsys_forward_ms": 20.0, "nsys_forward_gpu_ms": 19.9,
                                                                  "python_forward_ms": None, "nsys_to_python_ratio": None,
                                                                  "answer": "one trace"}}) for i in range(untimed)]
    assert said in nsys_a.QUESTION.answer(Evidence(timed + missing, ResultsSet())).full_answer


def test_nsys_e_compares_softmax_with_gemms_per_dtype_and_pairs_a_compiled_trace():
    def record_e(softmax_ms, gemm_ms, range_ms, kernels=60.0, source="ranges"):
        return {"e": {"softmax_ms_per_pass": softmax_ms, "matmul_gemm_ms_per_pass": gemm_ms,
                      "matmul_range_ms_per_pass": range_ms, "softmax_kernels_per_pass": kernels,
                      "softmax_source": source, "matmul_gemm_kernels_per_pass": 24.0 if gemm_ms else None,
                      "matmul_range_kernels_per_pass": 72.0 if gemm_ms else None,
                      "runtime_ratio": softmax_ms / gemm_ms if gemm_ms else None,
                      "runtime_ratio_pass_min": softmax_ms / gemm_ms * 0.99 if gemm_ms else None,
                      "runtime_ratio_pass_max": softmax_ms / gemm_ms * 1.01 if gemm_ms else None,
                      "range_runtime_ratio": softmax_ms / range_ms if range_ms else None,
                      "flops_ratio": 5 / 256, "answer": "one trace"}}
    summaries = [summary("small", 128, "train", questions=record_e(0.22, 0.176, 0.286)),
                 summary("small", 1024, "train", questions=record_e(6.8, 4.4, 7.6)),
                 summary("small", 128, "train", "bf16", questions=record_e(1.5, 0.25, 1.0)),
                 summary("small", 128, "train", compile=True, questions=record_e(0.044, None, None, 12.0, "fused kernels"))]
    record = nsys_e.QUESTION.answer(Evidence(summaries, ResultsSet()))
    table = next(iter(record.tables.values()))
    by_trace = table.set_index("trace")
    assert by_trace["runtime_ratio"].round(3).to_dict() == {
        "small ctx128 train bf16": 6.0, "small ctx128 train fp32": 1.25, "small ctx1024 train fp32": 1.545}
    assert by_trace["per_flop_slowdown_ratio"].round(1).to_dict() == {
        "small ctx128 train bf16": 307.2, "small ctx128 train fp32": 64.0, "small ctx1024 train fp32": 79.1}
    text = record.full_answer
    assert "Among fp32 eager runs (2 traces) the softmax takes 1.25–1.55× the time of the GEMMs" in text
    assert "(0.77–0.89× the whole matmul ranges" in text
    assert "Among bf16 runs (1 trace) the softmax takes 6.00×" in text and "per FLOP it is 307× slower" in text
    assert "small train fp32 eager 1.25× at 128 → 1.55× at 1024" in text
    assert "Its time follows memory traffic" not in text  # no attention calls per pass in these records
    pairs = record.tables["Compiled against eager: the softmax per forward pass"]
    assert pairs["eager_over_compiled_ratio"].round(2).tolist() == [5.0]
    assert "runs its softmax as 12 fused kernels per forward pass in 44 µs, against 60 kernels and 220 µs eager: " \
           "5.0× less" in text


def test_run_labels_keep_the_variants_that_tell_two_runs_apart():
    plain = summary("small", 128, "train")
    assert run_label(plain) == "small ctx128 train fp32"
    assert run_label(summary("small", 128, "train", emit_nvtx=True)) == "small ctx128 train fp32 emit_nvtx"
    assert run_label(summary("small", 128, "train", compile=True, attention="flash")) == \
        "small ctx128 train fp32 compiled flash"
    assert run_label(summary("xl", 128, "train", handout="2025")) == "xl ctx128 train fp32"
    assert run_label(summary("xl", 128, "train", handout="2026")) == "xl ctx128 train fp32 handout 2026"


def test_a_trace_whose_forward_ranges_run_several_shapes_stays_out_of_the_answers_across_traces(results):
    mixed = summary("attention", 0, questions=record_a(10.88, 10.88))
    mixed["measured_passes_by_phase"] = {"forward": 24}
    mixed["phase_shapes"] = {"forward": [{"group": f"attn s={s}"} for s in range(6)]}
    plain = summary("xl", 256, questions=record_a(145.0, 144.9))
    record = nsys_a.QUESTION.answer(Evidence([plain, mixed], results))
    assert record.tables["Forward pass: nsys and the Python timer"]["trace"].tolist() == ["xl ctx256 forward fp32"]
    assert "10.88" not in record.full_answer
    assert "Left out: attention ctx0 forward fp32 (its 24 `forward` ranges run 6 different shapes" in record.full_answer


def test_nsys_b_answers_fp32_eager_bf16_and_compiled_runs_apart():
    def record_b(category, precision, calls, per_layer, share):
        return {"b": {"top_forward_kernel": f"kernel_{category}", "top_forward_category": category,
                      "top_forward_precision": precision, "calls_per_forward_pass": calls, "calls_per_layer": per_layer,
                      "calls_outside_layers": 1, "top_forward_ms_per_pass": 1.0, "top_forward_share": share,
                      "top_forward_backward_kernel": None, "top_forward_backward_share": None, "same_kernel": None,
                      "answer": "one trace"}}
    summaries = [summary("small", 128, questions=record_b("gemm", "fp32", 73.0, 6, 0.527)),
                 summary("xl", 128, questions=record_b("gemm", "fp32", 145.0, 3, 0.481)),
                 summary("small", 128, dtype="bf16", questions=record_b("copy_cast", None, 182.0, 15, 0.171)),
                 summary("small", 128, compile=True, questions=record_b("gemm", "fp32", 73.0, 6, 0.662))]
    record = nsys_b.QUESTION.answer(Evidence(summaries, ResultsSet()))
    table = next(iter(record.tables.values()))
    assert table["group"].tolist() == ["fp32 eager", "fp32 eager", "bf16", "compiled"]
    text = record.full_answer
    assert ("Among fp32 eager runs (2 traces), in all 2 the leading forward kernel is a gemm kernel computing in fp32 on "
            "CUDA cores (FFMA, no TF32); it takes 48.1–52.7% of forward kernel time over 73–145 calls per pass "
            "(3–6 per layer).") in text
    assert "Among bf16 runs (1 trace), in it the leading forward kernel is a copy_cast kernel" in text
    assert "Among compiled runs (1 trace)" in text and "66.2%" in text


def test_nsys_b_gives_the_figures_of_the_traces_whose_leader_is_of_the_leading_kind():
    """Two traces led by a gemm, one by a collective (tensor parallelism) and one by an elementwise
    kernel in one group: the share and calls are the gemm traces', and the others are named with
    their own shares."""
    def record_b(category, calls, share):
        return {"b": {"top_forward_kernel": f"kernel_{category}", "top_forward_category": category,
                      "top_forward_precision": "fp32" if category == "gemm" else None, "calls_per_forward_pass": calls,
                      "calls_per_layer": None, "calls_outside_layers": None, "top_forward_ms_per_pass": 1.0,
                      "top_forward_share": share, "top_forward_backward_kernel": None,
                      "top_forward_backward_share": None, "same_kernel": None, "answer": "one trace"}}
    summaries = [summary("small", 128, questions=record_b("gemm", 1.0, 0.341)),
                 summary("small", 256, questions=record_b("gemm", 1.0, 0.405)),
                 summary("small", 512, questions=record_b("communication", 8.0, 0.735)),
                 summary("small", 1024, questions=record_b("elementwise", 0.375, 0.163))]
    text = nsys_b.QUESTION.answer(Evidence(summaries, ResultsSet())).full_answer
    assert ("in 2 of 4 the leading forward kernel is a gemm kernel computing in fp32 on CUDA cores (FFMA, no TF32); it "
            "takes 34.1–40.5% of forward kernel time over 1 call per pass; in the other 2 it is a communication kernel "
            "(73.5%) or an elementwise kernel (16.3%).") in text


def test_nsys_c_gives_the_non_matmul_share_per_group_and_its_trend_with_context_length():
    def record_c(share, attention_share, leader):
        regions = [{"region": "softmax", "ms_per_pass": 1.0, "share": attention_share * 0.75},
                   {"region": "attention scores", "ms_per_pass": 1.0, "share": attention_share * 0.25},
                   {"region": nsys_c.OUTSIDE, "ms_per_pass": 1.0, "share": share - attention_share}]
        return {"c": {"non_gemm_share": share, "attention_non_gemm_share": attention_share, "non_gemm_by_region": regions,
                      "non_gemm_categories_forward": [{"category": "elementwise", "ms_per_pass": 1.0, "share": share}],
                      "top_non_gemm_forward": [{"kernel": leader, "label": leader, "category": "elementwise",
                                                "region": "computing softmax", "region_share": 1.0,
                                                "calls_per_pass": 12.0, "ms_per_pass": 1.0, "share": 0.05}],
                      "answer": "one trace"}}
    summaries = [summary("small", 128, questions=record_c(0.257, 0.064, "mul")),
                 summary("small", 1024, questions=record_c(0.340, 0.250, "div")),
                 summary("small", 128, dtype="bf16", questions=record_c(0.797, 0.171, "cast"))]
    record = nsys_c.QUESTION.answer(Evidence(summaries, ResultsSet()))
    text = record.full_answer
    # the softmax's time is attributed by its NVTX range: 3/4 of the attention part here
    assert text.startswith("Among fp32 eager runs (2 traces) kernels other than matrix multiplications take 25.7–34.0% "
                           "of forward kernel time: the softmax's NVTX range 4.8–18.8%, the scores' scale and mask "
                           "1.6–6.2%, and outside attention (RMSNorm, RoPE, SwiGLU, residual adds, casts: no range "
                           "tells them apart) 9.0–19.3%.")
    table = next(iter(record.tables.values())).set_index("trace")
    assert table.loc["small ctx1024 forward fp32", "softmax_range_share"] == pytest.approx(0.1875)
    assert "Among bf16 runs (1 trace)" in text and "`cast` (1 of 1)" in text
    assert "grows in every series: small forward fp32 eager 25.7% at 128 → 34.0% at 1024 (inside attention 6.4% → " \
           "25.0%)" in text


def test_nsys_d_answers_per_group_with_the_optimizer_steps_share():
    def record_d(forward, forward_backward, step):
        return {"d": {"gemm_share_forward": forward, "gemm_share_forward_backward": forward_backward,
                      "gemm_share_train_step": step, "category_shares": [
                          {"category": "elementwise", "forward_share": 0.1, "train_step_share": 0.2, "change": 0.1}],
                      "answer": "one trace"}}
    phases = {"forward": {"kernel_ms_per_pass": 2.0, "passes": 3}, "backward": {"kernel_ms_per_pass": 5.0, "passes": 3},
              "optimizer_step": {"kernel_ms_per_pass": 3.0, "passes": 3, "by_category_ms_per_pass": {"optimizer": 3.0}}}
    summaries = [summary("small", 128, "train", questions=record_d(0.9, 0.8, 0.6), phases=phases),
                 summary("small", 128, "forward", questions=record_d(0.92, None, None)),
                 summary("small", 128, "train", "bf16", questions=record_d(0.2, 0.2, 0.15), phases=phases)]
    record = nsys_d.QUESTION.answer(Evidence(summaries, ResultsSet()))
    table = next(iter(record.tables.values()))
    assert table.set_index("trace").loc["small ctx128 train fp32", "optimizer_share_train_step"] == 0.3
    text = record.full_answer
    assert text.startswith("Among fp32 eager runs (2 traces) matrix multiplications take 90.0–92.0% of forward kernel "
                           "time, 80.0% of forward + backward and 60.0% of a full training step (1 training trace); "
                           "the optimizer step, which runs no matmul, takes 30.0% of the step's kernel time; the "
                           "category that gains most is elementwise (+10.0 points on average).")
    assert "Among bf16 runs (1 trace) matrix multiplications take 20.0%" in text


def test_nsys_d_weighs_each_phase_by_its_passes_under_gradient_accumulation():
    """Four forward and backward passes a step, one optimizer step: the optimizer's share is of
    the step's whole kernel time, 3 / (4 × 2 + 4 × 5 + 3), not of one pass of each phase."""
    record = {"d": {"gemm_share_forward": 0.5, "gemm_share_forward_backward": 0.5, "gemm_share_train_step": 0.4,
                    "category_shares": [], "answer": "one trace"}}
    phases = {"forward": {"kernel_ms_per_pass": 2.0, "passes": 12}, "backward": {"kernel_ms_per_pass": 5.0, "passes": 12},
              "optimizer_step": {"kernel_ms_per_pass": 3.0, "passes": 3, "by_category_ms_per_pass": {"optimizer": 3.0}}}
    summaries = [summary("small", 128, "train", questions=record, phases=phases), summary("small", 128, questions=record)]
    answer = nsys_d.QUESTION.answer(Evidence(summaries, ResultsSet()))
    table = next(iter(answer.tables.values()))
    assert table.set_index("trace").loc["small ctx128 train fp32", "optimizer_share_train_step"] == pytest.approx(3 / 31)
    assert "the optimizer step, which runs no matmul, takes 9.7% of the step's kernel time" in answer.full_answer


def test_grid_answers_hold_when_no_trace_has_attention_sub_ranges_or_a_backward():
    record_c = {"c": {"non_gemm_share": 0.3, "attention_non_gemm_share": None, "answer": "one trace",
                      "non_gemm_categories_forward": [], "top_non_gemm_forward": []}}
    record_d = {"d": {"gemm_share_forward": 0.7, "gemm_share_forward_backward": None, "gemm_share_train_step": 0.6,
                      "category_shares": [], "answer": "one trace"}}
    summaries = [summary(size, 128, "train", questions={**record_c, **record_d}) for size in ("small", "medium")]
    assert "NVTX range" not in nsys_c.QUESTION.answer(Evidence(summaries, ResultsSet())).full_answer
    assert "forward + backward" not in nsys_d.QUESTION.answer(Evidence(summaries, ResultsSet())).full_answer


def test_nsys_a_sets_a_2026_trace_against_the_2025_run_of_the_same_model():
    later = summary("xl", 128, "train", questions=record_a(404.0, 404.0), phases=forward_phase(84.0, 400.0),
                    handout="2026")
    earlier = summary("2.7B", 128, "train", questions=record_a(89.0, 89.0), phases=forward_phase(83.0, 88.0))
    evidence = Evidence([later], ResultsSet(), other_editions=Evidence([earlier], ResultsSet()), edition="2026")
    record = nsys_a.QUESTION.answer(evidence)
    pair = record.tables[nsys_a.EDITIONS_TITLE].iloc[0]
    assert (pair["earlier_run"], pair["slowdown_ratio"]) == ("2.7B ctx128 train fp32 (2025 trace)", 404.0 / 89.0)
    assert (pair["kernel_ms_per_pass"], pair["earlier_kernel_ms_per_pass"]) == (84.0, 83.0)
    assert "the same model and context run 4.54× slower than with the 2025 options (xl ctx128 train fp32 handout " \
           "2026 404.0 against 89.0 ms, GPU idle 79.0%)" in record.answer
