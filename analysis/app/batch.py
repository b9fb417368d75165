"""The traces of one ``analyze-nsys`` run: identical files counted once, and a distinct output
name for each, so no trace's JSON or page overwrites another's.

Two inputs whose bytes are equal (the same file given twice, or a copy) are one trace: it is
analyzed and counted once, under its first path. Inputs whose names would give the same output
file (``dirA/run.sqlite`` and ``dirB/run.sqlite``; ``a|b.sqlite`` and ``a_b.sqlite``, whose page
names are both ``a_b``) are told apart by the first 8 hex digits of their content hash.
"""
from __future__ import annotations

import re
from pathlib import Path

from cs336_profile.contract import trace_stem

SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_stem(name: str) -> str:
    """A file-system-safe stem of a trace file name (what output files and pages are named by)."""
    return SAFE_NAME.sub("_", trace_stem(name))


def distinct(paths: list[Path], digests: dict[Path, str]) -> tuple[list[Path], dict[Path, Path]]:
    """(the first path of each content, {later path: the first path with its content}); paths
    without a digest (unreadable) are kept, for the analysis to report."""
    first: dict[str, Path] = {}
    kept, repeats = [], {}
    for path in dict.fromkeys(paths):
        digest = digests.get(path)
        if digest is not None and digest in first:
            repeats[path] = first[digest]
            continue
        if digest is not None:
            first[digest] = path
        kept.append(path)
    return kept, repeats


def output_names(paths: list[Path], digests: dict[Path, str]) -> dict[Path, str]:
    """A trace name per path: its file name, or ``<stem>-<hash8><suffix>`` where the safe stems of
    several paths are equal."""
    stems: dict[str, list[Path]] = {}
    for path in paths:
        stems.setdefault(safe_stem(path.name).lower(), []).append(path)
    names = {}
    for group in stems.values():
        for path in group:
            suffix = path.name[len(trace_stem(path.name)):]
            clash = len(group) > 1 and path in digests
            names[path] = f"{trace_stem(path.name)}-{digests[path][:8]}{suffix}" if clash else path.name
    return names
