"""Short display labels for kernels: one label names one kernel and the operation it runs.

Demangled CUDA kernel names run to hundreds of characters, and their readable head is shared by
many kernels (``at::native::vectorized_elementwise_kernel<...>`` multiplies, adds, fills...). A
label keeps what tells kernels apart and drops what does not:

- PyTorch's elementwise templates become ``elementwise <op> (<launch>)``: the op is the functor
  or the ATen kernel the template runs (``MulFunctor<float>``, ``masked_fill<float, bool>``,
  ``pow_tensor_scalar<float, float>``), the launch the template's variant and its vector size
  or block, then whether it casts and which operand is a scalar
  (``elementwise MulFunctor<float> (vectorized 4, scalar a)``); the random, scatter/gather and
  reduction templates alike (``reduce sum_functor<float, float, float> (512x1, 4x4)``: block,
  then vector sizes);
- every other templated kernel keeps its own name and its template arguments, with namespaces,
  integer casts and lambda boilerplate removed;
- cuBLAS's xmma GEMMs keep their types, layout, tile, stages, warps and math, less the
  suffixes every one of them repeats; other names without templates stay whole.

Distinct names give distinct labels on every kernel of the recorded traces (a test checks it).
"""
from __future__ import annotations

import re
from functools import lru_cache

_NAMESPACE = re.compile(r"\b(?:[A-Za-z_]\w*::)+(?=[A-Za-z_~])")
_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|char|short|bool|long long|unsigned)\)")
_LAMBDA_SCOPE = re.compile(r"(?:::)?\[lambda\(([^()]*)\) \(instance (\d+)\)\]")
_OPERATOR_CALL = re.compile(r"::operator \(\)\(\) const")
_ANONYMOUS = re.compile(r"<unnamed>::|\(anonymous namespace\)::")

# PyTorch's templates whose first arguments are launch sizes and whose other arguments name the
# operation: the family shown in the label, and for elementwise ones the variant.
_FAMILIES = {"vectorized_elementwise_kernel": ("elementwise", "vectorized"),
             "unrolled_elementwise_kernel": ("elementwise", "unrolled"),
             "elementwise_kernel": ("elementwise", "strided"),
             "elementwise_kernel_with_index": ("elementwise", "with index"),
             "reduce_kernel": ("reduce", ""),
             "distribution_elementwise_grid_stride_kernel": ("random", ""),
             "_scatter_gather_elementwise_kernel": ("scatter/gather", "")}
_SCALAR_OPERAND = {"AUnaryFunctor": "scalar a", "BUnaryFunctor": "scalar b"}
# What names an operation inside those templates: a functor, or the ATen kernel hosting a lambda.
_FUNCTOR = re.compile(r"\b(?!(?:AUnary|BUnary|Binary)Functor\b|ReduceOp\b)"
                      r"(\w+(?:Functor|functor|Ops)\w*|TensorAssign|Reduce[A-Z]\w*)\b")
_ATEN_KERNEL = re.compile(r"\b(?!gpu_kernel_impl)_?(?:launch_)?(\w+?)(?:_kernel_cuda|_cuda_kernel"
                          r"|_kernel_impl|_kernel|_cuda_out|CUDAKernelImpl|_scalar)\b")
_XMMA = re.compile(r"^(sm\d+)_xmma_gemm_(\w+?)_([nt][nt])_n_tilesize(\w+?)_stage(\d+)"
                   r"_warpsize(\w+?)_(\w+?)_aligna\d+_alignc\d+_execute(_split_k)?_kernel__5x_cublas$")


@lru_cache(maxsize=8192)  # traces share most kernel names, and every report labels them again
def kernel_label(demangled: str) -> str:
    """A short label that names one kernel and its operation (see the module docstring)."""
    name = _ANONYMOUS.sub("", demangled.strip()).removeprefix("void ")
    head, args = _split_template(_drop_parameters(name))
    if args is None:
        return _xmma_label(head) or head
    kernel = head.rsplit("::", 1)[-1]
    parts = _split_args(args)
    if kernel not in _FAMILIES:
        return f"{kernel}<{', '.join(_compact(part) for part in parts)}>"
    return _family_label(kernel, parts)


