"""The questions the report answers, in the order of the assignment, each with its one-line wording
and where its answer comes from (the traces, or a function of the runner's results files)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from analysis.questions import attention, bench, compile, memory, mixed_precision

TRACES = "traces"
RESULTS = "results files"


@dataclass(frozen=True)
class Question:
    """One report page: ``id`` (also the page's file stem), section, title and the question itself.

    ``answer`` is the results-file function (``ResultsSet -> ResultsAnswer | Unanswered``); nsys
    questions have ``nsys_key`` instead, the key of the per-trace answer in a summary's ``questions``.
    """

    id: str
    section: str
    title: str
    question: str
    answer: Callable | None = None
    nsys_key: str | None = None

    @property
    def source(self) -> str:
        return TRACES if self.nsys_key else RESULTS

    @property
    def page(self) -> str:
        return f"question-{self.id}"


QUESTIONS = (
    Question("bench-b", "Benchmarking", "Forward and backward times",
             "Forward and backward times (mean ± std) for every size: is the spread small?", bench.answer_bench_b),
    Question("bench-c", "Benchmarking", "Warm-up steps",
             "The same without warm-up and with 1–2 warm-up steps: how and why do results differ?",
             bench.answer_bench_c),
    Question("nsys-a", "nsys_profile", "Forward time: nsys against Python",
             "Total forward-pass time as nsys sees it, against the Python timer of the same steps.", nsys_key="a"),
    Question("nsys-b", "nsys_profile", "The leading kernel",
             "Which kernel takes the most GPU time in the forward pass, how many times does it run in one pass, "
             "and does it still lead with the backward pass?", nsys_key="b"),
    Question("nsys-c", "nsys_profile", "Non-matmul kernels",
             "Which non-matmul kernels take non-trivial time in the forward pass?", nsys_key="c"),
    Question("nsys-d", "nsys_profile", "Matmul share: inference against training",
             "Fraction of GPU time in matrix multiplication, forward only against a full training step; "
             "how do the other categories move?", nsys_key="d"),
    Question("nsys-e", "nsys_profile", "Softmax against matmuls in attention",
             "Inside self-attention, softmax time against the two matmuls' time, compared with their FLOPs ratio.",
             nsys_key="e"),
    Question("mp-accum", "Mixed precision", "Accumulation loops",
             "The four accumulation loops (fp32, fp16, fp32 + fp16, fp32 + upcast fp16): results and errors.",
             mixed_precision.answer_mp_accum),
    Question("mp-a", "Mixed precision", "ToyModel dtypes under autocast",
             "Under autocast, what dtypes do the parameters, activations, loss and gradients have?",
             mixed_precision.answer_mp_a),
    Question("mp-c", "Mixed precision", "bf16 autocast timings",
             "Forward and backward time with and without bf16 autocast for every size: what is the trend?",
             mixed_precision.answer_mp_c),
    Question("mem-a", "Memory", "Memory over a step",
             "Allocated memory over a forward pass and over a full training step.", memory.answer_mem_a),
    Question("mem-b", "Memory", "Peak memory per context length",
             "Peak memory per context length: forward only against a full training step.", memory.answer_mem_b),
    Question("mem-c", "Memory", "Peak memory with bf16 autocast",
             "The same peaks under bf16 autocast: does mixed precision change peak memory much?",
             memory.answer_mem_c),
    Question("mem-d", "Memory", "One residual-stream activation",
             "Size of one residual-stream activation tensor in fp32, in MB, and its derivation.", memory.answer_mem_d),
    Question("mem-e", "Memory", "Largest allocations",
             "The largest allocations of the forward pass and where they come from.", memory.answer_mem_e),
    Question("attn-a", "Attention", "Attention at scale",
             "Eager attention over head dimension × sequence length: time, memory before backward, out-of-memory "
             "configurations and their accounting.", attention.answer_attn_a),
    Question("compile-a", "torch.compile", "Compiled attention",
             "The attention grid compiled, side by side with eager.", compile.answer_compile_a),
    Question("compile-b", "torch.compile", "Compiled model",
             "The whole model compiled against eager: forward, and forward + backward + optimizer.",
             compile.answer_compile_b),
)
