"""Kernel classification, tested on kernel names read from real nsys exports."""
from __future__ import annotations

import sqlite3
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

from analysis.core.classify import (
    CATEGORIES,
    GEMM_PRECISION_RULES,
    MATRIX_CATEGORIES,
    RULES,
    TENSOR_CORE_RULES,
    classify_kernels,
    classify_name,
    gemm_precision,
    gemm_precision_mix,
    matching_rule,
    matching_tensor_core_rule,
)
from analysis.load import load_trace

FIXTURE_TRACES = ("small_ctx128_train_fp32.sqlite", "small_ctx256_forward_fp32.sqlite",
                  "attention_bench.sqlite")
COMMITTED_TRACES = Path(__file__).resolve().parents[1] / "nsys_runs" / "traces"
COMPILED = "small_ctx128_train_fp32_compiled.sqlite.xz"

# (trace, demangled name as stored in it, expected category, expected tensor-core flag)
REAL_NAMES = [
    # cuBLAS fp32 GEMMs on Hopper: xmma kernels with FFMA, i.e. CUDA cores.
    ("small_ctx128_train_fp32.sqlite",
     "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_"
     "alignc4_execute_kernel__5x_cublas", "gemm", False),
    ("h100_2gpu_1s.sqlite",
     "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_"
     "alignc4_execute_split_k_kernel__5x_cublas", "gemm", False),
    ("small_ctx128_train_fp32.sqlite",
     "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)",
     "gemm", False),
    # The split-K reduction finishes a GEMM although its name says "reduce".
    ("small_ctx128_train_fp32.sqlite",
     "void cublasLt::splitKreduce_kernel<(int)32, (int)16, int, float, float, float, float, "
     "(bool)0, float, float, float, (bool)1, (bool)0, (bool)0, (bool)0>(cublasLt::"
     "cublasSplitKParams<T6>, const T4 *, const T10 *, T9 *, T5 *, const T6 *, const T6 *, "
     "const T11 *, const T4 *, T11 *, void *, long, T6 *, int *, T6 *, T6 *, const T6 *, "
     "const T6 *, const T6 *, const T6 *, const T6 *)", "gemm", False),
    # Hopper cuBLAS JIT kernels: no "gemm" in the name.
    ("mfu_2gpu_after.sqlite", "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", "gemm", True),
    ("dlprof_pytorch_cnn_2022.sqlite",
     "void gemv2T_kernel_val<int, int, float2, float2, float2, (int)128, (int)16, (int)2, (int)2, "
     "(bool)0, cublasGemvParams<cublasGemvTensorBatched<const float2>, cublasGemvTensorBatched"
     "<float2>, float2>>(T11, T5, T5)", "gemm", False),
    ("dlprof_pytorch_cnn_2022.sqlite",
     "void gemmSN_NN_kernel<float, (int)128, (int)2, (int)4, (int)8, (int)4, (int)4, "
     "cublasGemvTensorStridedBatched<const float>, cublasGemvTensorStridedBatched<float>>"
     "(cublasGemmSmallNParams<T8, T9, T1>)", "gemm", False),
    # cuDNN convolutions: implicit GEMM ("sgemm" in the name), Winograd, FFT, im2col.
    ("dlprof_pytorch_cnn_2022.sqlite",
     "void cudnn::detail::implicit_convolve_sgemm<float, float, (int)1024, (int)5, (int)5, "
     "(int)3, (int)3, (int)3, (int)1, (bool)1, (bool)0, (bool)1>(int, int, int, const T1 *, int, "
     "T2 *, T1 *, kernel_conv_params, int, float, float, int, T2 *, T2 *, int, int)",
     "convolution", False),
    ("dlprof_pytorch_cnn_2022.sqlite", "volta_scudnn_128x32_relu_interior_nn_v1",
     "convolution", False),
    ("dlprof_pytorch_cnn_2022.sqlite",
     "void cudnn::winograd_nonfused::winogradForwardData9x9_5x5<float, float>(cudnn::"
     "winograd_nonfused::WinogradDataParams<T1, T2>)", "convolution", False),
    ("dlprof_pytorch_cnn_2022.sqlite",
     "void fft2d_c2r_32x32<float, (bool)0, (bool)0, (unsigned int)0, (bool)0, (bool)0>(T1 *, "
     "const float2 *, int, int, int, int, int, int, int, int, int, float, float, cudnn::"
     "reduced_divisor, bool, T1 *, T1 *, int2, int, int)", "convolution", False),
    ("dlprof_pytorch_cnn_2022.sqlite",
     "void im2col4d_kernel<float, int>(im2col4d_params, cudnnConvolutionStruct, "
     "cudnnTensor4dStruct, const T1 *, T1 *, int)", "convolution", False),
    ("dlprof_pytorch_cnn_2022.sqlite",
     "cudnn::gemm::computeOffsetsKernel(cudnn::gemm::ComputeOffsetsParams)", "convolution", False),
    ("mfu_2gpu_after.sqlite",
     "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, "
     "(bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)128, (int)64, "
     "(int)4, cutlass::bfloat16_t>>, (bool)0, (bool)0, (bool)0, (bool)0, (bool)0, (bool)1, "
     "(bool)0, (bool)0>(flash::Flash_fwd_params)", "attention", True),
    ("h100_2gpu_1s.sqlite",
     "void <unnamed>::softmax_warp_forward<float, float, float, (int)6, (bool)0, (bool)0>(T2 *, "
     "const T1 *, int, int, int, const bool *, int, bool)", "softmax", False),
    ("mfu_2gpu_after.sqlite",
     "void at::native::<unnamed>::vectorized_layer_norm_kernel<float, float, (bool)0>(int, T2, "
     "const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)", "normalization", False),
    ("small_ctx128_train_fp32.sqlite",
     "void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::"
     "MaxOps<float>, unsigned int, float, (int)4, (int)4>>(T3)", "reduction", False),
    # Copies launched through the elementwise templates are copies.
    ("small_ctx128_train_fp32.sqlite",
     "void at::native::elementwise_kernel<(int)128, (int)2, void at::native::gpu_kernel_impl_"
     "nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() "
     "(instance 3)]::operator ()() const::[lambda() (instance 7)]::operator ()() const::"
     "[lambda(float) (instance 1)]>(at::TensorIteratorBase &, const T1 &)::[lambda(int) "
     "(instance 1)]>(int, T3)", "copy_cast", False),
    ("mfu_2gpu_after.sqlite",
     "void at::native::vectorized_elementwise_kernel<(int)8, at::native::bfloat16_copy_kernel_"
     "cuda(at::TensorIteratorBase &)::[lambda(float) (instance 1)], std::array<char *, "
     "(unsigned long)2>>(int, T2, T3)", "copy_cast", False),
    ("mfu_2gpu_after.sqlite",
     "void at::native::<unnamed>::CatArrayBatchedCopy_vectorized<at::native::<unnamed>::"
     "OpaqueType<(unsigned int)2>, unsigned int, (int)2, (int)128, (int)1, (int)16, (int)8>"
     "(char *, at::native::<unnamed>::CatArrInputTensorMetadata<T1, T2, T4, T5>, at::native::"
     "<unnamed>::TensorSizeStride<T2, (unsigned int)4>, int, T2)", "copy_cast", False),
    # Embedding lookup and its backward scatter are data movement; so is torch.gather.
    ("small_ctx128_train_fp32.sqlite",
     "void at::native::vectorized_gather_kernel<(int)16, long>(char *, char *, T2 *, int, long, "
     "long, long, long, bool)", "copy_cast", False),
    ("small_ctx128_train_fp32.sqlite",
     "void <unnamed>::indexing_backward_kernel<float, (int)4>(const long *, const long *, "
     "const T1 *, T1 *, long, long, long, long, bool)", "copy_cast", False),
    ("small_ctx128_train_fp32.sqlite",
     "void at::native::_scatter_gather_elementwise_kernel<(int)128, (int)8, void at::native::"
     "_cuda_scatter_gather_internal_kernel<(bool)1, at::native::OpaqueType<(int)4>, long>::"
     "operator ()<at::native::TensorAssign>(at::TensorIterator &, long, long, long, const T1 &)"
     "::[lambda(int) (instance 1)]>(int, T3)", "copy_cast", False),
    # Per-parameter AdamW is plain elementwise kernels (only the optimizer range isolates it).
    ("small_ctx128_train_fp32.sqlite",
     "void at::native::vectorized_elementwise_kernel<(int)4, at::native::addcdiv_cuda_kernel"
     "(at::TensorIteratorBase &, const c10::Scalar &)::[lambda() (instance 2)]::operator ()() "
     "const::[lambda() (instance 7)]::operator ()() const::[lambda(float, float, float) "
     "(instance 1)], std::array<char *, (unsigned long)4>>(int, T2, T3)", "elementwise", False),
    ("small_ctx128_train_fp32.sqlite",
     "void at::native::vectorized_elementwise_kernel<(int)4, at::native::exp_kernel_cuda(at::"
     "TensorIteratorBase &)::[lambda() (instance 2)]::operator ()() const::[lambda() "
     "(instance 2)]::operator ()() const::[lambda(float) (instance 1)], std::array<char *, "
     "(unsigned long)2>>(int, T2, T3)", "elementwise", False),
    ("mock.sqlite",
     "void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, "
     "std::array<char *, (unsigned long)1>>(int, T2, T3)", "elementwise", False),
    ("small_ctx128_train_fp32.sqlite",
     "void at::native::triu_tril_kernel<bool, int, (bool)0, (int)8, (bool)0>(at::cuda::detail::"
     "TensorInfo<T1, T2>, at::cuda::detail::TensorInfo<const T1, T2>, long, long, T2)",
     "elementwise", False),
    ("mfu_2gpu_after.sqlite",
     "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     "communication", False),
    # A cub sort (5 launches, 24 us in the training trace) and a user kernel: no rule.
    ("small_ctx128_train_fp32.sqlite",
     "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortSingleTileKernel<at_cuda_"
     "detail::cub::detail::radix::policy_hub<long, at::cuda::cub::detail::OpaqueType<(int)8>, "
     "unsigned long long>::Policy1000, (at_cuda_detail::cub::SortOrder)0, long, at::cuda::cub::"
     "detail::OpaqueType<(int)8>, unsigned long long, at_cuda_detail::cub::detail::identity_"
     "decomposer_t>(const T3 *, T3 *, const T4 *, T4 *, T5, int, int, T6)", "other", False),
    ("extrap_ex-gpu_2021.sqlite",
     "vector_dot(double const*, double const*, unsigned long, double*)", "other", False),
    # torch.compile's Triton kernels (small training, fp32): a pointwise kernel that only
    # copies is a copy as eager's are; one that computes is elementwise even with bmm in its name.
    (COMPILED, "triton_poi_fused_clone_permute_transpose_view_5", "copy_cast", False),
    (COMPILED, "triton_poi_fused__unsafe_view_bmm_clone_permute_squeeze_transpose_view_10",
     "copy_cast", False),
    (COMPILED, "triton_poi_fused_add_bmm_mul_permute_sigmoid_sigmoid_backward_squeeze_view_3",
     "elementwise", False),
    (COMPILED, "triton_poi_fused_add_div_masked_fill_15", "elementwise", False),
    # Fused softmax (forward, and the backward that recomputes it) and fused RMSNorm.
    (COMPILED, "triton_per_fused_div_exp_masked_fill_max_permute_sub_sum_view_3", "softmax", False),
    (COMPILED, "triton_per_fused_add_div_exp_expand_masked_fill_mul_neg_permute_scatter_squeeze_"
     "sub_sum_view_zeros_14", "softmax", False),
    (COMPILED, "triton_per_fused_add_div_index_mean_mul_pow_sqrt_0", "normalization", False),
    (COMPILED, "triton_per_fused_add_bmm_div_mean_mul_permute_pow_sqrt_view_6", "normalization",
     False),
    (COMPILED, "triton_per_fused_add_bmm_div_expand_mul_neg_pow_squeeze_sum_view_2", "reduction",
     False),
    ("small_ctx128_train_bf16.sqlite.xz", "nvjet_sm90_tst_64x64_64x13_4x2_h_bz_NNT", "gemm", True),
]

# Names no trace here holds, as PyTorch, Inductor, cuBLAS and cuDNN write them in public
# profiles (the traps of the classification spec among them).
DOCUMENTED_NAMES = [
    # A CUDA graph traced whole (nsys --cuda-graph-trace=graph): the loader's name for its one record.
    ("[CUDA graph 13]", "cuda_graph", False),
    ("triton_poi_fused_add_bmm_mul_permute_0", "elementwise", False),
    ("triton_poi_fused_add_addmm_gelu_mul_0", "elementwise", False),
    ("triton_red_fused_mm_0", "reduction", False),
    ("triton_per_fused_native_layer_norm_0", "normalization", False),
    ("triton_red_fused__softmax_0", "softmax", False),
    ("triton_tem_fused_mm_0", "gemm", True),
    ("triton_tem_fused_flex_attention_0", "attention", True),
    ("triton_for_fused_0", "elementwise", False),
    ("fmha_v2_flash_attention_fp16_64_64_S_128_sm80_kernel", "attention", True),
    # The cuBLASLt epilogue (bias, activation) finishes a GEMM on CUDA cores.
    ("void cublasLt::epilogue::impl::globalKernel<(int)8, (int)32, float, float, float, (bool)1, "
     "(bool)1, (int)1>(int, int, long, T3 *, cublasLtEpilogue_t, int, T3 *, long, void *, long, "
     "long, long, T3 *, long, int *)", "gemm", False),
    ("void cudnn::engines_precompiled::nchwToNhwcKernel<float, __half, float, (bool)0, (bool)1, "
     "(cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<T3>, const T1 *, "
     "T2 *)", "copy_cast", False),
    # Foreach kernels that are not the optimizer step: clip_grad_norm_'s norm, AMP's unscale.
    ("void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::"
     "TensorListMetadata<(int)1>, at::native::<unnamed>::LpNormFunctor<float, (at::native::"
     "<unnamed>::NormType)1, float, (int)1, (int)1, (int)0>, float *, int>(T1, T2, T3...)",
     "reduction", False),
    ("void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::"
     "TensorListMetadata<(int)1>, at::native::<unnamed>::UnaryOpFunctor<float, (int)1, (int)1, "
     "(int)0>, at::native::_amp_foreach_non_finite_check_and_unscale_cuda_(c10::ArrayRef<at::"
     "Tensor>, at::Tensor &, const at::Tensor &)::[lambda() (instance 1)]::operator ()() const::"
     "[lambda() (instance 2)]::operator ()() const::[lambda(float) (instance 1)]>(T1, T2, T3...)",
     "elementwise", False),
    ("void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::"
     "FusedOptimizerTensorListMetadata<(int)4>, at::native::<unnamed>::FusedAdamMathFunctor<float, "
     "(int)4, (at::native::ADAM_MODE)1, (bool)0>, double, float *, float *, double, double, double, "
     "double, bool, float *, float *>(T1, T2, T3...)", "optimizer", False),
    ("void at::native::<unnamed>::RowwiseMomentsCUDAKernel<float, float>(long, T2, const T1 *, "
     "T2 *, T2 *)", "normalization", False),
    ("void at::native::<unnamed>::indexSelectLargeIndex<float, long, unsigned int, (int)2, (int)2, "
     "(int)-2, (bool)1>(at::cuda::detail::TensorInfo<T1, T3>, at::cuda::detail::TensorInfo<const "
     "T1, T3>, at::cuda::detail::TensorInfo<const T2, T3>, int, int, T3, T3, long)",
     "copy_cast", False),
    ("void at::native::<unnamed>::fused_dropout_kernel_vec<float, float, unsigned int, (int)1, "
     "(int)4, bool>(at::cuda::detail::TensorInfo<const T1, T3>, at::cuda::detail::TensorInfo<T1, "
     "T3>, at::cuda::detail::TensorInfo<T6, T3>, T3, T2, at::PhiloxCudaState)", "elementwise", False),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_tn_align4>(T1::Params)",
     "gemm", True),
    ("ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_tn", "gemm", True),
    ("ampere_sgemm_128x64_tn", "gemm", False),
    ("void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::"
     "TensorListMetadata<(int)2>, at::native::<unnamed>::UnaryOpFunctor<c10::BFloat16, (int)2, "
     "(int)1, (int)1>, at::native::Copy<c10::BFloat16, c10::BFloat16>>(T1, T2, T3...)",
     "optimizer", False),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
     "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", "attention", False),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_"
     "cga1x1x1_kernel0_0", "attention", True),
    ("void at::native::<unnamed>::cunn_SoftMaxForward<(int)4, float, float, float, at::native::"
     "<unnamed>::SoftMaxForwardEpilogue>(T3 *, const T1 *, int)", "softmax", False),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     "communication", False),
]

