"""Build tiny nsys-schema SQLite exports for edge cases no real trace covers.

Only the tables and columns the analyzer reads are created, as the export map
(:mod:`analysis.load.export_map`) declares them.
Times are in ns; ``globalTid`` packs pid and tid the way nsys does.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from analysis.load.export_map import GRAPHS, KERNELS, MEMORY_EVENTS, METADATA, NVTX, RUNTIME, STRINGS, SYSTEM_ENVIRONMENT

GEMM = "gemm_kernel"
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
PUSH_POP = 59
US = 1000  # µs in ns: the multi-rank builders below take their times in µs


def global_tid(pid: int, tid: int) -> int:
    """nsys's packed thread id: <HW:8><VM:8><PID:24><TID:24>."""
    return (1 << 48) | (pid << 24) | tid


def build_export(path: Path, *, kernels=(), ranges=(), marks=(), graphs=(),
                 strings=("kernel_a",), memory_events=None) -> Path:
    """Write an export. ``kernels``: (start, end, launch_start, pid, tid, correlation_id), optionally
    followed by (name, device, stream) — name one of ``strings`` (default the first), device 0,
    stream 7;
    ``ranges``: (name, start, end_or_None, pid, tid, end_tid, event_type);
    ``marks``: (text, time, pid, tid), optionally followed by a domain name; ``graphs``: whole CUDA-graph
    executions (start, end, launch_start, pid, tid, correlation_id, graph_id); ``memory_events`` (the
    table only when given): (start, address, bytes, is_alloc, api_start_or_None, pid, tid, correlation_id)."""
    conn = sqlite3.connect(path)
    for table in (STRINGS, METADATA, RUNTIME):
        conn.execute(table.create_sql())
    conn.execute(NVTX.create_sql(without=("payload",)))  # NCCL payloads: tests.test_ranks adds them
    conn.executemany(f"INSERT INTO {STRINGS.name} VALUES (?, ?)",
                     enumerate(("cudaLaunchKernel",) + tuple(strings)))
    conn.execute(f"INSERT INTO {METADATA.name} VALUES ('EXPORT_PRODUCT_VERSION', '2025.3.2.0')")
    if kernels:
        conn.execute(KERNELS.create_sql())
    string_ids = {name: i for i, name in enumerate(("cudaLaunchKernel",) + tuple(strings))}
    for start, end, launch, pid, tid, corr, *where in kernels:
        name, device, stream = tuple(where) + (strings[0], 0, 7)[len(where):]
        conn.execute(f"INSERT INTO {KERNELS.name} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (start, end, device, stream, corr, global_tid(pid, 0), string_ids[name],
                      string_ids[name]))
        conn.execute(f"INSERT INTO {RUNTIME.name} VALUES (?, ?, ?, ?, 0)",
                     (launch, launch + 5, global_tid(pid, tid), corr))
    for name, start, end, pid, tid, end_tid, event_type in ranges:
        conn.execute(f"INSERT INTO {NVTX.name} (start, end, eventType, text, globalTid, "
                     "endGlobalTid, domainId) VALUES (?, ?, ?, ?, ?, ?, 0)",
                     (start, end, event_type, name, global_tid(pid, tid),
                      global_tid(pid, end_tid) if end_tid is not None else None))
    domains: dict[tuple[int, str], int] = {}  # (pid, name) -> domainId, created on first use
    for text, time, pid, tid, *domain in marks:
        domain_id = 0
        if domain and (pid, domain[0]) not in domains:  # first use: its domain-create row
            domains[(pid, domain[0])] = len(domains) + 1
            conn.execute(f"INSERT INTO {NVTX.name} (start, eventType, text, globalTid, domainId) "
                         "VALUES (0, 75, ?, ?, ?)", (domain[0], global_tid(pid, tid), len(domains)))
        if domain:
            domain_id = domains[(pid, domain[0])]
        conn.execute(f"INSERT INTO {NVTX.name} (start, eventType, text, globalTid, domainId) "
                     "VALUES (?, 34, ?, ?, ?)", (time, text, global_tid(pid, tid), domain_id))
    if memory_events is not None:
        conn.execute(MEMORY_EVENTS.create_sql())
    for start, address, size, is_alloc, api_start, pid, tid, corr in memory_events or ():
        conn.execute(f"INSERT INTO {MEMORY_EVENTS.name} VALUES (?, ?, 0, ?, ?, 2, ?, ?)",
                     (start, global_tid(pid, 0), address, size, 0 if is_alloc else 1, corr))
        if api_start is not None:
            conn.execute(f"INSERT INTO {RUNTIME.name} VALUES (?, ?, ?, ?, 0)",
                         (api_start, api_start + 2, global_tid(pid, tid), corr))
    if graphs:
        conn.execute(GRAPHS.create_sql())
    for start, end, launch, pid, tid, corr, graph_id in graphs:
        conn.execute(f"INSERT INTO {GRAPHS.name} VALUES (?, ?, 0, 7, ?, ?, ?)",
                     (start, end, corr, global_tid(pid, 0), graph_id))
        conn.execute(f"INSERT INTO {RUNTIME.name} VALUES (?, ?, ?, ?, 0)",
                     (launch, launch + 5, global_tid(pid, tid), corr))
    conn.commit()
    conn.close()
    return path


