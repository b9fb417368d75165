"""From the path a user gives to a readable SQLite file: checks, xz decompression and ``.nsys-rep``
export into a cache folder (never beside the input), and the read-only connection."""
from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from urllib.request import pathname2url

from analysis.errors import NotATraceFile, NotSQLite, NsysReportGiven, TraceBeingWritten, TruncatedTrace
from cs336_profile.contract import trace_stem

SQLITE_MAGIC = b"SQLite format 3\x00"
XZ_MAGIC = b"\xfd7zXZ\x00"
NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep", ".qdstrm")


def resolve_export(path: Path) -> Path:
    """Return the path of a readable SQLite export for ``path``, checking it on the way."""
    if not path.exists():
        raise NotATraceFile("no such file")
    if path.is_dir():
        raise NotATraceFile("is a directory, not a trace file")
    if path.suffix in NSYS_REPORT_SUFFIXES:
        return _export_report(path)
    header = _read_header(path)
    if header.startswith(XZ_MAGIC):
        path = _decompress_xz(path)
        header = _read_header(path)
    if not header:
        raise NotSQLite("is empty")
    if not header.startswith(SQLITE_MAGIC):
        raise NotSQLite("is not an SQLite database (an nsys export is made with "
                        "`nsys export --type sqlite`)")
    _check_complete(path, header)
    return path


def cache_dir() -> Path:
    """Folder for decompressed and exported inputs (``$CS336_PROFILE_CACHE`` overrides)."""
    base = os.environ.get("CS336_PROFILE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cs336-profile")
    folder = Path(base)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _read_header(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(100)
    except OSError as err:
        raise NotATraceFile(f"cannot be read ({err.strerror or err})") from err


def _decompress_xz(path: Path) -> Path:
    target = cache_dir() / f"{file_sha256(path)}.sqlite"
    if target.exists():
        return target
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False, suffix=".part") as out:
        try:
            with lzma.open(path) as src:
                shutil.copyfileobj(src, out, 1 << 20)
        except (lzma.LZMAError, EOFError) as err:
            os.unlink(out.name)
            raise TruncatedTrace(f"the xz stream is damaged or cut short ({err})") from err
    os.replace(out.name, target)
    return target


def _export_report(path: Path) -> Path:
    nsys = shutil.which("nsys")
    if nsys is None:
        raise NsysReportGiven(
            f"is an nsys report, not an SQLite export; export it with "
            f"`nsys export --type sqlite --output {trace_stem(path)}.sqlite {path.name}`")
    target = cache_dir() / f"{file_sha256(path)}.sqlite"
    if not target.exists():
        result = subprocess.run(
            [nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
             "--output", str(target), str(path)], capture_output=True, text=True)
        if result.returncode != 0 or not target.exists():
            last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
            raise NsysReportGiven(f"is an nsys report and `nsys export` failed: {last[0]}")
    return target


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
    conn = sqlite3.connect(f"file:{pathname2url(str(path.resolve()))}?mode=ro&immutable=1",
                           uri=True)
    if lenient_text:  # exports made on Windows can hold strings in a code page, not UTF-8
        conn.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return conn
