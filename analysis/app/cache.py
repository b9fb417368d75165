"""Results database: per-trace analysis results, keyed by the trace file's content.

`<out>/results.db` (SQLite, written with the standard library's sqlite3) holds the whole JSON of
each analyzed trace and flat tables to query with SQL (`sqlite3`, sqlite-utils):

- `traces`: key, trace, gpu, nsys_version, measured_passes, analyzed_at (UTC, ISO 8601);
- `phases`: key, trace, phase, kernels_per_pass, kernel_ms_per_pass, gpu_span_ms_per_pass,
  cpu_span_ms_per_pass;
- `categories`: key, trace, phase, category, ms_per_pass;
- `summaries`: key, summary_json (what `get` returns);
- `file_hashes`: device, inode, size, mtime_ns, ctime_ns -> sha256 of the files looked up
  (:meth:`ResultsCache.sha256_of`), so an unchanged file is not read again to know its content.

The database stores summaries without their sentences (:func:`analysis.app.analyze.stored_summary`);
the caller adds them to each summary it reads (:func:`analysis.questions.sentences.with_sentences`),
so the wording of a sentence is no part of what is stored.

The key is what a stored summary depends on: the sha256 of the trace file's bytes plus the
analyzer's key (:func:`analyzer_key`: a hash of the stored summary's JSON schema and of the source
of every analysis module that makes it, :data:`SUMMARY_CODE`, so a summary of another layout or
of other code is never served, while a reworded sentence keeps every stored summary),
then, where they apply, a hash of the NVTX range names when they are not
the defaults (`;names=`) and the sha256 of the `<trace stem>.timings.json` beside the trace
(`;timings=`, the Python timings of traces without marks). A changed trace or timings file,
other range names or a new analyzer miss the cache; a renamed or copied file hits it (and `get`
names it as asked).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from analysis.app.analyze import stored_summary_schema
from analysis.core.range_names import RangeNames
from analysis.core.timings import timings_json_path
from analysis.load.input_cache import file_sha256, files_sha256, known_file_sha256
from analysis.load.local_key import install_key, seal, seal_holds
from analysis.trace.summary_schema import problems, schema_hash

ANALYSIS_PACKAGE = Path(__file__).resolve().parents[1]
# What makes a stored summary, relative to the analysis package: the package's own module (the
# version), the floors that load a trace and compute its figures (the per-trace questions' figures
# among them, analysis/trace/question_figures), and the module that runs them. Not the questions'
# modules (their sentences are written after the cache), nor comparing, rendering or the rest of
# the command line.
SUMMARY_CODE = ("__init__.py", "load", "core", "trace", "app/analyze.py")
SUMMARY_CODE_FILES = ("*.py", "*.csv")  # sources, and the data they read (the GPUs' peaks)
# Wording inside those folders that no summary-building module imports (a test checks): how numbers
# and kernel names are written in sentences and cells. Rewording them keeps every stored summary.
SUMMARY_CODE_WORDING = ("core/text.py",)
ANALYZER_KEY_CHARS = 16

LOCK_TIMEOUT_S = 60.0  # several analyzer processes may write the same database at once

TRACES_COLUMNS = {
    "key": str,
    "trace": str,
    "gpu": str,
    "nsys_version": str,
    "measured_passes": int,
    "analyzed_at": str,
}
PHASE_FIGURES = ("kernels_per_pass", "kernel_ms_per_pass", "gpu_span_ms_per_pass", "cpu_span_ms_per_pass")
PHASES_COLUMNS = {"key": str, "trace": str, "phase": str, **{name: float for name in PHASE_FIGURES}}
CATEGORIES_COLUMNS = {"key": str, "trace": str, "phase": str, "category": str, "ms_per_pass": float}
SUMMARIES_COLUMNS = {"key": str, "summary_json": str, "checksum": str}
# What says a file is unchanged since it was hashed, as git's index keeps it: no path, so a file
# moved or reached by another path keeps its row, and a copy (another inode) is hashed again.
FILE_STAT = ("device", "inode", "size", "mtime_ns", "ctime_ns")
FILE_HASHES_COLUMNS = {**{name: int for name in FILE_STAT}, "sha256": str, "checksum": str}
TABLES = {"traces": TRACES_COLUMNS, "summaries": SUMMARIES_COLUMNS, "phases": PHASES_COLUMNS,
          "categories": CATEGORIES_COLUMNS, "file_hashes": FILE_HASHES_COLUMNS}
PRIMARY_KEYS = {"traces": ("key",), "summaries": ("key",), "phases": ("key", "phase"), "categories": ("key", "phase", "category"),
                "file_hashes": ("device", "inode")}
# A file changed within this long of its hashing could keep the times it was hashed with (file
# systems stamp times at a coarse tick): its hash is not kept, as git's index does for racily
# clean entries.
RACY_WINDOW_NS = 2_000_000_000
SQL_TYPES = {str: "TEXT", int: "INTEGER", float: "FLOAT"}


class CacheUnusable(Exception):
    """The results database cannot be opened or written; the message (one line) names it."""


def create_table_sql(table: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` of one of :data:`TABLES`: its columns, primary key, and a
    reference to ``traces`` from every other table's ``key``."""
    columns = [f'"{name}" {SQL_TYPES[kind]}' for name, kind in TABLES[table].items()]
    keys = ", ".join(f'"{name}"' for name in PRIMARY_KEYS[table])
    keyed = table != "traces" and "key" in TABLES[table]  # a summary's rows; file_hashes stands alone
    references = ['FOREIGN KEY ("key") REFERENCES "traces" ("key")'] if keyed else []
    return f'CREATE TABLE IF NOT EXISTS "{table}" ({", ".join([*columns, f"PRIMARY KEY ({keys})", *references])})'


