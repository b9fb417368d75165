"""Kernel name -> category, and whether a matrix kernel runs on tensor cores.

Ordered rules on the demangled kernel name; the first rule that matches wins, and a name no
rule matches is ``other``. The order matters where names overlap: Triton pointwise kernels
name the ATen ops they fuse (``triton_poi_fused_add_bmm_mul_permute_0`` holds no GEMM), cuDNN
convolutions are called ``*_sgemm``, and PyTorch launches copies through its elementwise
kernel templates (``vectorized_elementwise_kernel<4, direct_copy_kernel_cuda...>``).
"""
from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import pandas as pd

GEMM = "gemm"  # the category the matrix-multiplication questions compare against

# Display order. `memcpy`/`memset` label rows of the memory-operation tables (callers set them);
# no kernel name maps to them.
CATEGORIES = (
    GEMM,
    "convolution",
    "attention",
    "softmax",
    "normalization",
    "reduction",
    "elementwise",
    "copy_cast",
    "optimizer",
    "communication",
    "memcpy",
    "memset",
    "other",
)

# Categories whose kernels may run on tensor cores; every other kernel runs on CUDA cores.
MATRIX_CATEGORIES = frozenset({GEMM, "convolution", "attention"})


class Rule(NamedTuple):
    """One classification rule: kernels whose demangled name matches `pattern` are `category`."""

    category: str
    pattern: re.Pattern
    reason: str


class TensorCoreRule(NamedTuple):
    """One tensor-core rule for matrix kernels: a match means `tensor_core`."""

    tensor_core: bool
    pattern: re.Pattern
    reason: str


def _rule(category: str, regex: str, reason: str) -> Rule:
    return Rule(category, re.compile(regex, re.IGNORECASE), reason)


RULES = (
    _rule("communication", r"nccl", "NCCL collectives and send/recv (ncclDevKernel_*)"),
    _rule(
        "optimizer",
        r"multi_tensor_apply|fused_?adam",
        "fused/foreach optimizers run as multi_tensor_apply_kernel; a per-parameter AdamW is "
        "elementwise kernels that only the optimizer range can single out",
    ),
    _rule(
        "attention",
        r"flash_fwd|flash_bwd|flash::|fmha|AttentionKernel|AttentionBackwardKernel|_sdpa_"
        r"|flex_attention",
        "fused attention: FlashAttention (flash_fwd_kernel, pytorch_flash::), memory-efficient "
        "attention (fmha_cutlassF/B), cuDNN SDPA (cudnn_generated_fort_native_sdpa_*)",
    ),
    _rule(
        "softmax",
        r"softmax",
        "softmax kernels (softmax_warp_forward, cunn_SoftMaxForward, triton_*_fused__softmax_*); "
        "a hand-written softmax is reduce + elementwise kernels that only NVTX can isolate",
    ),
    _rule(
        "normalization",
        r"layer_?norm|rms_?norm|batch_?norm|group_?norm|instance_?norm|GammaBetaBackward"
        r"|\bbn_(fw|bw)",
        "fused normalization kernels (vectorized_layer_norm_kernel, batch_norm_*, cuDNN bn_*); "
        "an RMSNorm written out in PyTorch is reduce + elementwise kernels",
    ),
    _rule(
        "elementwise",
        r"\btriton_poi_",
        "Triton pointwise kernels: their names list the fused ATen ops, so 'bmm'/'mm' in "
        "triton_poi_fused_add_bmm_mul_permute_* does not make them matrix multiplications",
    ),
    _rule(
        "reduction",
        r"\btriton_(red|per)_",
        "Triton reduction and persistent-reduction kernels (names list fused ops, not GEMMs)",
    ),
    _rule(
        "convolution",
        r"convolve|convolution|conv2d|conv3d|winograd|fft2d|im2col|col2im|flip_filter"
        r"|scudnn|hcudnn|fprop|dgrad|wgrad|cudnn::",
        "cuDNN convolutions and their helpers (implicit/explicit_convolve_sgemm, *_scudnn_*, "
        "Winograd and FFT transforms, im2col): implicit GEMM, Winograd or FFT, not plain GEMMs",
    ),
    _rule(
        GEMM,
        r"gemm|gemv|nvjet|splitKreduce|\btriton_tem_\w*mm",
        "cuBLAS/cuBLASLt and CUTLASS matrix multiplications: *gemm*/*gemv* (sm80_xmma_gemm_*, "
        "ampere_sgemm_*, cutlass_80_*gemm*), Hopper nvjet_* (no 'gemm' in the name), the split-K "
        "reduction that finishes a split GEMM, Triton matmul templates triton_tem_*mm*",
    ),
    _rule(
        "copy_cast",
        r"copy_kernel|CatArray|gather|scatter|index_elementwise_kernel|indexing_backward"
        r"|index_put|embedding",
        "data movement: copies and dtype casts (direct_copy_kernel_cuda, bfloat16_copy_kernel_"
        "cuda, even inside elementwise templates), concatenation, gathers/scatters such as "
        "embedding lookups",
    ),
    _rule(
        "reduction",
        r"reduce",
        "reductions (at::native::reduce_kernel for sum/mean/max, cub Device*Reduce*)",
    ),
    _rule(
        "elementwise",
        r"elementwise|triu_tril",
        "PyTorch pointwise ops (vectorized_/unrolled_elementwise_kernel, elementwise_kernel, "
        "random fills) and masks (triu_tril_kernel)",
    ),
)

