"""The results-file questions: answers and tables from results files written by the runner's own
writer. Measurements are hand-made where a real run would be GPU-only or noisy, so every figure
in an answer is known exactly; the mixed-precision experiments run for real on the CPU."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis.questions import attention, bench, compile, memory, mixed_precision, norm_precision
from analysis.questions.question import Evidence, Question
from analysis.questions.shared.results_files import ResultsAnswer, Unanswered, read_results_dir
from analysis.report.tables import display_table
from cs336_profile.results import write_results

GIB = 1024**3
ENVIRONMENT = {"device": "cuda", "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_memory_bytes": 80 * GIB}


def bench_row(size, context_length=128, status="ok", dtype="fp32", compile=False, warmup_steps=2, mode="train",
              **measurements) -> dict:
    row = {"size": size, "context_length": context_length, "batch_size": 4, "mode": mode, "dtype": dtype,
           "compile": compile, "attention": "naive", "device": "cuda", "warmup_steps": warmup_steps,
           "measured_steps": 3, "nvtx_annotations": True, "status": status}
    timed = ("forward_ms_mean", "forward_ms_std", "backward_ms_mean", "backward_ms_std", "step_ms_mean", "step_ms_std")
    return row | dict.fromkeys(timed) | measurements


@pytest.fixture
def results_dir(tmp_path):
    def write(experiment: str, rows: list[dict], name: str | None = None):
        write_results(tmp_path, experiment, rows, config={}, environment=ENVIRONMENT, name=name)
        return read_results_dir(tmp_path)
    return write


def test_bench_b_reports_the_largest_spread_and_keeps_oom_rows(results_dir):
    results = results_dir("bench", [
        bench_row("small", forward_ms_mean=10.0, forward_ms_std=0.1, backward_ms_mean=20.0, backward_ms_std=0.5),
        bench_row("medium", forward_ms_mean=30.0, forward_ms_std=0.6, backward_ms_mean=60.0, backward_ms_std=0.6),
        bench_row("xl", status="OOM"),
    ])
    answer = bench.answer_bench_b(Evidence([], results))
    assert answer.numbers["forward_cv_median_share"] == pytest.approx(0.015)
    assert answer.numbers["backward_cv_max_share"] == pytest.approx(0.025)
    assert answer.numbers["steady_sizes"] == ["small", "medium"] and answer.numbers["noisy_sizes"] == []
    assert "context length 128;" in answer.answer and "1.5% of its mean for the forward pass" in answer.answer
    assert "Runs of small and medium stay within 2.5% of their mean" in answer.answer
    assert answer.answer.endswith("1 configuration ran out of memory.")
    shown = display_table("t", answer.tables["Forward and backward time per configuration"])
    assert shown.rows[2][shown.columns.index("forward mean ± std (ms)")] == "OOM"
    assert shown.rows[0][shown.columns.index("forward mean ± std (ms)")] == "10.00 ± 0.10"
    assert answer.inputs == ("bench.json",)


def step_rows(size, warmup, times, config_index=0) -> list[dict]:
    return [{**bench_row(size, warmup_steps=warmup), "config_index": config_index, "step_kind": "measured",
             "step_index": index, "step_ms": ms} for index, ms in enumerate(times)]


def test_bench_b_weighs_the_spread_between_runs(results_dir):
    # small's runs disagree (10 against 15 ms) though each run is steady: one run does not measure it
    for name, small_ms in (("bench_a", 10.0), ("bench_b", 15.0)):
        results_dir("bench", [bench_row("small", forward_ms_mean=small_ms, forward_ms_std=0.1, config_index=0),
                              bench_row("xl", forward_ms_mean=100.0, forward_ms_std=0.2, config_index=1)], name=name)
    results = results_dir("bench", [bench_row("small", forward_ms_mean=12.0, forward_ms_std=0.1, config_index=0)],
                          name="bench_c")
    traces = [traced_forward(size, "fp32", 700, kernel_ms, 4.0, 0.2, 20.0) for size, kernel_ms in (("small", 6.0), ("xl", 19.0))]
    answer = bench.answer_bench_b(Evidence(traces, results))
    assert answer.numbers["noisy_idle_share_min"] == pytest.approx(0.7)
    assert "the GPU idles 70% of the span for small against 5% for xl" in answer.answer
    spread = answer.tables["Spread within and between runs of one configuration"].set_index("size")
    assert spread.loc["small", "forward_between_runs_ratio"] == pytest.approx(1.5)
    assert answer.numbers["noisy_sizes"] == ["small"] and answer.numbers["steady_sizes"] == ["xl"]
    assert "small 10.0–15.0 ms (1.50×)" in answer.answer
    assert "an effect smaller than 1.50× is inside the noise" in answer.answer


def test_bench_c_puts_the_first_step_on_the_first_configuration_of_the_process(results_dir):
    for warmup, small_ms in ((0, 120.0), (1, 100.0), (2, 130.0)):
        results_dir("bench", [bench_row(size, warmup_steps=warmup, step_ms_mean=ms, step_ms_std=1.0)
                              for size, ms in (("small", small_ms), ("2.7B", 500.0))], name=f"bench_warmup{warmup}")
    steps = [*step_rows("small", 0, (300.0, 100.0, 100.0)), *step_rows("small", 1, (101.0, 99.0, 100.0)),
             *step_rows("small", 2, (131.0, 130.0, 129.0)),
             *[row for warmup in (0, 1, 2) for row in step_rows("2.7B", warmup, (505.0, 500.0, 500.0), 1)]]
    answer = bench.answer_bench_c(results_dir("bench_steps", steps))
    first = answer.tables["First measured step against the later ones"]
    assert first.loc[first["warmup_steps"] == 0, "first_over_later_ratio"].tolist() == [3.0, 1.01]
    assert answer.numbers["first_step_size"] == "small" and answer.numbers["first_step_config_index"] == 0
    assert answer.numbers["first_step_ms"] == 300.0 and answer.numbers["others_first_over_later_max"] == 1.01
    assert answer.numbers["later_between_runs_ratio"] == pytest.approx(1.3)
    assert not answer.numbers["later_falls_with_warmup"]
    assert "small (the first configuration of its process) takes 300 ms, 3.0× its later steps" in answer.answer
    assert "The configuration run after it in the same process pays 1.0× on its first step" in answer.answer
    assert "average 100.0, 100.0, 130.0 ms per step (1.30× apart)" in answer.answer
    assert "cannot rank one warm-up count against another" in answer.answer
    assert answer.inputs == ("bench_steps.json", "bench_warmup0.json", "bench_warmup1.json", "bench_warmup2.json")


def test_mp_accum_runs_the_loops_for_real(results_dir):
    experiments = pytest.importorskip("cs336_profile.experiments.mixed_precision")
    results = results_dir("mixed_precision_accumulation", experiments.accumulation_loops("cpu"))
    answer = mixed_precision.answer_mp_accum(results)
    assert answer.answer.startswith("Adding 0.01 a thousand times (exactly 10.0) all in fp32 prints tensor(10.0001) "
                                    "(error 0.000134). A low-precision accumulator drifts: float16 prints "
                                    "tensor(9.9531, dtype=torch.float16) (error 0.0469, 351× the fp32 error)")
    assert ("An fp32 sum of fp16 values prints tensor(10.0021) with or without the explicit upcast: exactly "
            "1000 × 0.01000213623046875, the fp16 rounding of 0.01, so the error is in the addend") in answer.answer
    assert answer.numbers["stall_points"] == {"float16": 32.0, "bfloat16": 4.0}
    assert "float16 would stall only at 32, beyond 10" in answer.answer


def test_mp_a_observes_the_toy_model_dtypes(results_dir):
    experiments = pytest.importorskip("cs336_profile.experiments.mixed_precision")
    torch = pytest.importorskip("torch")
    rows = [r for dtype in (torch.float16, torch.bfloat16) for r in experiments.toy_model_dtypes(dtype, "cpu")]
    answer = mixed_precision.answer_mp_a(results_dir("mixed_precision_toy_model", rows))
    table = answer.tables["dtypes observed in the ToyModel"].set_index("quantity")
    assert list(table.columns) == ["under float16 autocast", "under bfloat16 autocast"]
    assert table.loc["parameters (inside autocast)"].tolist() == ["float32", "float32"]
    assert table.loc["fc1 output"].tolist() == ["float16", "bfloat16"]
    assert table.loc["loss"].tolist() == ["float32", "float32"]
    assert "Under bfloat16 autocast the pattern is the same with bfloat16 in place of float16." in answer.answer
    assert "linear layers (matmuls) are on autocast's low-precision list" in answer.answer
    # a reason is given only where observed (CPU autocast runs layer_norm in the low dtype)
    layer_norm_fp32 = table.loc["LayerNorm output", "under float16 autocast"] == "float32"
    assert ("layer_norm is on autocast's fp32 list" in answer.answer) == layer_norm_fp32


def traced_forward(size, dtype, kernels, kernel_ms, gemm_ms, cast_ms, span_ms) -> dict:
    return {"trace": f"{size}_{dtype}.sqlite",
            "config": {"size": size, "context_length": 128, "mode": "forward", "dtype": dtype, "compile": False},
            "phases": {"forward": {"kernels_per_pass": kernels, "kernel_ms_per_pass": kernel_ms,
                                   "gpu_span_ms_per_pass": span_ms, "idle_ms_per_pass": span_ms - kernel_ms,
                                   "by_category_ms_per_pass": {"gemm": gemm_ms, "copy_cast": cast_ms}}}}


def test_mp_c_pairs_fp32_with_bf16_and_reads_the_trend(results_dir):
    results = results_dir("bench", [
        bench_row("small", forward_ms_mean=10.0, backward_ms_mean=20.0),
        bench_row("small", dtype="bf16", forward_ms_mean=5.0, backward_ms_mean=16.0),
        bench_row("medium", forward_ms_mean=30.0, backward_ms_mean=60.0),
        bench_row("medium", dtype="bf16", forward_ms_mean=12.0, backward_ms_mean=48.0),
    ])
    traces = [traced_forward("small", "fp32", 700, 6.0, 4.0, 0.2, 20.0),
              traced_forward("small", "bf16", 900, 2.0, 0.5, 0.8, 20.0)]
    answer = mixed_precision.answer_mp_c(Evidence(traces, results))
    table = answer.tables["fp32 against bf16 autocast"]
    assert table["forward_speedup"].tolist() == [2.0, 2.5]
    assert answer.numbers["forward_speedup_by_size"] == {"small": 2.0, "medium": 2.5}
    assert "forward small 2.00×, medium 2.50× (growing with model size)" in answer.answer
    assert "backward small 1.25×, medium 1.25× (about flat with size)" in answer.answer
    pairs = answer.tables["Forward pass in the fp32 and bf16 traces"]
    assert pairs["added_kernels_per_pass"].tolist() == [200] and pairs["kernel_time_cut"].tolist() == [3.0]
    assert answer.numbers["bf16_idle_share_max"] == pytest.approx(0.9)
    assert "cuts the forward's kernel time 3.0×" in answer.answer and "200 more kernels per pass" in answer.answer
    assert "The GPU idles 90% of the bf16 forward's span (fp32: 70%)" in answer.answer


def test_mp_c_names_a_slowdown_only_outside_the_spread_between_runs(results_dir):
    # medium's bf16 forward (40 ms) is slower than one fp32 run (30 ms) but faster than another (45 ms)
    results_dir("bench", [bench_row("medium", warmup_steps=1, forward_ms_mean=45.0, backward_ms_mean=60.0, config_index=0),
                          bench_row("xl", warmup_steps=1, forward_ms_mean=100.0, backward_ms_mean=200.0, config_index=1)],
                name="bench_again")
    results = results_dir("bench", [
        bench_row("medium", forward_ms_mean=30.0, backward_ms_mean=60.0, config_index=0),
        bench_row("medium", dtype="bf16", forward_ms_mean=40.0, backward_ms_mean=30.0),
        bench_row("xl", forward_ms_mean=100.0, backward_ms_mean=200.0, config_index=1),
        bench_row("xl", dtype="bf16", forward_ms_mean=125.0, backward_ms_mean=50.0),
    ])
    answer = mixed_precision.answer_mp_c(Evidence([], results))
    table = answer.tables["fp32 against bf16 autocast"].set_index("size")
    assert table.loc["medium", "forward_speedup_low"] == pytest.approx(0.75)
    assert table.loc["medium", "forward_speedup_high"] == pytest.approx(1.125)
    assert "medium 0.75× (fp32 runs give 0.75–1.12×) could lie on either side of 1" in answer.answer
    assert answer.answer.endswith("bf16 is slower than fp32 for xl forward at context 128 (0.80×).")


def memory_rows() -> list[dict]:
    rows = []
    for dtype, scale in (("fp32", 1.0), ("bf16", 1.05)):
        for context, forward_gib, train_gib in ((128, 13.0, 52.0), (256, 14.0, None)):
            rows.append(bench_row("2.7B", context, mode="forward", dtype=dtype, peak_memory_bytes=forward_gib * scale * GIB))
            status = "OOM" if train_gib is None else "ok"
            peak = None if train_gib is None else train_gib * scale * GIB
            rows.append(bench_row("2.7B", context, mode="train", dtype=dtype, status=status, peak_memory_bytes=peak))
    return rows


def test_mem_b_and_c_peaks_per_context_with_oom(results_dir):
    results = results_dir("memory", memory_rows())
    fp32 = memory.answer_mem_b(results)
    assert fp32.answer == ("2.7B in fp32: forward peaks at 13,312 MiB at context 128 to 14,336 MiB at 256; train peaks "
                           "at 53,248 MiB at context 128 (out of memory at 256). A training step needs 4.0× the forward "
                           "pass's peak at the same context length.")
    bf16 = memory.answer_mem_c(results)
    compared = bf16.tables["bf16 against fp32"]
    assert compared["bf16_over_fp32_ratio"].dropna().round(6).tolist() == [1.05, 1.05, 1.05]
    assert "Against fp32 the peak is 1.05× as large: mixed precision barely changes peak memory" in bf16.answer
    assert display_table("t", compared).rows[3][3] == "OOM"


def accounted_rows(parameters=1024**3 // 4) -> list[dict]:
    """A model whose fp32 copy is 1 GiB: train forward peaks = 3 GiB of weights and moments plus
    activations (1 GiB fp32, 0.5 GiB bf16, plus the bf16 copies, 0.5 GiB)."""
    rows = []
    for dtype, forward_gib, kept_gib in (("fp32", 1.0, 1.0), ("bf16", 1.5, 1.0)):
        rows.append(bench_row("2.7B", 128, mode="forward", dtype=dtype, parameters=parameters,
                              peak_memory_bytes=forward_gib * GIB, forward_peak_bytes=forward_gib * GIB))
        phases = {"forward_peak_bytes": (3 + kept_gib) * GIB, "backward_peak_bytes": 4.25 * GIB,
                  "optimizer_step_peak_bytes": 4.5 * GIB}
        rows.append(bench_row("2.7B", 128, mode="train", dtype=dtype, parameters=parameters,
                              peak_memory_bytes=4.5 * GIB, **phases))
    return rows


def test_mem_b_and_c_account_for_state_activations_and_copies(results_dir):
    results = results_dir("memory", accounted_rows())
    mem_b = memory.answer_mem_b(results)
    assert mem_b.numbers["activations_bytes"] == {128: GIB} and mem_b.numbers["peak_phase"] == {128: "optimizer_step"}
    accounting = mem_b.tables["What the training step holds, fp32"].iloc[0]
    # 2.7B at context 128, batch 4: 32 layers × 2 × 4·32·128²·4 B = 512 MiB of T² matrices
    assert accounting["attention_t2_bytes"] == 512 * 1024**2
    assert accounting["rest_per_position_bytes"] == (GIB - 512 * 1024**2) / 128
    assert "(3 × 1,024 MiB = 3,072 MiB)" in mem_b.answer and "set by the optimizer step at 128 (4,608 MiB)" in mem_b.answer
    mem_c = memory.answer_mem_c(results)
    assert mem_c.numbers["forward_extra_bytes"] == [0.5 * GIB] and mem_c.numbers["bf16_weight_copies_bytes"] == GIB // 2
    assert mem_c.numbers["activation_ratio"] == {128: 0.5}
    assert "holds 512 MiB more than fp32, about autocast's bf16 copies of the weights" in mem_c.answer


def test_mem_c_judges_each_mode_on_its_own_ratio(results_dir):
    rows = [bench_row("2.7B", 128, mode=mode, dtype=dtype, peak_memory_bytes=gib * GIB)
            for mode, dtype, gib in (("forward", "fp32", 13.0), ("forward", "bf16", 19.5),
                                     ("train", "fp32", 52.0), ("train", "bf16", 51.0))]
    answer = memory.answer_mem_c(results_dir("memory", rows))
    assert "1.50× as large in forward (mixed precision raises peak memory here" in answer.answer
    assert "0.98× as large in train (mixed precision barely changes peak memory" in answer.answer


def test_mem_d_derivation_is_exact(results_dir):
    experiments = pytest.importorskip("cs336_profile.experiments.memory")
    rows = experiments.residual_activation_rows("2.7B", (128, 256, 512), 4)
    answer = memory.answer_mem_d(results_dir("memory_activation", rows))
    assert answer.numbers["activation_bytes"] == [5_242_880, 10_485_760, 20_971_520]
    assert "at context 128, 4 × 128 × 2560 × 4 B = 5,242,880 B = 5.00 MiB (5.24 MB)" in answer.answer
    assert answer.tables["Residual-stream activation, fp32"]["activation_mb"].round(2).tolist() == [5.24, 10.49, 20.97]


def test_mem_a_and_e_from_a_snapshot(results_dir):
    labels = {"context_length": 128, "dtype": "fp32"}
    timeline = [{"snapshot": f"memory_2.7B_ctx128_{mode}_fp32", "mode": mode, **labels, "event_index": index,
                 "time_us": 1000 * index, "allocated_bytes": gib * GIB}
                for mode, values in (("forward", (1, 1.5, 1)), ("train", (4, 3, 4, 4.25, 4.5, 4.5)))
                for index, gib in enumerate(values)]
    results_dir("memory", accounted_rows())
    results = results_dir("memory_timeline", timeline)
    mem_a = memory.answer_mem_a(results)
    assert mem_a.tables["Recorded steps"]["snapshot_file"].tolist() == [
        "snapshots/memory_2.7B_ctx128_forward_fp32.pickle", "snapshots/memory_2.7B_ctx128_train_fp32.pickle"]
    marks = mem_a.tables["Each phase's peak and when the step reaches it"].set_index(["mode", "phase"])
    assert marks.loc[("train", "forward"), "reached_at_ms"] == 2.0  # after the gradients are freed at 1 ms
    assert marks.loc[("train", "backward"), "reached_at_ms"] == 3.0
    assert marks.loc[("train", "optimizer_step"), "reached_at_ms"] == 4.0
    assert mem_a.numbers["peak_phase"] == "optimizer_step" and mem_a.numbers["state_bytes"] == 4 * GIB
    assert "train: 4,096 MiB at the start, lowest 3,072, peak 4,608 MiB at 4 ms of 5 ms" in mem_a.answer
    assert "The step's peak is set by the optimizer step." in mem_a.answer
    assert "--size 2.7B --snapshot-context-length 128" in mem_a.answer
    assert list(mem_a.downloads["Allocated memory over the step"]["time_ms"][:3]) == [0.0, 1.0, 2.0]
    largest = [{"snapshot": "s", "context_length": 128, "size_bytes": size, "count": count, "site": site,
                "stack": f"{site} <- {caller} <- bench.py:99 in _run_step"}
               for size, count, site, caller in (
                   (4 * 128 * 10240 * 4, 96, "model.py:143 in forward", "model.py:158 in forward"),
                   (4 * 128 * 10240 * 4, 32, "model.py:31 in forward", "model.py:142 in forward"),
                   (4 * 32 * 128 * 128 * 4, 64, "model.py:91 in attention", "model.py:129 in forward"))]
    mem_e = memory.answer_mem_e(results_dir("memory_largest_allocations", largest))
    assert mem_e.numbers["largest_bytes"] == 20 * 1024**2 and mem_e.numbers["largest_tensor"].startswith("SwiGLU")
    assert "SwiGLU hidden activation (20.0 MiB × 128" in mem_e.answer and "4 × 128 × 10240 × 4 B" in mem_e.answer
    assert "20.0 MiB at model.py:143 ← model.py:158 (96), model.py:31 ← model.py:142 (32)" in mem_e.answer
    assert "attention scores, softmax pieces and weights (8.0 MiB × 64" in mem_e.answer


def test_mem_a_without_the_peaks_file_leaves_the_size_out(results_dir):
    timeline = [{"snapshot": "memory_2.7B_ctx128_forward_fp32", "mode": "forward", "context_length": 128, "dtype": "fp32",
                 "event_index": index, "time_us": index, "allocated_bytes": gib * GIB} for index, gib in enumerate((1, 2))]
    answer = memory.answer_mem_a(results_dir("memory_timeline", timeline))
    assert answer.answer.startswith("Allocated memory at context 128 (fp32)")
    assert "peak 2,048 MiB" in answer.answer and "--size SIZE" in answer.answer


def attention_rows(peak_per_score=None) -> list[dict]:
    rows = []
    for implementation, saved_per_score in (("eager", 3), ("compiled", 1)):
        for seq_len in (256, 1024, 4096):
            oom = seq_len == 4096 and implementation == "eager"
            before = 1000
            saved = saved_per_score * 8 * seq_len**2 * 4
            peak = None if oom or peak_per_score is None else before + peak_per_score[implementation] * 8 * seq_len**2 * 4
            rows.append({"implementation": implementation, "head_dim": 16, "seq_len": seq_len, "batch_size": 8,
                         "passes": 100, "status": "OOM" if oom else "ok",
                         "forward_ms_mean": None if oom else seq_len / 256 * (2 if implementation == "eager" else 1),
                         "forward_ms_std": None, "backward_ms_mean": None if oom else seq_len / 128,
                         "backward_ms_std": None,
                         "memory_before_forward_bytes": None if oom else before,
                         "memory_before_backward_bytes": None if oom else before + saved, "peak_memory_bytes": peak})
    return rows


def test_attn_a_fits_quadratic_memory_and_accounts_for_the_oom(results_dir):
    answer = attention.answer_attn_a(results_dir("attention", attention_rows()))
    table = answer.tables["Eager attention, batch × seq × d"]
    assert table["score_matrices"].dropna().tolist() == [3.0, 3.0]
    assert answer.numbers["growth_exponent"] == pytest.approx(2.0)
    assert "grows as T^2.00: quadratic" in answer.answer
    assert "The smallest configuration that ran out of memory is d=16, seq=4096." in answer.answer
    assert "keep 3.0 such matrices for backward, so it needs about 3.0 × 0.50 = 1.5 GiB" in answer.answer
    assert "against the GPU's 80 GiB" in answer.answer


def test_attn_a_accounts_for_what_eager_keeps_and_what_sdpa_keeps(results_dir):
    batch, seq, d = 8, 2048, 64
    kept = attention.saved_tensors(batch, seq, d)["size_bytes"].sum()
    score = batch * seq * seq * 4
    rows = [{"implementation": implementation, "head_dim": d, "seq_len": length, "batch_size": batch, "passes": 10,
             "status": "ok", "forward_ms_mean": ms, "forward_ms_std": 0.0, "backward_ms_mean": 2 * ms,
             "backward_ms_std": 0.0, "memory_before_forward_bytes": 0,
             "memory_before_backward_bytes": saved * (length / seq) ** 2, "peak_memory_bytes": peak * (length / seq) ** 2}
            for implementation, saved, peak, ms in (("eager", kept, 6 * score, 4.0), ("sdpa", score, 4 * score, 2.0))
            for length in (seq // 2, seq)]
    answer = attention.answer_attn_a(results_dir("attention", rows))
    numbers = answer.numbers
    assert numbers["saved_measured_bytes"] == numbers["saved_theory_bytes"] == kept
    assert numbers["unneeded_bytes"] == score + seq * seq + batch * seq * 12  # exp, ~mask, max indices, row sums
    assert numbers["peak_score_matrices"] == 6.0 and numbers["sdpa_score_matrices"] == 1.0
    assert numbers["oom_seq_len_estimate"] == pytest.approx(seq * (80 * GIB / (6 * score)) ** 0.5)
    assert "one 8×2048×2048 fp32 matrix is 128 MiB" in answer.answer
    assert "FlashAttention keeps none" in answer.answer
    assert "keeps 128 MiB (1.00 T² matrices), so this backend keeps a T² matrix: it is not FlashAttention" in answer.answer
    kept_table = answer.tables["What eager attention keeps for backward at the largest configuration"]
    assert kept_table.set_index("tensor").loc["weights", "needed_by_backward"]


def test_compile_a_side_by_side(results_dir):
    answer = compile.answer_compile_a(results_dir("attention", attention_rows({"eager": 6, "compiled": 4})))
    table = answer.tables["Eager and compiled attention"]
    assert table["forward_speedup"].dropna().tolist() == [2.0, 2.0]
    assert display_table("t", table).rows[2][2] == "OOM"
    assert answer.numbers["forward_speedup_min"] == 2.0 and answer.numbers["saved_ratio_median"] == pytest.approx(1 / 3, rel=1e-3)
    assert answer.numbers["peak_ratio_at_largest"] == pytest.approx((1000 + 4 * 8 * 1024**2 * 4) / (1000 + 6 * 8 * 1024**2 * 4))
    assert "where eager's forward takes at least 1 ms (T ≥ 256): forward 2.00× faster" in answer.answer
    assert "Out of memory: 1 eager and 0 compiled configurations." in answer.answer
    assert "since the fused kernels save fewer seq × seq intermediates" in answer.answer


def test_compile_a_says_slower_and_same_memory_when_the_numbers_do(results_dir):
    rows = [{**row, "forward_ms_mean": row["forward_ms_mean"] * (4 if row["implementation"] == "compiled" else 1),
             "memory_before_backward_bytes": 1000 + 8 * row["seq_len"] ** 2 * 4}
            for row in attention_rows() if row["status"] == "ok"]
    answer = compile.answer_compile_a(results_dir("attention", rows))
    assert "forward 2.00× slower" in answer.answer
    assert "compiled 1.00× eager (median), about as much" in answer.answer


def test_compile_b_times_forward_and_whole_step(results_dir):
    results = results_dir("compile", [
        bench_row("small", mode="forward", forward_ms_mean=10.0, step_ms_mean=11.0),
        bench_row("small", mode="forward", compile=True, forward_ms_mean=8.0, step_ms_mean=9.0),
        bench_row("small", mode="train", forward_ms_mean=10.0, backward_ms_mean=20.0, optimizer_step_ms_mean=5.0,
                  step_ms_mean=40.0, peak_memory_bytes=4 * GIB),
        bench_row("small", mode="train", compile=True, forward_ms_mean=8.0, backward_ms_mean=10.0,
                  optimizer_step_ms_mean=6.0, step_ms_mean=50.0, peak_memory_bytes=3 * GIB),
    ])
    traces = [{**traced_forward("small", "fp32", kernels, kernel_ms, 4.0, 0.2, 20.0),
               "config": {"size": "small", "context_length": 128, "mode": "forward", "dtype": "fp32",
                          "compile": compiled}} for compiled, kernels, kernel_ms in ((False, 776, 6.0), (True, 288, 4.5))]
    answer = compile.answer_compile_b(Evidence(traces, results))
    assert answer.numbers["traced_kernels_eager"] == 776 and answer.numbers["traced_kernels_compiled"] == 288
    assert "the compiled forward launches 288 kernels per pass against 776 eager" in answer.answer
    assert answer.tables["Whole model, eager against compiled"]["speedup"].tolist() == [1.25, 0.8]
    assert answer.answer.startswith("torch.compile on the whole model (cuda, context 128), speedup over eager: "
                                    "forward 1.25× for small; whole step 0.80× for small.")
    assert answer.numbers["train_backward_speedup"] == {"small": 2.0}
    assert "backward 20.0 → 10.0 ms (2.00×), optimizer step 5.0 → 6.0 ms (0.83×)" in answer.answer
    assert "small train 4,096 → 3,072 MiB" in answer.answer
    # the measured size's eager trace gives the idle share; xl was traced but never compiled
    xl = {**traces[0], "config": {**traces[0]["config"], "size": "xl"}}
    answer = compile.answer_compile_b(Evidence([*traces, xl], results))
    assert "It holds for small only, whose eager forward leaves the GPU idle" in answer.answer
    assert "xl were not compiled, so it does not carry over to them." in answer.answer


def test_compile_b_averages_each_size_over_context_lengths(results_dir):
    results = results_dir("compile", [
        bench_row(size, context, mode="forward", compile=compiled, forward_ms_mean=ms)
        for size, context, eager_ms, compiled_ms in (("small", 128, 10.0, 5.0), ("small", 256, 10.0, 10.0),
                                                     ("medium", 128, 30.0, 20.0), ("medium", 256, 30.0, 30.0))
        for compiled, ms in ((False, eager_ms), (True, compiled_ms))])
    answer = compile.answer_compile_b(Evidence([], results))
    assert answer.answer.startswith("torch.compile on the whole model (cuda, context 128, 256), mean speedup over eager "
                                    "across context lengths: forward 1.50× for small to 1.25× for medium.")


RESULTS_QUESTIONS = [value for module in (bench, mixed_precision, norm_precision, memory, attention, compile)
                     for value in vars(module).values() if isinstance(value, Question)]


@pytest.mark.parametrize("question", RESULTS_QUESTIONS, ids=lambda q: q.id)
def test_every_question_says_what_it_needs_without_results(tmp_path, question):
    result = question.answer(Evidence([], read_results_dir(tmp_path)))
    assert isinstance(result, Unanswered)
    assert "results" in result.needs and "cs336_profile.run" in result.needs


def test_read_results_dir_keeps_only_results_documents(tmp_path, results_dir):
    results_dir("bench", [bench_row("small", forward_ms_mean=1.0)])
    (tmp_path / "small.timings.json").write_text('{"forward": 1.0}')
    (tmp_path / "broken.json").write_text("{")
    results = read_results_dir(tmp_path)
    assert list(results.documents) == ["bench.json"]
    assert isinstance(bench.answer_bench_b(Evidence([], results)), Unanswered)  # one measured step value, no spread
    assert read_results_dir(tmp_path / "absent").documents == {}
    assert isinstance(bench.answer_bench_b(Evidence([], results_dir("bench", [bench_row("s", forward_ms_mean=1.0,
                                                                                       forward_ms_std=0.0)]))),
                      ResultsAnswer)


def norm_rows(scale: float) -> list[dict]:
    """The runner's LayerNorm/RMSNorm comparison on one synthetic site of activations × ``scale``."""
    torch = pytest.importorskip("torch")
    experiments = pytest.importorskip("cs336_profile.experiments.norm_precision")
    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(0)) * scale
    site = {"size": "tiny", "handout": "2025", "context_length": 64, "batch_size": 1, "train_steps": 0,
            "device": "cpu", "site": "ln_final", "site_index": 0, **experiments.input_stats(x)}
    return [site | experiments.compare_norm(x, torch.ones(256), 1e-5, norm, dtype, compute)
            for norm in experiments.NORMS for dtype in experiments.LOW_DTYPES for compute in experiments.COMPUTES]


