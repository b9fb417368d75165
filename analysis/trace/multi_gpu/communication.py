"""Communication kernels: which collective each NCCL kernel runs, and how much of it is exposed.

**Exposed** communication is the part of a communication kernel's time during which no compute
kernel — any kernel that is not communication — runs on the same GPU in the same process; the
rest is **overlapped**. Memory copies and fills do not count as compute. Every kernel of the
device covers, measured or not: a communication kernel that runs beside the next step's first
kernels is hidden by them.

The collective comes from the NCCL kernel's name (``ncclDevKernel_AllReduce_Sum_f32_RING_LL``,
``ncclKernel_AllGather_RING_LL_Sum_int8_t``, ``ncclDevKernel_SendRecv``); a communication kernel
whose name names none of them is ``other``.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from analysis.core.classify import is_communication
from analysis.core.codes import counted_rows, lookup, value_codes
from analysis.core.intervals import covered_by_pieces
from analysis.load.tables import op_ends, with_columns

# Ops read at a time for a GPU's compute kernels in :func:`exposed_ns`: the union's temporaries
# (about 100 B an op of the chunk) stay a few tens of MiB whatever the trace's length.
COVER_CHUNK_OPS = 1 << 18
# Display order; the first pattern that matches a kernel name wins (ReduceScatter before
# AllReduce: both contain "Reduce").
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv", "other")
_COLLECTIVE_PATTERNS = (
    ("reduce_scatter", re.compile(r"reduce_?scatter", re.IGNORECASE)),
    ("all_reduce", re.compile(r"all_?reduce", re.IGNORECASE)),
    ("all_gather", re.compile(r"all_?gather", re.IGNORECASE)),
    ("broadcast", re.compile(r"broadcast", re.IGNORECASE)),
    ("send_recv", re.compile(r"send|recv", re.IGNORECASE)),
)


def collective_of(demangled: str) -> str:
    """The collective of one communication kernel's demangled name (``other`` when none)."""
    return next((name for name, pattern in _COLLECTIVE_PATTERNS if pattern.search(demangled)),
                "other")


# The categories of the ``collective`` column: "" (no collective) first.
COLLECTIVE_CATEGORIES = ("", *COLLECTIVES)


def collective_columns(ops: pd.DataFrame, is_kernel: np.ndarray) -> pd.DataFrame:
    """``ops`` (rows of ``LabelledOps.ops``; ``is_kernel`` marks the kernels among them) with two
    columns added: ``is_communication`` and ``collective`` (a categorical of ``""``, for compute
    kernels and other operations, and :data:`COLLECTIVES`)."""
    codes = _collective_codes(ops, is_kernel)
    collective = pd.Categorical.from_codes(codes, categories=pd.Index(COLLECTIVE_CATEGORIES, dtype=object))
    return with_columns(ops, is_communication=codes != 0, collective=collective)


def communication_kernels(ops: pd.DataFrame) -> np.ndarray:
    """Which of ``ops`` (with ``op_kind`` and ``demangled_name``) are communication kernels: the
    rows :func:`collective_columns` marks ``is_communication``."""
    return _collective_codes(ops, (ops["op_kind"] == "kernel").to_numpy()) != 0


def _collective_codes(ops: pd.DataFrame, is_kernel: np.ndarray) -> np.ndarray:
    """Each op's position in :data:`COLLECTIVE_CATEGORIES` (int8): 0 for compute kernels and other
    operations, each name asked once."""
    codes, distinct = value_codes(ops["demangled_name"])
    collectives = np.array([COLLECTIVE_CATEGORIES.index(collective_of(str(name))) if is_communication(str(name))
                            else 0 for name in distinct] + [0], dtype=np.int8)
    collective_codes = lookup(collectives, codes)  # code -1 (no name) takes the trailing ""
    if not is_kernel.all():  # a memory operation is no communication, whatever its name
        collective_codes[~is_kernel] = 0
    return collective_codes


