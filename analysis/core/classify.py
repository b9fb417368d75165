"""Kernel name -> category, whether a matrix kernel runs on tensor cores, and the precision a
GEMM kernel computes in.

Ordered rules on the demangled kernel name; the first rule that matches wins, and a name no
rule matches is ``other``. The order matters where names overlap: Triton pointwise kernels
name the ATen ops they fuse (``triton_poi_fused_add_bmm_mul_permute_0`` holds no GEMM), cuDNN
convolutions are called ``*_sgemm``, and PyTorch launches copies through its elementwise
kernel templates (``vectorized_elementwise_kernel<4, direct_copy_kernel_cuda...>``).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import pandas as pd


GEMM = "gemm"  # the category the matrix-multiplication questions compare against
COMMUNICATION = "communication"  # NCCL kernels: their time holds a rank's wait for the others
CUDA_GRAPH = "cuda_graph"  # a whole CUDA graph's execution, traced as one record: its kernels unknown

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
    CUDA_GRAPH,
    "memcpy",
    "memset",
    "other",
)

# Categories whose kernels may run on tensor cores; every other kernel runs on CUDA cores.
MATRIX_CATEGORIES = frozenset({GEMM, "convolution", "attention"})


def _any_case(rule) -> re.Pattern:
    """A rule's `regex` compiled to match any case (its `pattern`)."""
    return re.compile(rule.regex, re.IGNORECASE)


class Rule(NamedTuple):
    """One classification rule: kernels whose demangled name matches `pattern` (`regex`, any
    case) are `category`.

    Names are matched by `lowercase`, the regex in lower case against the lower-cased name: the
    same answer (the rules are ASCII and hold no upper-case escapes), found several times faster
    than a case-insensitive search of a long templated name. `pattern` is compiled when asked for."""

    category: str
    regex: str
    reason: str
    lowercase: re.Pattern

    pattern = property(_any_case)


class TensorCoreRule(NamedTuple):
    """One tensor-core rule for matrix kernels: a match means `tensor_core` (fields as in `Rule`)."""

    tensor_core: bool
    regex: str
    reason: str
    lowercase: re.Pattern

    pattern = property(_any_case)


def _rule(category: str, regex: str, reason: str) -> Rule:
    return Rule(category, regex, reason, re.compile(regex.lower()))


def _tensor_core_rule(tensor_core: bool, regex: str, reason: str) -> TensorCoreRule:
    return TensorCoreRule(tensor_core, regex, reason, re.compile(regex.lower()))


def _first_match(rules: tuple, demangled: str):
    """The first of `rules` whose pattern matches the demangled name, or None."""
    lowered = demangled.lower()
    return next((rule for rule in rules if rule.lowercase.search(lowered)), None)


# ATen ops that only move or cast data, as Inductor lists them in a fused kernel's name
# (bmm/mm appear when the copy feeds a matrix multiplication outside the kernel).
TRITON_COPY_OPS = ("_unsafe_view", "view", "reshape", "clone", "contiguous", "permute",
                   "transpose", "t", "squeeze", "unsqueeze", "expand", "slice", "select", "split",
                   "split_with_sizes", "unbind", "as_strided", "alias", "cat", "stack", "index",
                   "gather", "_to_copy", "copy", "convert_element_type", "bmm", "mm")

