"""How a question is declared: one :class:`Question` per question, in the question's own module.

A declaration holds what the report shows (id, editions, section, title, wording, inputs, figure)
and the computations: ``per_trace`` (nsys questions: one trace's :class:`NsysInputs` -> a
JSON-ready record, kept in the summary under ``questions[summary_key]``), ``compute`` (every
input -> a :class:`~analysis.records.ResultsAnswer` of tables and numbers, or
:class:`~analysis.records.Unanswered`) and ``write`` (that answer -> its text). ``record`` types the per-trace record for the summary's
JSON schema.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from analysis.questions.results_files import ResultsSet
from analysis.records import EDITION_2025, FigureSpec, QuestionCard, ResultsAnswer, Unanswered

TRACES = "traces"
RESULTS = "results files"


@dataclass(frozen=True)
class Evidence:
    """Every input of the cross-trace computations: the trace summaries (sorted for the report)
    and the results files."""

    summaries: list[dict]
    results: ResultsSet


@dataclass(frozen=True)
class Question:
    """A question's declaration; see the module docstring."""

    id: str
    section: str
    title: str
    text: str
    needs: str
    compute: Callable[[Evidence], ResultsAnswer | Unanswered]
    write: Callable[[ResultsAnswer], str] | None = None
    per_trace: Callable | None = None
    record: type | None = None  # the TypedDict of the per-trace record
    summary_key: str | None = None
    figure: FigureSpec | None = None
    editions: tuple[str, ...] = (EDITION_2025,)
    reads_traces: bool = False  # a cross-trace question that reads summaries without a per-trace record

    @property
    def card(self) -> QuestionCard:
        """What the render layer sees of this question."""
        source = TRACES if self.per_trace or self.reads_traces else RESULTS
        return QuestionCard(self.id, self.editions, self.section, self.title, self.text, source, self.needs,
                            self.figure)

    def answer(self, evidence: Evidence) -> ResultsAnswer | Unanswered:
        """The cross-trace answer: ``compute``, then ``write`` for the text when declared."""
        result = self.compute(evidence)
        if isinstance(result, ResultsAnswer) and self.write is not None:
            result = replace(result, answer=self.write(result))
        return result


def from_results(answer: Callable[[ResultsSet], ResultsAnswer | Unanswered]
                 ) -> Callable[[Evidence], ResultsAnswer | Unanswered]:
    """A results-file question's ``compute``: it reads only the results files."""
    return lambda evidence: answer(evidence.results)
