"""Every question of the report, in the order of the handout; each is declared once, in its own
module (:class:`~analysis.questions.question.Question`).

To add a question: declare a ``Question`` in its module, list it in :data:`QUESTIONS`, and, when
its figure is a new kind, add the drawing to :data:`analysis.report.figures.DRAWINGS`. The
catalog, the index, the figures, the summary's ``questions`` section and the pages follow.
"""
from __future__ import annotations

from analysis.questions import (attention, bench, compile, ddp_b, fsdp_b, memory, mixed_precision, nsys_a, nsys_b,
                                nsys_c, nsys_d, nsys_e)
from analysis.questions.question import Question

QUESTIONS: tuple[Question, ...] = (
    bench.BENCH_B, bench.BENCH_C,
    nsys_a.QUESTION, nsys_b.QUESTION, nsys_c.QUESTION, nsys_d.QUESTION, nsys_e.QUESTION,
    mixed_precision.MP_ACCUM, mixed_precision.MP_A, mixed_precision.MP_C,
    memory.MEM_A, memory.MEM_B, memory.MEM_C, memory.MEM_D, memory.MEM_E,
    attention.ATTN_A,
    compile.COMPILE_A, compile.COMPILE_B,
    ddp_b.QUESTION, fsdp_b.QUESTION,
)
PER_TRACE: tuple[Question, ...] = tuple(q for q in QUESTIONS if q.per_trace is not None)


def question(question_id: str) -> Question:
    """The declaration of ``question_id``."""
    return next(q for q in QUESTIONS if q.id == question_id)