ALL_LISTED = [(name, category, tc) for _, name, category, tc in REAL_NAMES] + DOCUMENTED_NAMES


@cache
def _kernel_names(path: Path) -> pd.Series:
    """Demangled name of every kernel in a trace (one entry per kernel launch)."""
    if path.suffix == ".xz":
        return load_trace(path).kernels["demangled_name"].astype(str)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return pd.read_sql_query(
            "SELECT s.value AS name FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "JOIN StringIds AS s ON s.id = k.demangledName", db)["name"]


@pytest.fixture
def trace_path(fixture_trace, external_trace):
    """Path of a trace by file name, from the fixture folder or the external one."""
    def path(name: str) -> Path:
        if name.endswith(".xz"):
            return COMMITTED_TRACES / name
        return fixture_trace(name) if name in FIXTURE_TRACES else external_trace(name)
    return path


def test_categories_in_display_order():
    assert CATEGORIES == ("gemm", "convolution", "attention", "softmax", "normalization",
                          "reduction", "elementwise", "copy_cast", "optimizer", "communication",
                          "cuda_graph", "memcpy", "memset", "other")
    assert {rule.category for rule in RULES} <= set(CATEGORIES)


@pytest.mark.parametrize("trace, name, category, tensor_core", REAL_NAMES,
                         ids=[f"{c}:{n[:40]}" for _, n, c, _ in REAL_NAMES])
def test_real_kernel_names(trace_path, trace, name, category, tensor_core):
    assert name in set(_kernel_names(trace_path(trace)))
    assert classify_name(name) == category
    row = classify_kernels(pd.Series([name])).iloc[0]
    assert (row["category"], bool(row["tensor_core"])) == (category, tensor_core)


@pytest.mark.parametrize("name, category, tensor_core", DOCUMENTED_NAMES,
                         ids=[f"{c}:{n[:40]}" for n, c, _ in DOCUMENTED_NAMES])
def test_documented_kernel_names(name, category, tensor_core):
    row = classify_kernels(pd.Series([name])).iloc[0]
    assert (row["category"], bool(row["tensor_core"])) == (category, tensor_core)


def test_every_rule_decides_a_listed_name():
    deciding_rules = {matching_rule(name) for name, _, _ in ALL_LISTED}
    assert [rule.reason for rule in RULES if rule not in deciding_rules] == []
    deciding_tc_rules = {matching_tensor_core_rule(name) for name, category, _ in ALL_LISTED
                         if category in MATRIX_CATEGORIES}
    assert [rule.reason for rule in TENSOR_CORE_RULES if rule not in deciding_tc_rules] == []


def test_lowercase_twin_of_each_rule_matches_as_its_case_insensitive_pattern():
    names = [name for name, _, _ in ALL_LISTED] + [name for name, _ in GEMM_PRECISIONS]
    names += [name.upper() for name in names] + [name.swapcase() for name in names]
    for rule in (*RULES, *TENSOR_CORE_RULES, *GEMM_PRECISION_RULES):
        for name in names:
            assert bool(rule.lowercase.search(name.lower())) == bool(rule.pattern.search(name)), (rule.reason, name)


def test_classify_kernels_maps_each_kernel_of_a_trace(fixture_trace):
    names = _kernel_names(fixture_trace("small_ctx128_train_fp32.sqlite"))
    names = pd.Series(names.to_numpy(), index=names.index + 1000)  # a non-default index
    classes = classify_kernels(names)
    assert classes.index.equals(names.index)
    assert classes["category"].tolist() == [classify_name(name) for name in names]
    assert not classes["tensor_core"].any()  # fp32 without TF32: CUDA cores only


def test_missing_names_and_empty_input():
    classes = classify_kernels(pd.Series([None, "nvjet_tst_96x64_64x10_1x2_h_bz_bias_TNN"]))
    assert classes["category"].tolist() == ["other", "gemm"]
    assert classes["tensor_core"].tolist() == [False, True]
    assert classify_kernels(pd.Series([], dtype="str")).shape == (0, 2)


@pytest.mark.parametrize("trace", FIXTURE_TRACES)
def test_no_fixture_kernel_over_one_percent_is_other(fixture_trace, trace):
    with sqlite3.connect(f"file:{fixture_trace(trace)}?mode=ro", uri=True) as db:
        per_name = pd.read_sql_query(
            "SELECT s.value AS name, SUM(k.\"end\" - k.start) AS dur_ns "
            "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName "
            "GROUP BY s.value", db)
    per_name["share"] = per_name["dur_ns"] / per_name["dur_ns"].sum()
    unclassified = per_name[classify_kernels(per_name["name"])["category"] == "other"]
    assert unclassified[unclassified["share"] > 0.01]["name"].tolist() == []


def test_category_totals_match_nsys_kernel_summary(fixture_trace):
    """Per-category totals of the training trace, from the SQLite rows and from nsys's own
    `cuda_gpu_kern_sum` report of the same file."""
    trace = fixture_trace("small_ctx128_train_fp32.sqlite")
    with sqlite3.connect(f"file:{trace}?mode=ro", uri=True) as db:
        kernels = pd.read_sql_query(
            "SELECT s.value AS name, k.\"end\" - k.start AS dur_ns "
            "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName",
            db)
    from_sqlite = (kernels.assign(category=classify_kernels(kernels["name"])["category"])
                   .groupby("category")["dur_ns"].agg(["count", "sum"]))
    summary = pd.read_csv(trace.with_name("small_ctx128_train_fp32.cuda_gpu_kern_sum.csv"))
    from_nsys = (summary.assign(category=classify_kernels(summary["Name"])["category"])
                 .groupby("category")[["Instances", "Total Time (ns)"]].sum())
    expected = {  # category: (kernels, total ns)
        "copy_cast": (1465, 7_504_966),
        "elementwise": (12119, 30_687_303),
        "gemm": (2540, 56_943_500),
        "other": (5, 24_160),
        "reduction": (630, 3_288_560),
    }
    assert {c: (int(r["count"]), int(r["sum"])) for c, r in from_sqlite.iterrows()} == expected
    assert {c: (int(r["Instances"]), int(r["Total Time (ns)"]))
            for c, r in from_nsys.iterrows()} == expected


# GEMM kernel names and the precision they compute in; the first four are in the traces here.
GEMM_PRECISIONS = [
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_"
     "alignc4_execute_kernel__5x_cublas", "fp32"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)", "fp32"),
    ("nvjet_sm90_tst_64x64_64x13_4x2_h_bz_NNT", "bf16"),
    ("void cublasLt::splitKreduce_kernel<(int)32, (int)16, int, float, float, float, float, "
     "(bool)0, float, float, float, (bool)1, (bool)0, (bool)0, (bool)0>(cublasLt::"
     "cublasSplitKParams<T6>, const T4 *)", None),
    ("ampere_sgemm_128x64_tn", "fp32"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_tn_align4>(T1::Params)",
     "tf32"),
    ("sm80_xmma_gemm_tf32tf32_tf32f32_f32_nt_n_tilesize128x128x16_stage4_warpsize2x2x1_"
     "tensor16x8x8", "tf32"),
    ("nvjet_sss_tf32_128x256_TNT", "tf32"),
    ("ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_tn", "fp16"),
    ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", "bf16"),
    ("nvjet_sm90_hsh_128x256_64x4_2x1_v_bz_coopA_TNN", "fp16"),
    ("sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_"
     "execute_segment_k_off_kernel__5x_cublas", "fp8"),
]