TENSOR_CORE_RULES = (
    TensorCoreRule(
        False,
        re.compile(r"_ffma_|simt|sgemm|dgemm|gemv|scudnn|splitKreduce", re.IGNORECASE),
        "fp32 FFMA/SIMT kernels (sm80_xmma_gemm_f32f32_*_ffma_*, cutlass_80_simt_sgemm_*, "
        "ampere_sgemm_*, cuDNN scudnn, gemv) and the split-K reduction run on CUDA cores",
    ),
    TensorCoreRule(
        True,
        re.compile(
            r"tensorop|nvjet|hmma|imma|gmma|[hsi]1688|[hsi]16816|[hs]884|i8816"
            r"|bf16|bfloat16|f16|half|tf32|e4m3|e5m2",
            re.IGNORECASE,
        ),
        "tensor-core instructions or tile types in the name: tensorop, nvjet, hmma, wgmma, "
        "s1688/s16816/h884 tiles, bf16/f16/tf32/fp8 operands",
    ),
)


def matching_rule(demangled: str) -> Rule | None:
    """Return the first rule of `RULES` that matches the demangled name, or None."""
    return next((rule for rule in RULES if rule.pattern.search(demangled)), None)


def classify_name(demangled: str) -> str:
    """Return the category of one kernel from its demangled name (`other` when no rule matches)."""
    rule = matching_rule(demangled)
    return rule.category if rule else "other"


def matching_tensor_core_rule(demangled: str) -> TensorCoreRule | None:
    """Return the first rule of `TENSOR_CORE_RULES` that matches the demangled name, or None."""
    return next((rule for rule in TENSOR_CORE_RULES if rule.pattern.search(demangled)), None)


def uses_tensor_cores(demangled: str, category: str) -> bool:
    """True when a kernel of a matrix category names tensor-core instructions or operand types.

    Kernels outside `MATRIX_CATEGORIES` are False; so are matrix kernels whose name gives no
    evidence either way (e.g. cuDNN FFT convolutions).
    """
    if category not in MATRIX_CATEGORIES:
        return False
    rule = matching_tensor_core_rule(demangled)
    return rule.tensor_core if rule else False


def classify_kernels(demangled: pd.Series) -> pd.DataFrame:
    """Classify many kernels: columns `category` and `tensor_core`, index aligned with the input.

    Each distinct name is classified once, then mapped back (traces have 100k+ kernels but a
    few hundred distinct names). Missing names are `other`.
    """
    codes, distinct_names = pd.factorize(demangled.fillna(""))
    categories = [classify_name(name) for name in distinct_names]
    tensor_core = [uses_tensor_cores(n, c) for n, c in zip(distinct_names, categories)]
    return pd.DataFrame(
        {
            "category": pd.Series(np.asarray(categories, dtype=object)[codes], dtype="str",
                                  index=demangled.index),
            "tensor_core": pd.Series(np.asarray(tensor_core, dtype=bool)[codes],
                                     index=demangled.index),
        }
    )