def verified_summary(key: str, row: tuple) -> dict | None:
    """The summary of a stored ``(summary_json, checksum)`` row when it may be served, else None:
    its checksum must be the install's seal of key and JSON (:mod:`analysis.load.local_key`: a row
    edited by hand, with its checksum made again, planted or half written fails), and its JSON a
    stored summary of this schema."""
    summary_json, checksum = row
    if not (isinstance(summary_json, str) and isinstance(checksum, str) and seal_holds(checksum, key, summary_json)):
        return None
    try:
        summary = json.loads(summary_json)
    except (ValueError, RecursionError):
        return None
    return None if problems(summary, stored_summary_schema()) else summary


def summary_code_files(package: Path) -> list[Path]:
    """The files of :data:`SUMMARY_CODE` in ``package`` but :data:`SUMMARY_CODE_WORDING`, sorted."""
    files = set()
    for part in SUMMARY_CODE:
        path = package / part
        if path.is_file():
            files.add(path)
        else:
            files.update(found for pattern in SUMMARY_CODE_FILES for found in path.rglob(pattern))
    return sorted(files - {package / part for part in SUMMARY_CODE_WORDING})


@functools.cache
def code_hash() -> str:
    """sha256 over the files of :data:`SUMMARY_CODE` in the analysis package (their paths and bytes)."""
    return files_sha256(ANALYSIS_PACKAGE, summary_code_files(ANALYSIS_PACKAGE))


@functools.cache
def analyzer_key() -> str:
    """What every cached summary was made by: the hash of the stored summary's schema and of the code."""
    both = f"{schema_hash(stored_summary_schema())}:{code_hash()}"
    return hashlib.sha256(both.encode()).hexdigest()[:ANALYZER_KEY_CHARS]