RULES = (
    _rule(COMMUNICATION, r"nccl", "NCCL collectives and send/recv (ncclDevKernel_*)"),
    _rule(
        CUDA_GRAPH,
        r"^\[cuda graph ",
        "a CUDA graph traced whole (nsys --cuda-graph-trace=graph) is one record, [CUDA graph <graphId>], "
        "for all its kernels: their kinds are unknown, so its time is a category of its own",
    ),
    _rule(
        "reduction",
        r"multi_tensor_apply\w*<.*LpNormFunctor|lpnorm_cleanup",
        "a gradient norm over a list of tensors (clip_grad_norm_'s foreach norm: "
        "multi_tensor_apply_kernel<..., LpNormFunctor>, lpnorm_cleanup) is a reduction, not a step",
    ),
    _rule(
        "elementwise",
        r"_amp_foreach_non_finite_check_and_unscale|amp_update_scale",
        "AMP's GradScaler unscales gradients and checks them for inf/NaN through "
        "multi_tensor_apply before the optimizer runs: pointwise work, not the step",
    ),
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
        "softmax",
        r"\btriton_(?:per|red)_fused(?=\w*_exp_)(?=\w*_sum_)",
        "a Triton reduction that fuses exp with a sum (div, max, sub around them: "
        "triton_per_fused_div_exp_masked_fill_max_permute_sub_sum_view_*) is a fused softmax, its "
        "backward recomputing it included",
    ),
    _rule(
        "normalization",
        r"layer_?norm|rms_?norm|batch_?norm|group_?norm|instance_?norm|GammaBetaBackward"
        r"|\bbn_(fw|bw)|RowwiseMoments",
        "fused normalization kernels (vectorized_layer_norm_kernel, batch_norm_*, cuDNN bn_*, "
        "RowwiseMomentsCUDAKernel: the mean/rstd pass of layer and group norm); an RMSNorm "
        "written out in PyTorch is reduce + elementwise kernels",
    ),
    _rule(
        "normalization",
        r"\btriton_(?:per|red)_fused(?=\w*_mean_)(?=\w*_pow_)(?=\w*_r?sqrt_)(?=\w*_mul_)",
        "a Triton reduction fusing mean, pow, sqrt/rsqrt and mul is a fused RMSNorm "
        "(triton_per_fused_add_div_index_mean_mul_pow_sqrt_*)",
    ),
    _rule(
        "copy_cast",
        r"\btriton_poi_fused_(?:(?:" + "|".join(TRITON_COPY_OPS) + r")_)+\d*$",
        "a Triton pointwise kernel whose fused ops only move or cast data (clone, permute, "
        "transpose, view, cat, index...) is a copy, as eager's direct_copy kernels are; 'bmm'/'mm' "
        "in such a name is the consumer of the copied operand",
    ),
    _rule(
        "elementwise",
        r"\btriton_(?:poi|for)_",
        "Triton pointwise kernels: their names list the fused ATen ops, so 'bmm'/'mm' in "
        "triton_poi_fused_add_bmm_mul_permute_* does not make them matrix multiplications; "
        "triton_for_* kernels apply pointwise ops to a list of tensors (foreach fusion)",
    ),
    _rule(
        "reduction",
        r"\btriton_(red|per)_",
        "Triton reduction and persistent-reduction kernels (names list fused ops, not GEMMs)",
    ),
    _rule(
        "copy_cast",
        r"nchwToNhwc|nhwcToNchw",
        "cuDNN's layout transforms (nchwToNhwcKernel, nhwcToNchwKernel) copy tensors between "
        "memory layouts around a convolution; they compute nothing",
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
        r"gemm|gemv|nvjet|splitKreduce|cublasLt::epilogue|\btriton_tem_\w*mm",
        "cuBLAS/cuBLASLt and CUTLASS matrix multiplications: *gemm*/*gemv* (sm80_xmma_gemm_*, "
        "ampere_sgemm_*, cutlass_80_*gemm*), Hopper nvjet_* (no 'gemm' in the name), the split-K "
        "reduction and the cuBLASLt epilogue kernel (bias, activation) that finish a GEMM, Triton "
        "matmul templates triton_tem_*mm*",
    ),
    _rule(
        "copy_cast",
        r"copy_kernel|CatArray|gather|scatter|index_elementwise_kernel|indexing_backward"
        r"|index_put|embedding|indexSelect",
        "data movement: copies and dtype casts (direct_copy_kernel_cuda, bfloat16_copy_kernel_"
        "cuda, even inside elementwise templates), concatenation, gathers/scatters such as "
        "embedding lookups (vectorized_gather_kernel, indexSelectLargeIndex)",
    ),
    _rule(
        "reduction",
        r"reduce",
        "reductions (at::native::reduce_kernel for sum/mean/max, cub Device*Reduce*)",
    ),
    _rule(
        "elementwise",
        r"elementwise|triu_tril|dropout",
        "PyTorch pointwise ops (vectorized_/unrolled_elementwise_kernel, elementwise_kernel, "
        "random fills), masks (triu_tril_kernel) and dropout (fused_dropout_kernel_vec)",
    ),
)

TENSOR_CORE_RULES = (
    _tensor_core_rule(
        False,
        r"_ffma_|simt|sgemm|dgemm|gemv|scudnn|splitKreduce|cublasLt::epilogue",
        "fp32 FFMA/SIMT kernels (sm80_xmma_gemm_f32f32_*_ffma_*, cutlass_80_simt_sgemm_*, "
        "ampere_sgemm_*, cuDNN scudnn, gemv), the split-K reduction and the cuBLASLt epilogue "
        "run on CUDA cores",
    ),
    _tensor_core_rule(
        True,
        r"tensorop|nvjet|hmma|imma|gmma|[hsi]1688|[hsi]16816|[hs]884|i8816"
        r"|bf16|bfloat16|f16|fp16|half|tf32|e4m3|e5m2|fp8|\btriton_tem_",
        "tensor-core instructions or tile types in the name: tensorop, nvjet, hmma, wgmma, "
        "s1688/s16816/h884 tiles, bf16/f16/fp16/tf32/fp8 operands (fmha_*_fp16_*); Triton "
        "templates (triton_tem_*mm, flex attention) compute with tl.dot on tensor cores (an fp32 "
        "run with TF32 off is the one case the name cannot show)",
    ),
)


