"""How a question is declared: one :class:`Question` per question, in the question's own module.

A declaration holds what the report shows (id, editions, section, title, wording, inputs, figure)
and the computations. Per trace (nsys questions): ``per_trace`` (one trace's
:class:`~analysis.trace.nsys_inputs.NsysInputs` and ``phases`` section -> a JSON-ready record of
figures, kept in the summary under ``questions[summary_key]``; it lives in
:mod:`analysis.trace.question_figures`, whose code keys the results cache), ``record`` (its
TypedDict, for the summary's JSON schema) and ``write_trace`` (that record and the summary -> the
record's ``answer`` sentence, added when the summary is shown). Across traces: ``compute`` (every
input -> a :class:`~analysis.questions.records.ResultsAnswer` of tables and numbers, or
:class:`~analysis.questions.records.Unanswered`) and ``write`` (that answer -> its text).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from analysis.core.text import lead_and_details
from analysis.questions.records import EDITION_2025, FigureSpec, QuestionCard, ResultsAnswer, Unanswered
from analysis.questions.shared.results_files import ResultsSet

TRACES = "traces"
RESULTS = "results files"


@dataclass(frozen=True)
class Evidence:
    """Every input of the cross-trace computations: the trace summaries (sorted for the report)
    and the results files of the page's edition; ``other_editions`` holds the inputs of the other
    handout editions, for an answer that compares the same model across them (``None`` where the
    page already reads every input), and ``edition`` names the page's edition then."""

    summaries: list[dict]
    results: ResultsSet
    other_editions: Evidence | None = None
    edition: str | None = None  # the handout edition of the page, where it reads one edition's inputs


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
    per_trace: Callable[..., dict] | None = None
    record: type | None = None  # the TypedDict of the per-trace record
    write_trace: Callable[[dict, dict], str] | None = None
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
        """The cross-trace answer: ``compute``, then ``write`` for the text when declared; the
        text split into its lead and details (:func:`analysis.core.text.lead_and_details`)."""
        result = self.compute(evidence)
        if not isinstance(result, ResultsAnswer):
            return result
        if self.write is not None:
            result = replace(result, answer=self.write(result))
        lead, details = lead_and_details(result.answer)
        return replace(result, answer=lead, details=details)


def from_results(answer: Callable[[ResultsSet], ResultsAnswer | Unanswered]
                 ) -> Callable[[Evidence], ResultsAnswer | Unanswered]:
    """A results-file question's ``compute``: it reads only the results files."""
    return lambda evidence: answer(evidence.results)