class ResultsCache:
    """Per-trace summaries in a SQLite results database, looked up by file content."""

    def __init__(self, db_path: Path, names: RangeNames = RangeNames()):
        """``names``: the NVTX range names the summaries stored and looked up were made with.

        A file at ``db_path`` that is a symbolic or hard link, not an SQLite database, damaged, or
        laid out otherwise is set aside (renamed ``results.db.set-aside-<time>``, said in ``notices``) and a
        new database made; :class:`CacheUnusable` when none can be opened or made there."""
        self.db_path = Path(db_path)
        self.notices: list[str] = []
        self._key_suffix = "" if names == RangeNames() else ";names=" + hashlib.sha256(
            json.dumps(asdict(names), sort_keys=True).encode()).hexdigest()
        try:
            install_key()  # the seal of every row: without it no row can be trusted
            self.db = self._open()
        except (sqlite3.Error, OSError) as err:
            raise CacheUnusable(f"{self.db_path}: cannot be used ({err}); analyzing without the results cache") from err

    def _open(self) -> sqlite3.Connection:
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        why = self._linked_because()
        if why is None and self.db_path.exists():
            why = self._unusable_because()
        if why is not None:
            self._set_aside(why)
        # isolation_level=None: transactions are the explicit ones of _atomic.
        db = sqlite3.connect(self.db_path, timeout=LOCK_TIMEOUT_S, isolation_level=None)
        self.db = db
        with self._atomic():
            for table in TABLES:
                db.execute(create_table_sql(table))
        return db

    def _linked_because(self) -> str | None:
        """Why writing the existing file could change another file (a link), or None."""
        if self.db_path.is_symlink():
            return "is a symbolic link"
        if self.db_path.exists() and self.db_path.stat().st_nlink > 1:
            return "has other hard links (writing it would change them too)"
        return None

    def _unusable_because(self) -> str | None:
        """Why the existing file is not a results database of this layout, or None."""
        try:
            conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=LOCK_TIMEOUT_S)
            try:
                if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                    return "is damaged"
                for table, columns in TABLES.items():
                    found = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
                    if found and found != set(columns):
                        return f"has a {table} table of another layout"
            finally:
                conn.close()
        except sqlite3.DatabaseError as err:
            return f"is not a results database ({err})"
        return None

    def _set_aside(self, why: str) -> None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        aside = self.db_path.with_name(f"{self.db_path.name}.set-aside-{stamp}")
        for suffix in ("", "-journal", "-wal", "-shm"):
            if Path(f"{self.db_path}{suffix}").is_symlink() or Path(f"{self.db_path}{suffix}").exists():
                os.replace(f"{self.db_path}{suffix}", f"{aside}{suffix}")
        self.notices.append(f"{self.db_path} {why}; set aside as {aside.name}, a new results cache is made")

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """One transaction: committed when the block ends, rolled back when it (or the commit) raises."""
        self.db.execute("BEGIN")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:  # an error may have ended the transaction already
                self.db.execute("ROLLBACK")
            raise

    def _insert(self, table: str, rows: Iterable[dict]) -> None:
        columns = list(TABLES[table])
        names, marks = ", ".join(f'"{name}"' for name in columns), ", ".join("?" * len(columns))
        self.db.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({marks})',
                            ([row[name] for name in columns] for row in rows))

    def key_for(self, path: Path) -> str | None:
        """Cache key of a trace file: `<sha256 of its bytes>@<analyzer key>`, then
        `;names=<hash>` for range names other than the defaults and `;timings=<sha256>` when a
        timings.json lies beside the trace; None when that timings.json cannot be read (the trace
        then bypasses the cache, and its analysis notes the unreadable file)."""
        key = f"{self.sha256_of(Path(path))}@{analyzer_key()}{self._key_suffix}"
        timings = timings_json_path(Path(path))  # where the analysis looks: beside the path as given
        if not timings.is_file():
            return key
        try:
            return f"{key};timings={self.sha256_of(timings)}"
        except OSError:
            return None

    def sha256_of(self, path: Path) -> str:
        """The sha256 of a file's bytes, read again only when the file may have changed.

        The ``file_hashes`` row of its device and inode is used when its size, mtime and ctime are
        the file's now and its seal (:mod:`analysis.load.local_key`) holds; otherwise the file is
        hashed and the row replaced, unless the file changed while it was read or so recently that
        a change could keep its times (:data:`RACY_WINDOW_NS`). OSError when the file cannot be read."""
        stat = os.stat(path)
        fields = [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]
        known = self._known_sha256(fields)
        if known is not None:
            known_file_sha256(Path(path), stat, known)  # the table cache and the summary need it too
            return known
        started_ns = time.time_ns()
        digest = file_sha256(Path(path))
        after = os.stat(path)
        unchanged = fields == [after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns, after.st_ctime_ns]
        if unchanged and max(stat.st_mtime_ns, stat.st_ctime_ns) < started_ns - RACY_WINDOW_NS:
            self._remember_sha256(fields, digest)
        return digest

    def _known_sha256(self, fields: list[int]) -> str | None:
        """The sealed sha256 of a file with these stat ``fields``, or None."""
        try:
            row = self.db.execute('SELECT size, mtime_ns, ctime_ns, sha256, checksum FROM "file_hashes" '
                                  'WHERE device = ? AND inode = ?', fields[:2]).fetchone()
        except sqlite3.DatabaseError:
            return None
        if row is None or list(row[:3]) != fields[2:]:
            return None
        digest, checksum = row[3:]
        sealed = isinstance(digest, str) and isinstance(checksum, str)
        return digest if sealed and seal_holds(checksum, "file_hashes", *map(str, fields), digest) else None

    def _remember_sha256(self, fields: list[int], digest: str) -> None:
        """Keep the file's hash; a database that cannot be written only costs hashing it next time."""
        row = dict(zip(FILE_STAT, fields)) | {"sha256": digest, "checksum": seal("file_hashes", *map(str, fields), digest)}
        try:
            with self._atomic():
                self.db.execute('DELETE FROM "file_hashes" WHERE device = ? AND inode = ?', fields[:2])
                self._insert("file_hashes", [row])
        except sqlite3.Error:
            return

    def get(self, path: Path) -> dict | None:
        """The stored summary of this file's content, or None when it was never analyzed.

        A copy of an analyzed file gets the stored summary under its own name (`trace`). A row
        that is not what :meth:`put` wrote here (:func:`verified_summary`: edited, planted, half
        written, not JSON, not of the schema) is deleted and None returned, so the trace is
        analyzed again.
        """
        key = self.key_for(path)
        if key is None:
            return None
        try:
            row = self.db.execute('SELECT summary_json, checksum FROM "summaries" WHERE key = ?', [key]).fetchone()
        except sqlite3.DatabaseError:
            row = (None, None)
        if row is None:
            return None
        summary = verified_summary(key, row)
        if summary is None:
            with self._atomic():
                self._delete(key)
            return None
        return {**summary, "trace": Path(path).name}

    def put(self, path: Path, summary: dict) -> None:
        """Store (or replace) the summary of this file's content and its flat rows;
        :class:`CacheUnusable` when the database cannot be written (full disk, read-only)."""
        try:
            key = self.key_for(path)
            if key is not None:
                self._put(key, summary)
        except (sqlite3.Error, OSError) as err:
            raise CacheUnusable(f"{self.db_path}: cannot be written ({err}); the rest is analyzed without "
                                "the results cache") from err

    def _put(self, key: str, summary: dict) -> None:
        trace = summary["trace"]
        phases = summary.get("phases", {})
        summary_json = json.dumps(summary)
        with self._atomic():
            self._delete(key)
            self._insert("traces", [
                {
                    "key": key,
                    "trace": trace,
                    "gpu": summary.get("gpu"),
                    "nsys_version": summary.get("nsys_version"),
                    "measured_passes": summary.get("measured_passes"),
                    "analyzed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                }
            ])
            self._insert("summaries", [{"key": key, "summary_json": summary_json, "checksum": seal(key, summary_json)}])
            self._insert("phases", (
                {"key": key, "trace": trace, "phase": phase, **{name: figures.get(name) for name in PHASE_FIGURES}}
                for phase, figures in phases.items()
            ))
            self._insert("categories", (
                {"key": key, "trace": trace, "phase": phase, "category": category, "ms_per_pass": ms}
                for phase, figures in phases.items()
                for category, ms in figures.get("by_category_ms_per_pass", {}).items()
            ))

    def _delete(self, key: str) -> None:
        for table in ("categories", "phases", "summaries", "traces"):
            self.db.execute(f'DELETE FROM "{table}" WHERE key = ?', [key])

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    def __enter__(self) -> ResultsCache:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
