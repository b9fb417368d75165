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

import pandas as pd

from analysis.records import ResultsAnswer, Unanswered  # noqa: F401  (what the questions return)
from analysis.runs import size_order
from cs336_profile.contract import STATUS_OK

RESULTS_FILE_COLUMN = "results_file"


@dataclass(frozen=True)
class ResultsSet:
    """Every results document of a folder, by file name."""

    documents: dict[str, dict] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # one line per value left out while reading

    def experiment_rows(self, experiment: str) -> pd.DataFrame:
        """Rows of every document of ``experiment``, with a ``results_file`` column (empty if none)."""
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
    """Load every results document (`*.json` with ``experiment`` and ``rows``) in a folder.

    Other JSON files (timings, snapshots' metadata) are skipped; a missing folder gives an empty set.
    """
    if results_dir is None or not Path(results_dir).is_dir():
        return ResultsSet()
    documents, problems = {}, []
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and isinstance(document.get("experiment"), str) \
                and isinstance(document.get("rows"), list):
            documents[path.name] = {**document, "rows": _valid_rows(path.name, document["rows"], problems)}
    return ResultsSet(documents, tuple(problems))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_rows(name: str, rows: list, problems: list[str]) -> list[dict]:
    """The rows that are objects, with each value that is not a number in a column of numbers
    (one holding at least as many numbers as other values, nulls aside) made null; one problem
    line per change."""
    kept = [row for row in rows if isinstance(row, dict)]
    if len(kept) < len(rows):
        problems.append(f"{name}: {len(rows) - len(kept)} rows are not JSON objects; left out")
    numeric = set()
    for key in {key for row in kept for key in row}:
        values = [row[key] for row in kept if row.get(key) is not None]
        numbers = sum(map(_is_number, values))
        if numbers and numbers >= len(values) - numbers:
            numeric.add(key)
    cleaned = []
    for index, row in enumerate(kept):
        bad = [key for key in numeric if key in row and row[key] is not None and not _is_number(row[key])]
        problems += [f"{name}: row {index} has {key} = {json.dumps(row[key])[:40]}, not a number; left out"
                     for key in sorted(bad)]
        cleaned.append({**row, **dict.fromkeys(bad)})
    return cleaned


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