# The communication rule's pattern (tests/test_ranks.py checks that it comes first in RULES).
_COMMUNICATION_PATTERN = next(rule.pattern for rule in RULES if rule.category == COMMUNICATION)


def matching_rule(demangled: str) -> Rule | None:
    """Return the first rule of `RULES` that matches the demangled name, or None."""
    return _first_match(RULES, demangled)


# Name -> answer caches: traces share most kernel names, and a report classifies each name many times.
NAMES_CACHED = 8192


@lru_cache(maxsize=NAMES_CACHED)
def classify_name(demangled: str) -> str:
    """Return the category of one kernel from its demangled name (`other` when no rule matches)."""
    rule = matching_rule(demangled)
    return rule.category if rule else "other"


def is_communication(demangled: str) -> bool:
    """Whether a kernel of this name communicates (NCCL's rule, first in `RULES`, so that a name it
    matches is communication whatever the later rules say): its time holds its rank's wait for the
    others, not only its own work."""
    return bool(_COMMUNICATION_PATTERN.search(demangled))


def matching_tensor_core_rule(demangled: str) -> TensorCoreRule | None:
    """Return the first rule of `TENSOR_CORE_RULES` that matches the demangled name, or None."""
    return _first_match(TENSOR_CORE_RULES, demangled)


@lru_cache(maxsize=NAMES_CACHED)
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
    import numpy as np
    import pandas as pd

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


# nvjet names carry a type code after the architecture: operands, accumulator, output
# (nvjet_sm90_tst_*: bf16 operands, fp32 accumulate, bf16 output).
_NVJET_OPERANDS = r"nvjet_(?:sm\d+_)?{}[a-z]{{2}}_"

# Rules of the same shape as `RULES`, whose `category` is the precision a GEMM kernel computes in.
GEMM_PRECISION_RULES = (
    _rule("fp8", r"e4m3|e5m2|fp8", "fp8 operands (e4m3/e5m2 in the name)"),
    _rule(
        "bf16", r"bf16|bfloat16|" + _NVJET_OPERANDS.format("t"),
        "bf16 operands: bf16/bfloat16 in the name (ampere_bf16_s16816gemm_*, a splitKreduce "
        "writing __nv_bfloat16), nvjet type code t.. (nvjet_sm90_tst_*)"),
    _rule(
        "fp16", r"fp16|f16|half|h1688|h16816|h884|" + _NVJET_OPERANDS.format("h"),
        "fp16 operands: fp16/f16/half or an h* MMA tile in the name, nvjet type code h.."),
    _rule(
        "tf32", r"tf32|s1688gemm|" + _NVJET_OPERANDS.format("s"),
        "fp32 data on TF32 tensor cores: tf32 in the name (sm80_xmma_gemm_tf32tf32_*, "
        "nvjet_sss_tf32_*), CUTLASS s1688gemm tiles (fp32 in and out, m16n8k8 TF32 MMA), nvjet "
        "type code s.. (nvjet always runs on tensor cores)"),
    _rule(
        "fp32", r"_ffma_|simt|sgemm|gemv|f32f32_f32f32",
        "fp32 on CUDA cores: FFMA/SIMT kernels (sm80_xmma_gemm_f32f32_f32f32_*_ffma_*, "
        "cutlass_80_simt_sgemm_*, ampere_sgemm_*, gemv)"),
)


@lru_cache(maxsize=NAMES_CACHED)
def gemm_precision(demangled: str) -> str | None:
    """Precision a GEMM kernel computes in, from its name (`GEMM_PRECISION_RULES`), or None
    when the name does not tell (a split-K reduction or epilogue in fp32, a Triton template)."""
    rule = _first_match(GEMM_PRECISION_RULES, demangled)
    return rule.category if rule else None


def gemm_precision_mix(kernels: pd.DataFrame) -> dict[str, float]:
    """Share of the GEMM kernels' time per precision, largest first, over the rows of `kernels`
    (columns `demangled_name`, `dur_ns`); GEMMs whose name tells no precision count as
    `unknown`. Empty when no kernel is a GEMM."""
    import numpy as np
    import pandas as pd

    codes, distinct = pd.factorize(kernels["demangled_name"])
    distinct = [str(name) for name in distinct] + ["nan"]  # code -1, a missing name, reads "nan" as astype(str) would
    is_gemm = np.array([classify_name(name) == GEMM for name in distinct], dtype=bool)[codes]
    precision = np.array([gemm_precision(name) or "unknown" for name in distinct], dtype=object)
    gemm_ns = pd.Series(kernels["dur_ns"].to_numpy()[is_gemm], dtype="float64")
    if not len(gemm_ns) or not gemm_ns.sum():
        return {}
    shares = gemm_ns.groupby(precision[codes][is_gemm]).sum() / gemm_ns.sum()
    return {str(name): float(share) for name, share in shares.sort_values(ascending=False).items()}
