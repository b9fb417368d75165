"""From the path a user gives to a readable SQLite file: checks (a regular file, SQLite, complete),
xz decompression and ``.nsys-rep`` export through the input cache (never beside the input), and
the read-only connection."""
from __future__ import annotations

import shutil
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from analysis.load.errors import NotATraceFile, NotSQLite, NsysReportGiven, TraceBeingWritten, TraceError, TruncatedTrace
from analysis.load.input_cache import InputCache, cache_folder, decompress_xz, discard, export_report
from cs336_profile.contract import trace_stem

SQLITE_MAGIC = b"SQLite format 3\x00"
XZ_MAGIC = b"\xfd7zXZ\x00"
NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep", ".qdstrm")


@contextmanager
def opened_input(path: Path, settings: InputCache = InputCache()) -> Iterator[Path]:
    """The path of a readable SQLite export for ``path``, checked on the way; an ``.xz`` or
    ``.nsys-rep`` input is copied into the input cache first. A copy whose trace is refused
    (a :class:`TraceError` raised in the ``with`` body) is removed."""
    if not path.exists():
        raise NotATraceFile("no such file")
    if path.is_dir():
        raise NotATraceFile("is a directory, not a trace file")
    if not stat.S_ISREG(path.stat().st_mode):
        raise NotATraceFile("is not a regular file (a FIFO, socket or device); give the export file itself")
    header = b"" if path.suffix in NSYS_REPORT_SUFFIXES else _read_header(path)
    if path.suffix not in NSYS_REPORT_SUFFIXES and not header.startswith(XZ_MAGIC):
        yield _checked(path, header)
        return
    nsys = shutil.which("nsys")
    if path.suffix in NSYS_REPORT_SUFFIXES and nsys is None:
        raise NsysReportGiven(
            f"is an nsys report, not an SQLite export; export it with "
            f"`nsys export --type sqlite --output {trace_stem(path)}.sqlite {path.name}`")
    with cache_folder(settings) as folder:
        copy = export_report(path, nsys, folder, settings) if path.suffix in NSYS_REPORT_SUFFIXES else \
            decompress_xz(path, folder, settings)
        try:
            yield _checked(copy, _read_header(copy))
        except TraceError:
            discard(copy, path)
            raise


def _checked(path: Path, header: bytes) -> Path:
    if not header:
        raise NotSQLite("is empty")
    if not header.startswith(SQLITE_MAGIC):
        raise NotSQLite("is not an SQLite database (an nsys export is made with "
                        "`nsys export --type sqlite`)")
    _check_complete(path, header)
    return path


def _read_header(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(100)
    except OSError as err:
        raise NotATraceFile(f"cannot be read ({err.strerror or err})") from err


def _check_complete(path: Path, header: bytes) -> None:
    for suffix in ("-journal", "-wal"):
        if Path(f"{path}{suffix}").exists():
            raise TraceBeingWritten(
                f"is still being written (a {suffix[1:]} file lies beside it); "
                "wait for nsys to finish and try again")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    header_count_valid = header[24:28] == header[92:96]
    expected = page_size * pages
    size = path.stat().st_size
    if header_count_valid and pages and size < expected:
        raise TruncatedTrace(f"is cut short: {size:,} bytes of the {expected:,} its header announces")


def connect_readonly(path: Path, lenient_text: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    if lenient_text:  # exports made on Windows can hold strings in a code page, not UTF-8
        conn.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return conn