def test_mp_b_reads_each_part_of_layernorm_in_low_precision(results_dir):
    answer = norm_precision.answer_mp_b(results_dir("layernorm", norm_rows(1.0)))
    numbers = answer.numbers
    table = answer.tables["Largest error over the norm sites, per norm, dtype and computation"]
    assert numbers["overflow_count"] == 0 and numbers["sites"] == 1 and numbers["elements"] == 64 * 256
    assert numbers["overflow_margin"] == pytest.approx(65504 ** 0.5 / numbers["input_abs_max"])
    low = table.set_index(["norm", "dtype", "compute"]).loc[("layernorm", "bf16", "low")]
    assert numbers["bf16_output_error_low"] == low["output_rel_error_max"] > numbers["bf16_output_error_upcast"]
    assert 4 < numbers["bf16_over_fp16_variance_error"] < 16  # 3 mantissa bits apart
    assert "variance" in numbers["sensitive_parts"]
    assert "no value overflowed" in answer.answer and "does not need an fp32 LayerNorm to stay finite" in answer.answer


def test_mp_b_sees_fp16_overflow_on_large_activations(results_dir):
    answer = norm_precision.answer_mp_b(results_dir("layernorm", norm_rows(300.0)))
    assert answer.numbers["overflow_count"] > 0 and answer.numbers["overflow_margin"] < 1
    assert "non-finite values appeared, so fp16 overflows here" in answer.answer