def add_environment(path: Path, environment: str) -> Path:
    """Give an export the environment nsys started in: ``environment`` as nsys writes it,
    ``KEY=VALUE`` items joined by ``;``."""
    with sqlite3.connect(path) as conn:
        conn.execute(SYSTEM_ENVIRONMENT.create_sql())
        conn.execute(f"INSERT INTO {SYSTEM_ENVIRONMENT.name} VALUES ('DeviceEnvironment', ?)", (environment,))
    return path


def rank_process(pid: int, device: int, rank: int, forward_offset: int, cover: list,
                 config: dict | None = None) -> tuple:
    """Ranges, marks and kernels of one process: warmup_0 then step_0, step_1, each a forward,
    a backward and a range no phase is named after (``grad_sync``); one all-reduce [500, 600) µs
    into each step's backward, covered by the ``cover`` compute kernels (µs offsets in the
    step), one all-reduce [950, 960) µs launched in ``grad_sync``; one of each in the warm-up.
    The runner's config mark holds ``rank``, ``world_size`` 2 and ``config``."""
    ranges, kernels = [], []
    corr = iter(range(1, 1000))
    for index, name in enumerate(("warmup_0", "step_0", "step_1")):
        base = (index + 1) * 10_000 * US
        ranges += [(name, base, base + 1000 * US, pid, 1, 1, PUSH_POP),
                   ("forward", base, base + 400 * US, pid, 1, 1, PUSH_POP),
                   ("backward", base + 400 * US, base + 900 * US, pid, 1, 1, PUSH_POP),
                   ("grad_sync", base + 900 * US, base + 1000 * US, pid, 1, 1, PUSH_POP)]
        kernels.append((base + (10 + forward_offset) * US, base + (110 + forward_offset) * US,
                        base + US, pid, 1, next(corr), GEMM, device, 7))
        kernels.append((base + 500 * US, base + 600 * US, base + 410 * US, pid, 2, next(corr),
                        ALL_REDUCE, device, 20))
        kernels.append((base + 950 * US, base + 960 * US, base + 905 * US, pid, 1, next(corr),
                        ALL_REDUCE, device, 20))
        for start, end in cover:
            kernels.append((base + start * US, base + end * US, base + 405 * US, pid, 2,
                            next(corr), GEMM, device, 7))
    config = json.dumps({"event": "config", **(config or {}), "rank": rank, "world_size": 2})
    return ranges, [(config, 5 * US, pid, 1, "cs336_profile")], kernels
