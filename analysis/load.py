"""Open an nsys SQLite export read-only and turn it into a few tidy tables (:class:`Trace`).

What the rest of the analyzer may rely on (see docs/architecture.md for the column lists):

* every table is sorted by time here, because nsys does not promise any row order;
* columns that an export lacks are checked for before any query is written, so old and new
  schemas load through the same code;
* process and thread ids are masked out of nsys's ``globalTid`` (``<HW:8><VM:8><PID:24><TID:24>``);
* the input file is never written: SQLite opens it with ``mode=ro&immutable=1`` and compressed
  inputs are decompressed into a cache folder, not beside the input.
"""
from __future__ import annotations

import hashlib
import lzma
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.request import pathname2url

import numpy as np
import pandas as pd

from analysis.errors import (
    NoKernels,
    NotATraceFile,
    NotNsysExport,
    NotSQLite,
    NsysReportGiven,
    TraceBeingWritten,
    TruncatedTrace,
    UnsupportedSchema,
)

SQLITE_MAGIC = b"SQLite format 3\x00"
XZ_MAGIC = b"\xfd7zXZ\x00"
NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep", ".qdstrm")

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
NVTX_TABLE = "NVTX_EVENTS"
GRAPH_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NSYS_TABLE_MARKERS = ("StringIds", KERNEL_TABLE, RUNTIME_TABLE, NVTX_TABLE, "TARGET_INFO_GPU",
                      "TARGET_INFO_CUDA_GPU", "META_DATA_EXPORT", "EXPORT_META_DATA")

# NVTX event types (ENUM_NSYS_EVENT_TYPE). 70/71 are the older "Nvtxt" spellings of 59/60.
NVTX_MARK = (34,)
NVTX_PUSH_POP = (59, 70)
NVTX_START_END = (60, 71)
NVTX_DOMAIN_CREATE = 75

KERNEL_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                  "shortName", "demangledName")
MEMOP_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes")
RUNTIME_COLUMNS = ("start", "end", "globalTid", "correlationId", "nameId")
ID_MASK = 0xFFFFFF
# API calls that put work on the GPU: kernel and graph launches, copies, fills.
LAUNCH_API = re.compile(r"Launch|Memcpy|Memset|memcpy|memset")


@dataclass
class Trace:
    """One nsys export as tidy tables; units are in the column names."""

    path: Path
    nsys_version: str | None
    schema_version: str | None
    kernels: pd.DataFrame
    memops: pd.DataFrame
    ranges: pd.DataFrame
    marks: pd.DataFrame
    gpus: pd.DataFrame
    capture_start_ns: int
    capture_end_ns: int
    cuda_graph_launches: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def gpu_name(self) -> str | None:
        """The GPU's name when the trace used one kind of GPU, else None."""
        names = self.gpus["name"].dropna().unique() if len(self.gpus) else []
        return str(names[0]) if len(names) == 1 else None


def load_trace(path: str | os.PathLike) -> Trace:
    """Load an nsys export (``.sqlite``, ``.sqlite.xz`` or ``.nsys-rep`` with nsys on PATH).

    Raises a :class:`~analysis.errors.TraceError` subclass, whose message is one line, for
    anything that is not a usable nsys export.
    """
    path = Path(path)
    database = resolve_export(path)
    try:
        try:
            with _connect_readonly(database) as conn:
                return _read_trace(conn, path)
        except sqlite3.OperationalError as err:
            if "decode" not in str(err):
                raise
        with _connect_readonly(database, lenient_text=True) as conn:
            return _read_trace(conn, path)
    except sqlite3.DatabaseError as err:
        raise TruncatedTrace(f"the SQLite file is damaged or cut short ({err})") from err


# --------------------------------------------------------------------------- finding the file

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
            f"`nsys export --type sqlite --output {path.with_suffix('.sqlite').name} {path.name}`")
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


