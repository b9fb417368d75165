"""The runner's results files as the results-file questions read them, and what those questions return.

A results folder holds `<name>.json` documents `{"experiment", "created", "environment", "config",
"rows"}` (docs/architecture.md). :func:`read_results_dir` keeps every document that has that
shape; :func:`experiment_rows` gathers the rows of one experiment across files, each row tagged
with the file it came from, so a question can say which inputs it used.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.core.numbers import is_number, number_problem
from analysis.core.runs import size_order
from analysis.questions.records import ResultsAnswer, Unanswered  # noqa: F401  (what the questions return)
from cs336_profile.config import DEFAULT_HANDOUT
from cs336_profile.contract import STATUS_OK

if TYPE_CHECKING:
    import pandas as pd

RESULTS_FILE_COLUMN = "results_file"


@dataclass(frozen=True)
class ResultsSet:
    """Every results document of a folder, by file name."""

    documents: dict[str, dict] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # one line per value left out while reading

    def experiment_rows(self, experiment: str) -> pd.DataFrame:
        """Rows of every document of ``experiment``, with a ``results_file`` column (empty if none)."""
        import pandas as pd

        frames = [
            pd.DataFrame(doc["rows"]).assign(**{RESULTS_FILE_COLUMN: name})
            for name, doc in sorted(self.documents.items())
            if doc["experiment"] == experiment and doc["rows"]
        ]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def environments(self, experiment: str) -> list[dict]:
        """The ``environment`` blocks of the documents of ``experiment``."""
        return [doc.get("environment") or {} for doc in self.documents.values() if doc["experiment"] == experiment]


def read_results_dir(results_dir: str | Path | None) -> ResultsSet:
    """Load every results document (`*.json` with ``experiment`` and ``rows``) in a folder and its
    subfolders (an edition's results, e.g. ``2026/``), keyed by path relative to the folder.

    An experiment is taken from the shallowest level that has it: a subfolder adds experiments the
    folder lacks (``layernorm``), never more runs of one it has (its ``bench`` rows of another
    edition stay out of this edition's answers). Other JSON files (timings, snapshots' metadata)
    are skipped; a missing folder gives an empty set.
    """
    if results_dir is None or not Path(results_dir).is_dir():
        return ResultsSet()
    root = Path(results_dir)
    paths = sorted(root.rglob("*.json"), key=lambda p: (len(p.relative_to(root).parts), p.as_posix()))
    documents, depth_of, problems = {}, {}, []
    for path in paths:
        document = _json_document(path, path.relative_to(root).as_posix(), problems)
        if not (isinstance(document, dict) and isinstance(document.get("experiment"), str)
                and isinstance(document.get("rows"), list)):
            continue
        depth = len(path.relative_to(root).parts)
        if depth_of.setdefault(document["experiment"], depth) == depth:
            name = path.relative_to(root).as_posix()
            documents[name] = {**document, "rows": _valid_rows(name, document["rows"], problems)}
    return ResultsSet(documents, tuple(problems))


def _json_document(path: Path, name: str, problems: list[str]):
    """The parsed JSON of ``path``, or None: silently for a file that is not JSON (not a results
    file), with a problem line for one that cannot be read. A FIFO or device is never opened (it
    could block)."""
    if not path.is_file():
        problems.append(f"{name}: is not a regular file; left out")
        return None
    try:
        return json.loads(path.read_text())
    except RecursionError:
        problems.append(f"{name}: its JSON is nested too deeply to read; left out")
    except OSError as err:
        problems.append(f"{name}: cannot be read ({err.strerror or err}); left out")
    except ValueError:
        pass
    return None


def _value_problem(key: str, value, numeric: bool) -> str | None:
    """Why a row's value is left out: a non-number in a column of numbers, or a number that cannot
    be the quantity (:func:`analysis.core.numbers.number_problem`)."""
    if value is None:
        return None
    if not is_number(value):
        return "not a number" if numeric else None
    return number_problem(key, value)


def _valid_rows(name: str, rows: list, problems: list[str]) -> list[dict]:
    """The rows that are objects, with each value that is not a number in a column of numbers
    (one holding at least as many numbers as other values, nulls aside), and each number that
    cannot be its quantity (NaN, Infinity, 1e308, a negative time), made null; one problem line
    per change."""
    kept = [row for row in rows if isinstance(row, dict)]
    if len(kept) < len(rows):
        problems.append(f"{name}: {len(rows) - len(kept)} rows are not JSON objects; left out")
    numeric = set()
    for key in {key for row in kept for key in row}:
        values = [row[key] for row in kept if row.get(key) is not None]
        numbers = sum(map(is_number, values))
        if numbers and numbers >= len(values) - numbers:
            numeric.add(key)
    cleaned = []
    for index, row in enumerate(kept):
        bad = {key: why for key in row if (why := _value_problem(key, row[key], key in numeric))}
        problems += [f"{name}: row {index} has {key} = {json.dumps(row[key])[:40]}, {why}; left out"
                     for key, why in sorted(bad.items())]
        cleaned.append({**row, **dict.fromkeys(bad)})
    return cleaned


def results_edition(document: dict) -> str:
    """The handout edition of a results document: its config's, else its rows', else 2025."""
    rows = [row.get("handout") for row in document.get("rows", []) if isinstance(row, dict)]
    named = (document.get("config") or {}).get("handout") or next((r for r in rows if r), None)
    return str(named or DEFAULT_HANDOUT)


def used_files(*frames: pd.DataFrame) -> tuple[str, ...]:
    """Sorted names of the results files the rows of ``frames`` came from."""
    names = set()
    for frame in frames:
        if RESULTS_FILE_COLUMN in frame:
            names.update(frame[RESULTS_FILE_COLUMN].dropna())
    return tuple(sorted(names))


def ok_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows that completed (status ``ok``)."""
    return rows[rows["status"] == STATUS_OK] if "status" in rows else rows


def sorted_by_size(rows: pd.DataFrame, *then: str) -> pd.DataFrame:
    """Rows ordered by model size, then by the columns ``then``."""
    return (rows.assign(_size_order=size_order(rows["size"]))
            .sort_values(["_size_order", *then], kind="stable")
            .drop(columns="_size_order").reset_index(drop=True))


def plural(count: int, noun: str) -> str:
    """``1 configuration``, ``2 configurations``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def joined(names: pd.Series) -> str:
    """``small, medium and large``: the distinct values in their order."""
    distinct = [str(name) for name in dict.fromkeys(names)]
    return distinct[0] if len(distinct) == 1 else f"{', '.join(distinct[:-1])} and {distinct[-1]}"


def value_span(values: pd.Series) -> str:
    """``5`` for one distinct value, ``1–5`` for several."""
    distinct = sorted(values.unique())
    return str(distinct[0]) if len(distinct) == 1 else f"{distinct[0]}–{distinct[-1]}"