@pytest.mark.parametrize("name, precision", GEMM_PRECISIONS, ids=[n[:40] for n, _ in GEMM_PRECISIONS])
def test_gemm_precision_from_the_name(name, precision):
    assert classify_name(name) == "gemm"
    assert gemm_precision(name) == precision


def test_every_precision_rule_decides_a_listed_name():
    deciding = {next(r for r in GEMM_PRECISION_RULES if r.pattern.search(name))
                for name, precision in GEMM_PRECISIONS if precision}
    assert [rule.reason for rule in GEMM_PRECISION_RULES if rule not in deciding] == []


def test_precision_mix_weighs_gemm_time_only():
    kernels = pd.DataFrame({"demangled_name": [
        GEMM_PRECISIONS[5][0], GEMM_PRECISIONS[6][0], GEMM_PRECISIONS[4][0], GEMM_PRECISIONS[3][0],
        "void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, "
        "std::array<char *, (unsigned long)1>>(int, T2, T3)"], "dur_ns": [50, 20, 20, 10, 900]})
    assert gemm_precision_mix(kernels) == {"tf32": 0.7, "fp32": 0.2, "unknown": 0.1}
    assert gemm_precision_mix(kernels.iloc[4:]) == {}


@pytest.mark.parametrize("trace, precision", [("small_ctx128_train_fp32.sqlite.xz", "fp32"),
                                              ("medium_ctx256_train_bf16.sqlite.xz", "bf16"),
                                              (COMPILED, "fp32")])
def test_precision_mix_of_recorded_runs(trace, precision):
    """fp32 runs without TF32 call FFMA GEMMs (plus fp32 split-K reductions, of no stated
    precision); bf16 autocast runs call nvjet bf16 GEMMs for every matmul."""
    kernels = load_trace(COMMITTED_TRACES / trace).kernels
    mix = gemm_precision_mix(kernels)
    assert set(mix) <= {precision, "unknown"}
    assert mix[precision] > 0.9