def test_results_from_a_subfolder_add_experiments_not_runs(tmp_path, results_dir):
    results_dir("bench", [bench_row("small", forward_ms_mean=1.0)])
    write_results(tmp_path / "2026", "bench", [bench_row("xl", forward_ms_mean=2.0)], config={}, environment=ENVIRONMENT)
    write_results(tmp_path / "2026", "layernorm", [{"site": "ln"}], config={}, environment=ENVIRONMENT)
    results = read_results_dir(tmp_path)
    assert results.experiment_rows("bench")["size"].tolist() == ["small"]
    assert results.experiment_rows("layernorm")["results_file"].tolist() == ["2026/layernorm.json"]


def test_mp_c_trend_reads_every_size_not_the_first_and_last():
    speedups = pd.Series({"small": 1.30, "medium": 0.71, "large": 1.28, "2.7B": 3.56})
    assert mixed_precision._trend(speedups) == "not monotonic in size: it drops at small 1.30× → medium 0.71×"
    assert mixed_precision._trend(pd.Series({"small": 1.0, "medium": 1.5})) == "growing with model size"
    assert mixed_precision._trend(pd.Series({"small": 1.0, "medium": 1.02})) == "about flat with size"


def test_mp_c_pairs_no_multi_gpu_rank_with_a_one_gpu_run():
    assert mixed_precision._precision_side({"dtype": "fp32", "parallel": "ddp-naive"}) is None
    assert mixed_precision._precision_side({"dtype": "bf16"}) == "bf16"