def _connect_readonly(path: Path, lenient_text: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{pathname2url(str(path.resolve()))}?mode=ro&immutable=1",
                           uri=True)
    if lenient_text:  # exports made on Windows can hold strings in a code page, not UTF-8
        conn.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return conn


# --------------------------------------------------------------------------- reading tables

def _read_trace(conn: sqlite3.Connection, path: Path) -> Trace:
    schema = _schema(conn)
    if not any(table in schema for table in NSYS_TABLE_MARKERS):
        listed = ", ".join(sorted(schema)[:4]) or "none"
        raise NotNsysExport(f"is an SQLite database but not an nsys export (tables: {listed})")
    meta = _export_metadata(conn, schema)
    version = meta.get("EXPORT_PRODUCT_VERSION")
    graph_launches = _count(conn, schema, GRAPH_TABLE)
    if not _count(conn, schema, KERNEL_TABLE):
        if graph_launches:
            raise NoKernels(f"has no per-kernel records, only {graph_launches} whole CUDA-graph "
                            "launches; profile again with --cuda-graph-trace=node")
        raise NoKernels("has no CUDA kernel records (was it captured with `-t cuda`, and did "
                        "the program launch kernels?)")
    _require_columns(schema, KERNEL_TABLE, KERNEL_COLUMNS, version)
    strings = _StringTable(conn)

    notes: list[str] = []
    kernels = _read_kernels(conn, schema, strings)
    memops = _read_memops(conn, schema)
    launches = _read_launches(conn, schema, strings, version, launch_calls_only=True)
    if _unmatched(kernels, launches) or _unmatched(memops, launches):
        launches = _read_launches(conn, schema, strings, version, launch_calls_only=False)
    kernels = _join_launches(kernels, launches)
    memops = _join_launches(memops, launches)
    unlinked = int((kernels["launch_start_ns"] < 0).sum())
    if unlinked:
        notes.append(f"{unlinked:,} of {len(kernels):,} kernels have no launch call in the trace "
                     "(launched before the capture began?); no NVTX range can claim them")

    events = _read_nvtx(conn, schema, strings)
    start_ns, end_ns = _capture_window(kernels, memops, launches, events)
    ranges = _ranges(events, end_ns, notes)
    marks = _marks(events)
    if graph_launches:
        notes.append(f"{graph_launches:,} CUDA-graph launches were traced as whole graphs; the "
                     "kernels inside them are not listed one by one")
    return Trace(
        path=path, nsys_version=version, schema_version=meta.get("EXPORT_SCHEMA_VERSION"),
        kernels=kernels, memops=memops, ranges=ranges, marks=marks,
        gpus=_read_gpus(conn, schema), capture_start_ns=start_ns,
        capture_end_ns=end_ns, cuda_graph_launches=graph_launches, notes=notes)


def _schema(conn: sqlite3.Connection) -> dict[str, dict[str, bool]]:
    """{table: {column: declared NOT NULL}} for every table of the export."""
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: {row[1]: bool(row[3]) for row in conn.execute(f'PRAGMA table_info("{t}")')}
            for t in tables}


def _count(conn: sqlite3.Connection, schema: dict, table: str) -> int:
    if table not in schema:
        return 0
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _require_columns(schema: dict, table: str, columns: tuple[str, ...], version: str | None):
    missing = [c for c in columns if c not in schema[table]]
    if missing:
        made_by = f"nsys {version}" if version else "an old nsys"
        raise UnsupportedSchema(
            f"its {table} table lacks {', '.join(missing)} (exported by {made_by}); "
            "export the report again with nsys 2021.1 or newer")


def _select(schema: dict, table: str, columns: tuple[str, ...]) -> str:
    """SELECT list that reads NULL for the columns this export's table lacks."""
    present = set(schema[table])
    return ", ".join(f'"{c}"' if c in present else f'NULL AS "{c}"' for c in columns)


