"""Which NCCL kernel each NCCL call with a message size belongs to (the calls:
:func:`analysis.load.nccl_payloads.read_message_sizes`, on the loaded trace as ``nccl_calls``).

**Which kernel a call belongs to.** A call's kernel is the first NCCL kernel launched on the
call's thread at or after the call started: a collective launches its kernel inside its own
range, a group (``ncclGroupStart`` ... ``ncclGroupEnd``) launches one kernel at its end for all
its calls. A kernel's bytes are the sum over its calls of its own collective; for send/recv
kernels, over the ``ncclSend`` calls only (bytes sent).
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def kernel_bytes(kernels: pd.DataFrame, calls: pd.DataFrame) -> np.ndarray:
    """Bytes of each communication kernel, by the rule in the module docstring; -1 where no call
    with a size belongs to the kernel. ``kernels`` and ``calls`` both carry a ``collective``
    column (``""`` for compute kernels)."""
    result = np.full(len(kernels), -1, dtype=np.int64)
    comm = (kernels["collective"] != "").to_numpy()
    if not len(calls) or not comm.any():
        return result
    calls = calls[(calls["collective"] != "send_recv") | calls["call"].str.contains("Send")]
    collective = calls["collective"].to_numpy()
    rows = np.flatnonzero(comm)
    launch_groups = kernels.iloc[rows].groupby(["pid", "launch_tid"]).indices
    for (pid, tid), call_rows in calls.groupby(["pid", "tid"]).indices.items():
        kernel_rows = launch_groups.get((pid, tid))
        if kernel_rows is None:
            continue
        kernel_rows = rows[kernel_rows]
        kernel_rows = kernel_rows[np.argsort(kernels["launch_start_ns"].to_numpy()[kernel_rows])]
        launches = kernels["launch_start_ns"].to_numpy()[kernel_rows]
        owner = np.searchsorted(launches, calls["start_ns"].to_numpy()[call_rows], side="left")
        ok = owner < len(kernel_rows)
        owner_rows = kernel_rows[owner[ok]]
        same = collective[call_rows[ok]] == np.asarray(kernels["collective"].array[owner_rows], dtype=object)
        sizes = calls["bytes"].to_numpy()[call_rows[ok]][same]
        np.maximum.at(result, owner_rows[same], 0)
        np.add.at(result, owner_rows[same], sizes)
    return result
