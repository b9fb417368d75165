"""Kernel labels: short, naming the operation, and one label per kernel on the recorded traces."""
from __future__ import annotations

import pytest

from analysis.core.kernel_names import kernel_label
from analysis.load import load_trace
from analysis.load.errors import TraceError
from tests.conftest import DATA, EXTERNAL, REPO


def _recorded_names() -> set[str]:
    """Every distinct demangled kernel name of the committed traces and of the shared ones."""
    paths = [*sorted((REPO / "nsys_runs" / "traces").glob("*.sqlite.xz")),
             *sorted(DATA.glob("*.sqlite.xz")),
             *sorted(EXTERNAL.glob("*.sqlite"))]
    names: set[str] = set()
    for path in paths:
        try:
            kernels = load_trace(path).kernels
        except TraceError:  # an external trace without kernel records: nothing to label
            continue
        names.update(kernels["demangled_name"].astype(str).unique())
    return names


def test_distinct_kernels_get_distinct_short_labels():
    names = _recorded_names()
    assert len(names) > 150  # the committed traces alone hold 175 distinct kernels, 69 of them in families
    labels = {}
    for name in names:
        labels.setdefault(kernel_label(name), []).append(name)
    assert {label: names for label, names in labels.items() if len(names) > 1} == {}
    families = [label for label in labels
                if label.startswith(("elementwise ", "reduce ", "random ", "scatter/gather "))]
    assert len(families) > 60 and max(map(len, families)) <= 70


# Names from the small training trace; the first two shared the label "elementwise_kernel
# (MulFunctor)" (192 and 97 calls per pass); masked_fill, sum and pow showed as bare templates.
LABELS = [
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<float, "
     "float, float, at::native::binary_internal::MulFunctor<float>>, std::array<char *, "
     "(unsigned long)3>>(int, T2, T3)", "elementwise MulFunctor<float> (vectorized 4)"),
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::AUnaryFunctor<float, "
     "float, float, at::native::binary_internal::MulFunctor<float>>, std::array<char *, "
     "(unsigned long)2>>(int, T2, T3)", "elementwise MulFunctor<float> (vectorized 4, scalar a)"),
    ("void at::native::elementwise_kernel<(int)128, (int)2, void at::native::gpu_kernel_impl_"
     "nocast<at::native::<unnamed>::masked_fill_kernel(at::TensorIterator &, const c10::Scalar &)"
     "::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 7)]::operator ()() "
     "const::[lambda(float, bool) (instance 1)]>(at::TensorIteratorBase &, const T1 &)::"
     "[lambda(int) (instance 1)]>(int, T3)", "elementwise masked_fill<float, bool> (strided 128x2)"),
    ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::"
     "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator ()(at::"
     "TensorIterator &)::[lambda(float, float) (instance 1)]>, unsigned int, float, (int)4, "
     "(int)4>>(T3)", "reduce sum_functor<float, float, float> (512x1, 4x4)"),
    ("void at::native::vectorized_elementwise_kernel<(int)4, void at::native::<unnamed>::pow_"
     "tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase &, T2)::[lambda(float) "
     "(instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)",
     "elementwise pow_tensor_scalar<float, float> (vectorized 4)"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_"
     "alignc4_execute_split_k_kernel__5x_cublas",
     "sm80 xmma gemm f32 tn 64x64x8 stage3 warps1x4x1 ffma split-K"),
    ("nvjet_sm90_tst_64x64_64x13_4x2_h_bz_NNT", "nvjet_sm90_tst_64x64_64x13_4x2_h_bz_NNT"),
    ("triton_poi_fused_clone_permute_transpose_view_5", "triton_poi_fused_clone_permute_transpose_view_5"),
    ("void <unnamed>::softmax_warp_forward<float, float, float, (int)6, (bool)0, (bool)0>(T2 *, "
     "const T1 *, int, int, int, const bool *, int, bool)",
     "softmax_warp_forward<float, float, float, 6, 0, 0>"),
]


@pytest.mark.parametrize("name, label", LABELS, ids=[label for _, label in LABELS])
def test_label_names_the_operation(name, label):
    assert kernel_label(name) == label
