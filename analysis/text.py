"""Numbers and kernel names as the answer sentences write them (the JSON keeps exact values)."""
from __future__ import annotations

import re

KERNEL_LABEL_CHARS = 80
_ANONYMOUS_NAMESPACE = re.compile(r"(<unnamed>|\(anonymous namespace\))::")
_TEMPLATE_OR_ARGS = re.compile(r"[<(]")
# The operation a generic kernel template runs: PyTorch functors and kernel bodies (MulFunctor,
# MeanOps, direct_copy_kernel_cuda) or the CUTLASS kernel inside cutlass::Kernel2. The generic
# wrappers around them say nothing about the operation.
_OPERATION = re.compile(r"\b(\w+(?:Functor\w*|Ops|_cuda_kernel|_kernel_cuda)|cutlass_\w+)\b")
_GENERIC_WRAPPERS = frozenset({"BinaryFunctor", "AUnaryFunctor", "BUnaryFunctor", "UnaryFunctor"})


def ms(value_ms: float) -> str:
    """``38.26 ms``, ``412 µs``: about three significant figures."""
    if abs(value_ms) < 1:
        return f"{value_ms * 1000:.3g} µs"
    return f"{value_ms:.2f} ms" if abs(value_ms) < 100 else f"{value_ms:,.0f} ms"


def pct(fraction: float) -> str:
    """``45.7%`` from 0.457."""
    return f"{fraction * 100:.1f}%"


def count(value: float) -> str:
    """Whole counts without decimals, fractional counts with one."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def plural(value: float, noun: str) -> str:
    """``1 call``, ``73 calls``, ``1.5 calls``."""
    return f"{count(value)} {noun}" if value == 1 else f"{count(value)} {noun}s"


def kernel_label(demangled: str) -> str:
    """A demangled kernel name short enough for a sentence, in backticks: its own name without
    namespaces, template or arguments, plus the operation a generic template wraps, e.g.
    ```elementwise_kernel (MulFunctor)```."""
    name = _ANONYMOUS_NAMESPACE.sub("", demangled.removeprefix("void ").strip())
    cut = _TEMPLATE_OR_ARGS.search(name)
    head, rest = (name[: cut.start()], name[cut.start():]) if cut and cut.start() > 0 else (name, "")
    label = head.rsplit("::", 1)[-1]
    operation = next((op for op in _OPERATION.findall(rest) if op not in _GENERIC_WRAPPERS), None)
    if operation:
        label += f" ({operation})"
    if len(label) > KERNEL_LABEL_CHARS:
        label = label[: KERNEL_LABEL_CHARS - 1] + "…"
    return f"`{label}`"


def kernel_cell(demangled: str) -> str:
    """The short kernel name of the answers, without its Markdown backticks (a table cell)."""
    return kernel_label(demangled).strip("`")
