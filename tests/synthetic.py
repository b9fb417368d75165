"""Build tiny nsys-schema SQLite exports for edge cases no real trace covers.

Only the tables and columns the analyzer reads are created, with nsys's names and types.
Times are in ns; ``globalTid`` packs pid and tid the way nsys does.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path


def global_tid(pid: int, tid: int) -> int:
    """nsys's packed thread id: <HW:8><VM:8><PID:24><TID:24>."""
    return (1 << 48) | (pid << 24) | tid


def build_export(path: Path, *, kernels=(), ranges=(), marks=(), graphs=0,
                 strings=("kernel_a",), mark_domain: str | None = None) -> Path:
    """Write an export. ``kernels``: (start, end, launch_start, pid, tid, correlation_id);
    ``ranges``: (name, start, end_or_None, pid, tid, end_tid, event_type);
    ``marks``: (text, time, pid, tid), in the NVTX domain ``mark_domain`` when one is named."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
            globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER,
            callchainId INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER,
            category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
            textId INTEGER, domainId INTEGER);
    """)
    conn.executemany("INSERT INTO StringIds VALUES (?, ?)",
                     enumerate(("cudaLaunchKernel",) + tuple(strings)))
    conn.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2025.3.2.0')")
    if kernels:
        conn.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER,
            deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
            demangledName INTEGER, shortName INTEGER)""")
    for start, end, launch, pid, tid, corr in kernels:
        conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, ?, ?, 1, 1)",
                     (start, end, corr, global_tid(pid, 0)))
        conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 0, 0, 0)",
                     (launch, launch + 5, global_tid(pid, tid), corr))
    for name, start, end, pid, tid, end_tid, event_type in ranges:
        conn.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, "
                     "endGlobalTid, domainId) VALUES (?, ?, ?, ?, ?, ?, 0)",
                     (start, end, event_type, name, global_tid(pid, tid),
                      global_tid(pid, end_tid) if end_tid is not None else None))
    domain_id = 0
    if mark_domain is not None and marks:
        domain_id = 1
        conn.execute("INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) "
                     "VALUES (0, 75, ?, ?, 1)", (mark_domain, global_tid(*marks[0][2:])))
    for text, time, pid, tid in marks:
        conn.execute("INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) "
                     "VALUES (?, 34, ?, ?, ?)", (time, text, global_tid(pid, tid), domain_id))
    if graphs:
        conn.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER, end INTEGER, "
                     "graphId INTEGER, correlationId INTEGER)")
        conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (?, ?, 1, ?)",
                         [(i * 100, i * 100 + 50, 1000 + i) for i in range(graphs)])
    conn.commit()
    conn.close()
    return path