def exposed_ns(ops: pd.DataFrame, is_communication: np.ndarray, is_kernel: np.ndarray) -> np.ndarray:
    """For each communication kernel (``is_communication``), in order, the ns of it that no
    compute kernel (a kernel, ``is_kernel``, that is not communication) of its (process, GPU)
    covers. ``ops`` (in time order) need ``pid, device_id, start_ns, dur_ns``.

    Each (process, GPU) with communication kernels is read in turn, its compute kernels
    :data:`COVER_CHUNK_OPS` ops at a time, each piece of their union adding its overlap with the
    communication kernels (:func:`covered_by_pieces`): at millions of kernels neither the
    compute kernels' rows nor their union is held whole, and no column of every op is made."""
    communicating = np.flatnonzero(is_communication)
    # In the durations' integers: an op's exposed ns are at most its duration.
    result = np.zeros(len(communicating), dtype=ops["dur_ns"].dtype)
    if not len(communicating):
        return result
    pids, devices = ops["pid"].to_numpy(), ops["device_id"].to_numpy()
    starts = ops["start_ns"].to_numpy()
    for pid, device in counted_rows([pids[communicating], devices[communicating]])[0].tolist():
        mine = (pids[communicating] == pid) & (devices[communicating] == device)
        comm = communicating[mine]
        comm_starts, comm_ends = starts[comm], op_ends(ops, comm)

        def compute_kernels(pid=pid, device=device):
            """The (process, GPU)'s compute kernels' starts and ends, a chunk of ops at a time."""
            for low in range(0, len(ops), COVER_CHUNK_OPS):
                chunk = slice(low, low + COVER_CHUNK_OPS)
                rows = low + np.flatnonzero(is_kernel[chunk] & ~is_communication[chunk]
                                            & (pids[chunk] == pid) & (devices[chunk] == device))
                yield starts[rows], op_ends(ops, rows)

        result[mine] = comm_ends - comm_starts - covered_by_pieces(compute_kernels(), comm_starts, comm_ends)
    return result


def bus_factor(collective: str, world_size: int) -> float | None:
    """Bus bytes per byte of NCCL's message size (nccl-tests' bus bandwidth, with the message
    size of one rank): all-reduce 2(n-1)/n, all-gather and reduce-scatter n-1, broadcast and
    send/recv 1; None for other kernels, and for any in a world of one rank (nothing crosses a bus)."""
    n = world_size
    if n < 2:
        return None
    return {"all_reduce": 2 * (n - 1) / n, "all_gather": n - 1, "reduce_scatter": n - 1,
            "broadcast": 1.0, "send_recv": 1.0}.get(collective)


def collective_figures(kernels: pd.DataFrame, ranks: pd.DataFrame, passes: dict[int, int],
                       world_size: int) -> list[dict]:
    """One record per rank and collective it ran in its measured steps: ``pid, device_id, rank,
    collective, calls_per_pass, ms_per_pass, mean_call_ms, exposed_ms_per_pass``, and
    ``bytes_per_call`` (mean NCCL message size) and ``bus_bandwidth_gb_per_s`` (bus bytes over
    kernel time), null unless every call has its size in the trace.

    ``kernels`` are rows with :func:`collective_columns`, ``exposed_ns`` and ``bytes`` (-1 when unknown);
    ``passes`` maps a process id to its number of measured steps."""
    comm = kernels[kernels["measured"].to_numpy() & kernels["is_communication"].to_numpy()]
    if not len(comm):
        return []
    comm = comm.assign(unknown=comm["bytes"] < 0)
    totals = comm.groupby(["pid", "device_id", "collective"], observed=True).agg(
        calls=("dur_ns", "size"), dur_ns=("dur_ns", "sum"), exposed_ns=("exposed_ns", "sum"),
        bytes=("bytes", "sum"), unknown=("unknown", "sum"))
    records = []
    for rank in ranks.itertuples(index=False):
        n = passes.get(rank.pid, 0)
        for collective in COLLECTIVES:
            key = (rank.pid, rank.device_id, collective)
            if not n or key not in totals.index:
                continue
            row = totals.loc[key]
            known = row["unknown"] == 0
            factor = bus_factor(collective, world_size)
            records.append({
                "pid": int(rank.pid), "device_id": int(rank.device_id), "rank": int(rank.rank),
                "collective": collective, "calls_per_pass": row["calls"] / n,
                "ms_per_pass": row["dur_ns"] / n / 1e6,
                "mean_call_ms": row["dur_ns"] / row["calls"] / 1e6,
                "exposed_ms_per_pass": row["exposed_ns"] / n / 1e6,
                "bytes_per_call": row["bytes"] / row["calls"] if known else None,
                # bytes per ns are GB/s
                "bus_bandwidth_gb_per_s": row["bytes"] * factor / row["dur_ns"]
                if known and factor is not None and row["dur_ns"] > 0 else None,
            })
    return records
