"""What the analysis hands the render layer: plain data, no computation.

A :class:`QuestionCard` describes a question (from its declaration in
:mod:`analysis.questions.registry`); a :class:`QuestionRecord` is its answer across every input:
the card, the answer text, the tables and the inputs used, or what the inputs lack. A
:class:`FigureSpec` says what to draw from the record's tables; :mod:`analysis.report` draws it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


EDITION_2025 = "2025"
EDITION_2026 = "2026"


@dataclass(frozen=True)
class FigureSpec:
    """A question's figure: ``kind`` names a drawing of :mod:`analysis.report.bar_figures` or
    :mod:`analysis.report.line_figures` (``trace_bars`` for the shared per-trace bar chart, else
    the question id), ``params`` its
    declarative settings (column names, labels, scales), ``alt`` the figure's alt text."""

    kind: str
    params: dict = field(default_factory=dict)
    alt: str = ""


@dataclass(frozen=True)
class QuestionCard:
    """A question as the report shows it.

    ``editions``: the handout editions that ask it; ``source``: ``traces`` or ``results files``;
    ``needs``: the inputs it needs, with the command that makes them.
    """

    id: str
    editions: tuple[str, ...]
    section: str
    title: str
    text: str
    source: str
    needs: str
    figure: FigureSpec | None = None
    page_suffix: str = ""  # the edition, on the pages of a question asked by several editions but the first

    @property
    def page(self) -> str:
        """The stem of the question's page files."""
        return f"question-{self.id}{self.page_suffix}"


@dataclass(frozen=True)
class ResultsAnswer:
    """A question answered across the inputs (the cross-trace computation's output).

    ``tables`` maps a table title to a DataFrame whose column names carry their units
    (``forward_ms_mean``, ``peak_memory_bytes``); a ``status`` column marks rows that ran out of
    memory (``OOM``), whose measurements are null. ``inputs`` are the file names read.
    ``answer`` is the answer text: after :meth:`~analysis.questions.question.Question.answer`, its
    lead (the conclusion in at most :data:`analysis.core.text.LEAD_WORDS` words), with the evidence
    sentences that followed it in ``details``; ``numbers`` the headline figures it was written from.
    ``downloads`` maps a title to a table too long to show (thousands of rows): the page links it
    as a CSV file written beside it.
    """

    question: str
    answer: str
    tables: dict[str, pd.DataFrame]
    inputs: tuple[str, ...]
    numbers: dict = field(default_factory=dict)
    downloads: dict[str, pd.DataFrame] = field(default_factory=dict)
    details: str = ""

    @property
    def full_answer(self) -> str:
        """The lead and the details as one text."""
        return " ".join(filter(None, (self.answer, self.details)))


@dataclass(frozen=True)
class Unanswered:
    """A question the inputs cannot answer, and what it would need."""

    question: str
    needs: str


@dataclass(frozen=True)
class QuestionRecord:
    """One question of the report with its answer (``result``), ready to draw."""

    card: QuestionCard
    result: ResultsAnswer | Unanswered

    @property
    def answered(self) -> bool:
        return isinstance(self.result, ResultsAnswer)


@dataclass(frozen=True)
class DiffRecord:
    """Two summaries compared (``diff``: :func:`analysis.compare.diff.diff_summaries`);
    ``changed`` names the one setting that differs, empty when the pair was chosen by hand."""

    a: dict
    b: dict
    changed: str
    diff: dict


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows: summaries (sorted), one record per question, the diff pairs,
    the sweep table's latest row per configuration, the GPUs named by the results files and their
    file names."""

    summaries: list[dict]
    questions: list[QuestionRecord]
    diffs: list[DiffRecord]
    sweep: pd.DataFrame
    results_gpus: list[str] = field(default_factory=list)
    results_files: list[str] = field(default_factory=list)
    input_problems: list[str] = field(default_factory=list)  # values of the results files left out
