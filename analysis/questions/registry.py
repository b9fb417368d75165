"""Every question of the report, in the order of the handout; each is declared once, in its own
module (:class:`~analysis.questions.question.Question`).

To add a question: declare a ``Question`` in its module, list it in :data:`QUESTIONS`, and, when
its figure is a new kind, add the drawing to :data:`analysis.report.bar_figures.DRAWINGS` (bars)
or :data:`analysis.report.line_figures.DRAWINGS` (lines, a grid). A question answered per trace
also gets its figures module in :mod:`analysis.trace.question_figures` (``per_trace``, ``record``)
and a ``write_trace``; ``python docs/generate.py`` then writes its record into the documented
schema. The catalog, the index, the figures, the summary's ``questions`` section, its sentences,
the cache key and the pages follow.
"""
from __future__ import annotations

from dataclasses import replace

from analysis.questions import (
    attention,
    bench,
    checkpointing,
    compile,
    ddp_b,
    fsdp_b,
    mem_f,
    memory,
    mixed_precision,
    norm_precision,
    nsys_a,
    nsys_b,
    nsys_c,
    nsys_d,
    nsys_e,
)
from analysis.questions.question import Question
from analysis.questions.records import EDITION_2025, EDITION_2026


def both_editions(question: Question) -> Question:
    """A question the 2026 handout asks as 2025's did (nsys_profile (a)–(e), memory (a)–(e))."""
    return replace(question, editions=(EDITION_2025, EDITION_2026))


QUESTIONS: tuple[Question, ...] = (
    bench.BENCH_B, bench.BENCH_C,
    *map(both_editions, (nsys_a.QUESTION, nsys_b.QUESTION, nsys_c.QUESTION, nsys_d.QUESTION, nsys_e.QUESTION)),
    mixed_precision.MP_ACCUM, mixed_precision.MP_A, norm_precision.MP_B, mixed_precision.MP_C,
    *map(both_editions, (memory.MEM_A, memory.MEM_B, memory.MEM_C, memory.MEM_D, memory.MEM_E)), mem_f.MEM_F,
    attention.ATTN_A, checkpointing.CKPT_B,
    compile.COMPILE_A, compile.COMPILE_B,
    ddp_b.QUESTION, fsdp_b.QUESTION,
)
PER_TRACE: tuple[Question, ...] = tuple(q for q in QUESTIONS if q.per_trace is not None)


def question(question_id: str) -> Question:
    """The declaration of ``question_id``."""
    return next(q for q in QUESTIONS if q.id == question_id)