def _family_label(kernel: str, parts: list[str]) -> str:
    """``<family> <op> (<launch and operand details>)`` for one of the `_FAMILIES` templates."""
    family, variant = _FAMILIES[kernel]
    leading = []
    while parts and re.fullmatch(r"[\w ()]+", parts[0]):
        leading.append(_CAST.sub("", parts.pop(0)).strip())
    body = _compact(", ".join(parts))
    numbers = [arg for arg in leading if arg.isdigit()]
    details = [" ".join(filter(None, [variant, "x".join(numbers)]))]
    details += [arg for arg in leading if not arg.isdigit()]
    if "gpu_kernel_impl<" in body:
        details.append("casting")
    details += [label for wrapper, label in _SCALAR_OPERAND.items() if wrapper + "<" in body]
    if family == "reduce":
        vector_sizes = re.findall(r", (\d+)(?=[,>])", body[body.rfind(">", 0, len(body) - 1):])
        details.append("x".join(vector_sizes))
    if kernel == "elementwise_kernel_with_index":
        details += [f"branch {n}" for n in re.findall(r"λ\(\)#(\d+)", body)[-1:]]
    details = [detail for detail in details if detail]
    return f"{family} {_operation(body)}" + (f" ({', '.join(details)})" if details else "")


def _operation(body: str) -> str:
    """The operation a template body runs: its functor with its type arguments, else the ATen
    kernel hosting its lambda, with its own template arguments or the lambda's argument types
    (and the lambda's instance when it is not the first: pow's exponent specialisations)."""
    functor = _FUNCTOR.search(body)
    aten = _ATEN_KERNEL.search(body)
    template = _template_after(body, aten.end()) if aten else ""
    simple = template if "(" not in template and "*" not in template else ""
    if functor:
        own = _template_after(body, functor.end())
        return functor.group(1) + (own or (f" {simple}" if simple else ""))
    if not aten:
        return body.split(",")[0].split("<")[0].strip()
    typed = [(args, n) for args, n in re.findall(r"λ\(([^()]+)\)#(\d+)", body[aten.end():])
             if "*" not in args]
    label = aten.group(1) + (simple or (f"<{typed[0][0]}>" if typed else ""))
    return label + (f" #{typed[0][1]}" if typed and typed[0][1] != "1" else "")


def _template_after(text: str, position: int) -> str:
    """The template arguments that start at ``position`` of ``text``, brackets included, or ""."""
    return _matching(text[position:])[0] if text[position:].startswith("<") else ""


def _xmma_label(name: str) -> str | None:
    """cuBLAS's xmma GEMM names less what every one of them repeats:
    ``sm80 xmma gemm f32 tn 64x64x8 stage3 warps1x4x1 ffma``, ``split-K`` appended."""
    match = _XMMA.match(name)
    if not match:
        return None
    arch, types, layout, tile, stage, warps, math, split = match.groups()
    types = "f32" if set(re.split(r"_|(?<=32)(?=f)", types)) == {"f32"} else types
    return (f"{arch} xmma gemm {types} {layout} {tile} stage{stage} warps{warps} {math}"
            + (" split-K" if split else ""))


def _compact(text: str) -> str:
    """Template text without namespaces, integer casts and lambda plumbing."""
    text = _OPERATOR_CALL.sub("", text)
    text = _LAMBDA_SCOPE.sub(lambda m: f" λ({m.group(1)})#{m.group(2)}", text)
    text = _NAMESPACE.sub("", text)
    text = _CAST.sub("", text)
    return re.sub(r"\s+", " ", text.replace("operator ()", "")).strip()


def _drop_parameters(name: str) -> str:
    """The name without its parameter list (the first "(" outside template brackets)."""
    depth = 0
    for i, char in enumerate(name):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0 and i > 0:
            return name[:i]
    return name


def _split_template(name: str) -> tuple[str, str | None]:
    """(name before its template arguments, the arguments' text) or (name, None)."""
    start = name.find("<")
    if start < 0:
        return name, None
    inner, _ = _matching(name[start:])
    return name[:start], inner[1:-1]


def _matching(text: str) -> tuple[str, int]:
    """The bracketed prefix of ``text`` (which starts with "<"), brackets included, and its end."""
    depth = 0
    for i, char in enumerate(text):
        depth += (char == "<") - (char == ">")
        if depth == 0:
            return text[: i + 1], i + 1
    return text, len(text)


def _split_args(args: str) -> list[str]:
    """Top-level comma-separated template arguments."""
    parts, depth, current = [], 0, []
    for char in args:
        depth += (char in "<([") - (char in ">)]")
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return parts
