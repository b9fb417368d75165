"""One model under both handouts' names: the 2026 handout renamed sizes (its ``xl`` is 2025's
``2.7B``), so a 2026 question can be answered from a 2025 run of the same dimensions, and says so."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from analysis.questions.question import Evidence
from analysis.questions.records import ResultsAnswer, Unanswered
from analysis.questions.shared.results_files import ResultsSet, results_edition
from cs336_profile.config import SIZES_BY_HANDOUT


def same_model(size: str, handout: str, other_handout: str) -> str | None:
    """The name ``other_handout`` gives the model that ``handout`` calls ``size`` (same d_model,
    d_ff, layers and heads), or None when it has no such model."""
    model = SIZES_BY_HANDOUT.get(handout, {}).get(size)
    names = [name for name, other in SIZES_BY_HANDOUT.get(other_handout, {}).items() if other == model]
    return names[0] if model is not None and names else None


def from_same_model(answer: Callable[[ResultsSet], ResultsAnswer | Unanswered]
                    ) -> Callable[[Evidence], ResultsAnswer | Unanswered]:
    """A results-file question's ``compute`` that, where the page's own edition has no results to
    answer from, answers from another edition's runs of the same models, renamed to this edition's
    size names (:func:`renamed_results`), and says so at the head of its answer."""
    def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
        result = answer(evidence.results)
        if not isinstance(result, Unanswered) or evidence.other_editions is None or evidence.edition is None:
            return result
        borrowed, renamed = renamed_results(evidence.other_editions.results, evidence.edition)
        other = answer(borrowed) if renamed else result
        if not isinstance(other, ResultsAnswer):
            return result
        names = "; ".join(f"{edition}'s {old} is this handout's {new}" for (edition, old), new in renamed.items())
        return replace(other, answer=f"From the earlier handout's runs of the same model ({names}, same dimensions): "
                                     + other.answer)
    return compute


def renamed_results(results: ResultsSet, edition: str) -> tuple[ResultsSet, dict[tuple[str, str], str]]:
    """``results`` with every row's size renamed to ``edition``'s name of the same model (rows of
    a model ``edition`` lacks dropped; rows without a size kept), and the renames made:
    (document's edition, old size) -> new size."""
    documents, renamed = {}, {}
    for name, document in results.documents.items():
        source = results_edition(document)
        rows = []
        for row in document["rows"]:
            size = row.get("size") if isinstance(row, dict) else None
            new = same_model(size, source, edition) if size is not None else None
            if size is not None and new is None:
                continue
            if new is not None:
                renamed[(source, size)] = new
                row = {**row, "size": new, "handout": edition}
            rows.append(row)
        documents[name] = {**document, "rows": rows}
    return ResultsSet(documents, results.problems), {key: new for key, new in renamed.items() if key[1] != new}