def _read_ints(conn: sqlite3.Connection, schema: dict, table: str, columns: tuple[str, ...],
               where: str = "", chunk_rows: int = 1 << 16) -> dict[str, np.ndarray]:
    """Integer columns of a table as numpy arrays, streamed in chunks to bound memory.

    NULLs and columns this export lacks read as -1.
    """
    declared = schema[table]
    select = ", ".join(
        f'"{c}"' if declared.get(c) else f'coalesce("{c}", -1)' if c in declared else "-1"
        for c in columns)
    rows = conn.execute(f"SELECT count(*) FROM {table} {where}").fetchone()[0]
    values = np.empty((rows, len(columns)), dtype=np.int64, order="F")
    cursor = conn.execute(f"SELECT {select} FROM {table} {where}")
    filled = 0
    while chunk := cursor.fetchmany(chunk_rows):
        values[filled:filled + len(chunk)] = chunk
        filled += len(chunk)
    return {c: values[:filled, i] for i, c in enumerate(columns)}


def _export_metadata(conn: sqlite3.Connection, schema: dict) -> dict[str, str]:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in schema and {"name", "value"} <= set(schema[table]):
            return dict(conn.execute(f"SELECT name, value FROM {table}").fetchall())
    return {}


class _StringTable:
    """nsys's interned strings (``StringIds``), looked up for whole columns at once."""

    def __init__(self, conn: sqlite3.Connection):
        rows = conn.execute("SELECT id, value FROM StringIds").fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self.values = np.array([r[1] for r in rows] + [None], dtype=object)
        self.position = np.full(int(ids.max(initial=-1)) + 2, len(rows), dtype=np.int64)
        self.position[ids] = np.arange(len(rows))

    def lookup(self, ids) -> np.ndarray:
        """Strings for an integer id column; None where the id is null, negative or unknown."""
        as_int = pd.to_numeric(pd.Series(ids), errors="coerce").fillna(-1).to_numpy(np.int64)
        inside = (as_int >= 0) & (as_int < len(self.position))
        return self.values[np.where(inside, self.position[np.where(inside, as_int, 0)],
                                    len(self.values) - 1)]

    def ids_matching(self, pattern: re.Pattern) -> list[int]:
        """Ids of the strings that ``pattern`` finds."""
        return [int(i) for i in np.flatnonzero(self.position < len(self.values) - 1)
                if pattern.search(self.values[self.position[i]])]

    def categorical(self, ids) -> pd.Categorical:
        """Like :meth:`lookup`, as a categorical; each distinct id is looked up once."""
        distinct, codes = np.unique(pd.to_numeric(pd.Series(ids), errors="coerce")
                                    .fillna(-1).to_numpy(np.int64), return_inverse=True)
        labels = self.lookup(distinct)
        known = np.array([label is not None for label in labels], dtype=bool)
        categories = pd.Index(labels[known])
        if categories.has_duplicates:
            return pd.Categorical(labels[codes])
        new_code = np.cumsum(known) - 1
        return pd.Categorical.from_codes(np.where(known[codes], new_code[codes], -1),
                                         categories=categories)


def _pid(global_id) -> np.ndarray:
    return (np.asarray(global_id, dtype=np.int64) >> 24) & ID_MASK


def _tid(global_id) -> np.ndarray:
    return np.asarray(global_id, dtype=np.int64) & ID_MASK


