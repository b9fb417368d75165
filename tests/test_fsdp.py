"""FSDP blocks: each block's all-gather, and whether it finished before the compute stream was
ready for the block, on synthetic traces with known answers."""
from __future__ import annotations

import pytest

from analysis.core.phases import label_ops
from analysis.load import load_trace
from analysis.trace.multi_gpu.summary import communication_summary
from tests.synthetic import build_export

GEMM = "gemm_kernel"
COPY_IN = "foreach_all_gather_copy_in"
ALL_GATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
PUSH_POP = 59
US = 1000


def _step(name: str, base: int, corr: int) -> tuple[list, list]:
    """One step: forward [0, 1000) µs holding layer_0 [100, 400) and layer_1 [400, 700).

    GPU (µs): the root's all-gather [20, 50) and the embedding [50, 80) are launched before the
    blocks; block 0's all-gather [60, 150) is launched inside layer_0 (so is a copy-in kernel on
    a side stream, [55, 58), that is not block compute); block 0's compute [150, 300) waits for
    it: the compute stream was ready at 80, so the gather is 70 µs late. Block 1's all-gather
    [160, 250) ends before block 0's compute does (300): 50 µs early."""
    t = lambda us: base + us * US  # noqa: E731
    ranges = [(name, t(0), t(2000), 1, 1, 1, PUSH_POP), ("forward", t(0), t(1000), 1, 1, 1, PUSH_POP),
              ("layer_0", t(100), t(400), 1, 1, 1, PUSH_POP),
              ("layer_1", t(400), t(700), 1, 1, 1, PUSH_POP)]
    kernels = [  # start, end, launch, pid, tid, correlation id, name, device, stream
        (t(20), t(50), t(10), 1, 1, corr, ALL_GATHER, 0, 30),
        (t(50), t(80), t(20), 1, 1, corr + 1, GEMM, 0, 7),
        (t(60), t(150), t(110), 1, 1, corr + 2, ALL_GATHER, 0, 30),
        (t(55), t(58), t(105), 1, 1, corr + 3, COPY_IN, 0, 31),
        (t(150), t(300), t(130), 1, 1, corr + 4, GEMM, 0, 7),
        (t(160), t(250), t(410), 1, 1, corr + 5, ALL_GATHER, 0, 30),
        (t(300), t(400), t(420), 1, 1, corr + 6, GEMM, 0, 7),
    ]
    return ranges, kernels


def _summary(tmp_path, steps):
    ranges, kernels = [], []
    for index, name in enumerate(steps):
        r, k = _step(name, index * 10_000 * US, index * 100 + 1)
        ranges += r
        kernels += k
    path = build_export(tmp_path / "fsdp.sqlite", ranges=ranges, kernels=kernels,
                        strings=(GEMM, COPY_IN, ALL_GATHER))
    trace = load_trace(path)
    return communication_summary(trace, label_ops(trace))


def test_block_lead_and_lag(tmp_path):
    blocks = _summary(tmp_path, ["warmup_0", "step_0", "step_1"])["fsdp_blocks"]
    assert [(b["rank"], b["block"], b["passes"]) for b in blocks] == [(0, 0, 2), (0, 1, 2)]
    assert [b["lead_ms"] for b in blocks] == pytest.approx([-0.07, 0.05])
    assert [b["wait_ms"] for b in blocks] == pytest.approx([0.07, 0])
    assert [b["late_passes"] for b in blocks] == [2, 0]
    assert [b["allgather_ms"] for b in blocks] == pytest.approx([0.09, 0.09])


def test_no_layer_ranges_no_blocks(tmp_path):
    path = build_export(tmp_path / "plain.sqlite", ranges=[
        ("step_0", 0, 1000, 1, 1, 1, PUSH_POP), ("forward", 0, 500, 1, 1, 1, PUSH_POP)],
        kernels=[(10, 20, 5, 1, 1, 1, ALL_GATHER), (20, 30, 6, 1, 1, 2, GEMM)],
        strings=(ALL_GATHER, GEMM))
    trace = load_trace(path)
    assert communication_summary(trace, label_ops(trace))["fsdp_blocks"] == []