def _activity_columns(raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The columns every GPU activity table (kernel, memcpy, memset) shares."""
    return {
        "start_ns": raw["start"],
        "end_ns": raw["end"],
        "dur_ns": raw["end"] - raw["start"],
        "device_id": raw["deviceId"],
        "stream_id": raw["streamId"],
        "correlation_id": raw["correlationId"],
        "pid": _pid(raw["globalPid"]),
    }


def _read_kernels(conn: sqlite3.Connection, schema: dict, strings: _StringTable
                  ) -> pd.DataFrame:
    raw = _read_ints(conn, schema, KERNEL_TABLE, KERNEL_COLUMNS)
    return pd.DataFrame({
        **_activity_columns(raw),
        "name": strings.categorical(raw["shortName"]),
        "demangled_name": strings.categorical(raw["demangledName"]),
    })


def _read_memops(conn: sqlite3.Connection, schema: dict) -> pd.DataFrame:
    frames = []
    for table, kind in ((MEMCPY_TABLE, "memcpy"), (MEMSET_TABLE, "memset")):
        if table in schema:
            raw = _read_ints(conn, schema, table, MEMOP_COLUMNS)
            frames.append(pd.DataFrame({"kind": kind, **_activity_columns(raw),
                                        "bytes": np.maximum(raw["bytes"], 0)}))
    if not frames:
        empty = {c: np.zeros(0, dtype=np.int64) for c in MEMOP_COLUMNS}
        frames.append(pd.DataFrame({"kind": pd.Series(dtype=object), **_activity_columns(empty),
                                    "bytes": empty["bytes"]}))
    return pd.concat(frames, ignore_index=True)


def _read_launches(conn: sqlite3.Connection, schema: dict, strings: _StringTable,
                   version: str | None, launch_calls_only: bool) -> pd.DataFrame:
    """Runtime and driver API calls: start, end, pid, tid, correlation id, API name.

    With ``launch_calls_only`` just the calls whose name says they launch GPU work (about half of
    a PyTorch trace's calls); the caller reads them all when some operation finds no launch.
    """
    if RUNTIME_TABLE not in schema:
        return pd.DataFrame({"start_ns": [], "end_ns": [], "pid": [], "tid": [],
                             "correlation_id": [], "api": pd.Categorical([])}).astype(
            {c: np.int64 for c in ("start_ns", "end_ns", "pid", "tid", "correlation_id")})
    _require_columns(schema, RUNTIME_TABLE, RUNTIME_COLUMNS, version)
    where = ""
    if launch_calls_only:
        ids = strings.ids_matching(LAUNCH_API)
        where = f"WHERE nameId IN ({', '.join(map(str, ids)) or 'NULL'})"
    raw = _read_ints(conn, schema, RUNTIME_TABLE, RUNTIME_COLUMNS, where)
    return pd.DataFrame({
        "start_ns": raw["start"],
        "end_ns": raw["end"],
        "pid": _pid(raw["globalTid"]),
        "tid": _tid(raw["globalTid"]),
        "correlation_id": raw["correlationId"],
        "api": strings.categorical(raw["nameId"]),
    })


def _launch_rows(ops: pd.DataFrame, launches: pd.DataFrame) -> np.ndarray:
    """Row in ``launches`` of each op's launch call (same correlationId, same process), or -1."""
    key_calls = pd.Index((launches["pid"].to_numpy() << 40) | launches["correlation_id"].to_numpy())
    key_ops = (ops["pid"].to_numpy() << 40) | ops["correlation_id"].to_numpy()
    if key_calls.is_unique:
        return key_calls.get_indexer(key_ops)
    first = np.flatnonzero(~key_calls.duplicated())
    found = key_calls[first].get_indexer(key_ops)
    return np.where(found >= 0, first[np.maximum(found, 0)], -1)


def _unmatched(ops: pd.DataFrame, launches: pd.DataFrame) -> bool:
    return bool(len(ops)) and bool((_launch_rows(ops, launches) < 0).any())


def _join_launches(ops: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """Add the launching API call's columns and sort by start."""
    found = _launch_rows(ops, launches)
    hit = found >= 0
    rows = np.where(hit, found, 0)

    def take(column: str) -> np.ndarray:
        values = launches[column].to_numpy()
        return np.where(hit, values[rows], -1) if len(values) else np.full(len(ops), -1)

    api = launches["api"].cat
    codes = np.where(hit, api.codes.to_numpy()[rows], -1) if len(launches) else \
        np.full(len(ops), -1)
    ops = ops.assign(
        launch_start_ns=take("start_ns"), launch_end_ns=take("end_ns"), launch_tid=take("tid"),
        launch_api=pd.Categorical.from_codes(codes, categories=api.categories))
    return ops.sort_values(["start_ns", "end_ns"], kind="stable").reset_index(drop=True)


NVTX_COLUMNS = ("start", "end", "eventType", "textId", "globalTid", "endGlobalTid", "domainId")


def _read_nvtx(conn: sqlite3.Connection, schema: dict, strings: _StringTable) -> pd.DataFrame:
    """NVTX marks, ranges and domain names; a name is ``text`` or else ``StringIds[textId]``."""
    if NVTX_TABLE not in schema:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in
                             ("start_ns", "end_ns", "event_type", "name", "domain", "pid", "tid",
                              "end_tid")})
    _require_columns(schema, NVTX_TABLE, ("start", "end", "eventType", "globalTid"), None)
    types = NVTX_MARK + NVTX_PUSH_POP + NVTX_START_END + (NVTX_DOMAIN_CREATE,)
    where = f"WHERE eventType IN ({', '.join(map(str, types))})"
    raw = _read_ints(conn, schema, NVTX_TABLE, NVTX_COLUMNS, where)
    text = np.array([row[0] for row in conn.execute(
        f"SELECT {'text' if 'text' in schema[NVTX_TABLE] else 'NULL'} FROM {NVTX_TABLE} {where}")],
        dtype=object)
    name = np.where(pd.isna(text), strings.lookup(raw["textId"]), text)
    end_tid = np.where(raw["endGlobalTid"] >= 0, raw["endGlobalTid"], raw["globalTid"])
    events = pd.DataFrame({
        "start_ns": raw["start"],
        "end_ns": pd.array(np.where(raw["end"] >= 0, raw["end"], 0), dtype="Int64"),
        "event_type": raw["eventType"],
        "name": name,
        "domain_id": np.maximum(raw["domainId"], 0),
        "pid": _pid(raw["globalTid"]),
        "tid": _tid(raw["globalTid"]),
        "end_tid": _tid(end_tid),
    })
    events.loc[raw["end"] < 0, "end_ns"] = pd.NA
    creates = events[events["event_type"] == NVTX_DOMAIN_CREATE]
    events = events[events["event_type"] != NVTX_DOMAIN_CREATE]
    names_of_domains = dict(zip(zip(creates["pid"], creates["domain_id"]), creates["name"]))
    domain = np.full(len(events), "", dtype=object)
    custom = np.flatnonzero(events["domain_id"].to_numpy() > 0)   # domain 0 is the default
    domain[custom] = [names_of_domains.get(key, "") for key in zip(
        events["pid"].to_numpy()[custom], events["domain_id"].to_numpy()[custom])]
    return events.assign(domain=domain).drop(columns="domain_id")


def _capture_window(*tables: pd.DataFrame) -> tuple[int, int]:
    starts = [int(t["start_ns"].min()) for t in tables if len(t)]
    ends = [int(pd.to_numeric(t[c]).max()) for t in tables if len(t)
            for c in ("start_ns", "end_ns") if pd.to_numeric(t[c]).notna().any()]
    return min(starts), max(ends)


def _ranges(events: pd.DataFrame, capture_end_ns: int, notes: list[str]) -> pd.DataFrame:
    """NVTX ranges sorted by start, ``range_id`` = row, with depth and parent (push/pop nest per thread)."""
    is_range = events["event_type"].isin(NVTX_PUSH_POP + NVTX_START_END)
    ranges = events[is_range].copy()
    ranges["kind"] = np.where(ranges["event_type"].isin(NVTX_PUSH_POP), "push_pop", "start_end")
    ranges["is_open"] = ranges["end_ns"].isna().to_numpy()
    ranges["end_ns"] = ranges["end_ns"].fillna(capture_end_ns).astype(np.int64)
    ranges["name"] = ranges["name"].fillna("").astype(str)
    ranges = ranges.sort_values(["start_ns", "end_ns"], ascending=[True, False], kind="stable")
    ranges = ranges.reset_index(drop=True)
    ranges.insert(0, "range_id", np.arange(len(ranges), dtype=np.int64))
    depth, parent = _nesting(ranges)
    ranges["depth"], ranges["parent_id"] = depth, parent
    open_count = int(ranges["is_open"].sum())
    if open_count:
        notes.append(f"{open_count} NVTX ranges were never closed; they are taken to end with "
                     "the capture")
    columns = ["range_id", "name", "domain", "kind", "start_ns", "end_ns", "is_open", "pid",
               "tid", "end_tid", "depth", "parent_id"]
    return ranges[columns]


def _nesting(ranges: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent range_id of push/pop ranges; start/end ranges stay at depth 0.

    ``ranges`` is sorted by (start, -end) and ``range_id`` is the row number. Within a thread
    push/pop ranges nest, so a range's depth is the number of ranges started before it minus
    those ended by its start, and its parent is the latest earlier range one level up.
    """
    depth = np.zeros(len(ranges), dtype=np.int64)
    parent = np.full(len(ranges), -1, dtype=np.int64)
    nested = ranges["kind"].to_numpy() == "push_pop"
    for _, rows in ranges[nested].groupby(["pid", "tid"], sort=False).indices.items():
        rows = np.flatnonzero(nested)[rows]
        starts = ranges["start_ns"].to_numpy()[rows]
        ends = np.sort(ranges["end_ns"].to_numpy()[rows])
        level = np.arange(len(rows)) - np.searchsorted(ends, starts, side="right")
        level = np.maximum(level, 0)
        depth[rows] = level
        for d in range(1, int(level.max(initial=0)) + 1):
            above = np.flatnonzero(level == d - 1)
            here = np.flatnonzero(level == d)
            pick = np.searchsorted(above, here) - 1
            parent[rows[here]] = np.where(pick >= 0, rows[above[np.maximum(pick, 0)]], -1)
    return depth, parent


def _marks(events: pd.DataFrame) -> pd.DataFrame:
    marks = events[events["event_type"].isin(NVTX_MARK)]
    marks = pd.DataFrame({"name": marks["name"].fillna("").astype(str),
                          "domain": marks["domain"], "time_ns": marks["start_ns"],
                          "pid": marks["pid"], "tid": marks["tid"]})
    return marks.sort_values("time_ns", kind="stable").reset_index(drop=True)


def _read_gpus(conn: sqlite3.Connection, schema: dict) -> pd.DataFrame:
    """One row per GPU: device_id (CUDA ordinal), name, sm_count, memory_bytes, clock_hz."""
    columns = ["device_id", "name", "sm_count", "memory_bytes", "clock_hz"]
    if "TARGET_INFO_CUDA_GPU" in schema:
        sql = ("SELECT deviceId, name, numMultiprocessors, globalMemorySize, coreClockRate * 1000 "
               "FROM TARGET_INFO_CUDA_GPU")
    elif "TARGET_INFO_GPU" in schema:
        cols = set(schema["TARGET_INFO_GPU"])
        device = next((c for c in ("cuDevice", "deviceId", "id") if c in cols), None)
        picks = [device, "name", "smCount", "totalMemory", "clockRate"]
        sql = "SELECT " + ", ".join(c if c in cols else "NULL" for c in picks) + \
              " FROM TARGET_INFO_GPU"
    else:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    gpus = pd.DataFrame(conn.execute(sql).fetchall(), columns=columns)
    gpus["device_id"] = pd.to_numeric(gpus["device_id"]).fillna(0).astype(np.int64)
    return gpus.drop_duplicates("device_id").sort_values("device_id").reset_index(drop=True)
