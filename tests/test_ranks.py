"""Per-rank figures, exposed communication, collectives and skew on synthetic two-process
traces with known answers, and on real two-GPU exports checked by independent SQL."""
from __future__ import annotations

import sqlite3
import struct

import numpy as np
import pandas as pd
import pytest

from analysis.core.classify import RULES, classify_name
from analysis.core.phases import label_ops
from analysis.load import load_trace
from analysis.load.export_map import NVTX, PAYLOAD_SCHEMAS
from analysis.trace.multi_gpu.communication import collective_columns, collective_of, communication_kernels, exposed_ns
from analysis.trace.multi_gpu.ranks import RUN_KEYS, RUN_PHASES, device_pairs, kernel_runs, pass_figures, rank_notes
from analysis.trace.multi_gpu.summary import COLUMNS, LAUNCH_ONLY, communication_summary, kernel_rows, launches_read
from analysis.trace.summary import ops_read
from tests.synthetic import ALL_REDUCE, GEMM, US, add_environment, build_export, global_tid, rank_process


@pytest.fixture
def two_ranks(tmp_path):
    # pid 100 on GPU 1 is rank 0 by its config mark; pid 200 on GPU 0 is rank 1. On GPU 1 the
    # all-reduce [500, 600) is covered by [520, 550) and [580, 620): 50 µs exposed. On GPU 0
    # nothing covers it (GPU 1's compute does not count): 100 µs exposed.
    first = rank_process(100, 1, 0, 0, [(520, 550), (580, 620)])
    second = rank_process(200, 0, 1, 25, [(700, 710)])
    # pid 200 ran a kernel on GPU 1 before its steps: no rank of its own
    stray = (1000 * US, 1010 * US, 999 * US, 200, 1, 999, GEMM, 1, 7)
    path = build_export(tmp_path / "two.sqlite", ranges=first[0] + second[0],
                        marks=first[1] + second[1], kernels=first[2] + second[2] + [stray],
                        strings=(GEMM, ALL_REDUCE))
    trace = load_trace(path)
    return communication_summary(trace, label_ops(trace))


def test_each_rank_has_its_own_passes_and_exposed_communication(two_ranks):
    ranks = two_ranks["ranks"]
    assert [(r["rank"], r["pid"], r["device_id"], r["rank_source"]) for r in ranks] == [
        (0, 100, 1, "config mark"), (1, 200, 0, "config mark")]
    assert [r["passes"] for r in ranks] == [2, 2]  # measured steps of each process, not 4
    backward = [r["phases"]["backward"] for r in ranks]
    assert [b["passes"] for b in backward] == [2, 2]
    assert [b["kernels_per_pass"] for b in backward] == [3, 2]
    assert [b["communication_ms_per_pass"] for b in backward] == pytest.approx([0.1, 0.1])
    assert [b["exposed_communication_ms_per_pass"] for b in backward] == pytest.approx([0.05, 0.1])
    assert [b["overlapped_communication_ms_per_pass"] for b in backward] == pytest.approx([0.05, 0])
    forward = ranks[0]["phases"]["forward"]
    assert forward["kernel_ms_per_pass"] == pytest.approx(0.1)
    assert forward["communication_ms_per_pass"] == 0
    outside = ranks[0]["phases"]["outside_phases"]  # the all-reduce of grad_sync, all exposed
    assert (outside["passes"], outside["kernels_per_pass"]) == (2, 1)
    assert outside["exposed_communication_ms_per_pass"] == pytest.approx(0.01)
    # the whole step: every phase and grad_sync, the warm-up's kernels left out
    step = ranks[0]["phases"]["step"]
    assert step["gpu_span_ms_per_pass"] == pytest.approx(0.95)  # first kernel at 10 µs, last to 960
    assert step["gpu_span_ms_spread"] == 0
    assert step["kernel_ms_per_pass"] == pytest.approx(0.1 + 0.1 + 0.07 + 0.01)
    assert step["exposed_communication_ms_per_pass"] == pytest.approx(0.05 + 0.01)


def test_collectives_per_rank(two_ranks):
    rows = two_ranks["collectives"]
    assert [(r["rank"], r["collective"], r["calls_per_pass"]) for r in rows] == [
        (0, "all_reduce", 2), (1, "all_reduce", 2)]
    assert [r["exposed_ms_per_pass"] for r in rows] == pytest.approx([0.06, 0.11])
    assert rows[0]["mean_call_ms"] == pytest.approx(0.055)
    assert rows[0]["bytes_per_call"] is None and rows[0]["bus_bandwidth_gb_per_s"] is None


def test_skew_between_ranks(two_ranks):
    steps = two_ranks["skew"]["steps"]
    assert [s["step"] for s in steps] == ["step_0", "step_1"]
    # first kernels start 10 and 35 µs into the step, the last ones end at 960 µs on both; the
    # backward kernels span [500, 620) and [500, 710) µs
    assert steps[0]["start_spread_ms"] == pytest.approx(0.025)
    assert steps[0]["end_spread_ms"] == 0
    assert steps[0]["duration_spread_ms"] == pytest.approx(0.025)
    assert steps[0]["phase_duration_spread_ms"]["backward"] == pytest.approx(0.09)
    assert two_ranks["skew"]["max_start_spread_ms"] == pytest.approx(0.025)


def test_communication_is_the_first_classification_rule():
    # collective_columns classifies with this rule alone, which is exact only while it wins
    assert RULES[0].category == "communication"
    assert classify_name(ALL_REDUCE) == "communication" and collective_of(ALL_REDUCE) == "all_reduce"


def test_without_config_marks_ranks_follow_device_order(tmp_path):
    first = rank_process(100, 1, 0, 0, [])
    second = rank_process(200, 0, 1, 0, [])
    path = build_export(tmp_path / "unmarked.sqlite", ranges=first[0] + second[0],
                        kernels=first[2] + second[2], strings=(GEMM, ALL_REDUCE))
    trace = load_trace(path)
    ranks = communication_summary(trace, label_ops(trace))["ranks"]
    assert [(r["rank"], r["device_id"], r["rank_source"]) for r in ranks] == [
        (0, 0, "device order"), (1, 1, "device order")]


def replicas(kernels: list, threads: tuple[int, int] | None) -> list:
    """``kernels`` of GPU 0 and a copy on GPU 1; with ``threads``, the main thread's kernels of
    GPU 0 and of GPU 1 launched from each of them (``nn.DataParallel`` runs a replica's forward in
    a thread of its own), else both from the main thread (a model split across the GPUs)."""
    def moved(kernel, device):
        tid = threads[device] if threads and kernel[4] == 1 else kernel[4]
        return (*kernel[:4], tid, kernel[5] + 500 * device, kernel[6], device, kernel[8])
    return [moved(k, 0) for k in kernels] + [moved(k, 1) for k in kernels]


def test_one_process_on_two_gpus_has_a_rank_per_gpu_and_says_its_passes_hold_both(tmp_path):
    """One process launching on GPUs 0 and 1 (``nn.DataParallel``'s replicas, each run from a
    thread of its own): a rank per GPU, a phase range a pass per GPU (its ops each with their
    GPU's range), and a note that says so."""
    ranges, _, kernels = rank_process(100, 0, 0, 0, [])
    path = build_export(tmp_path / "dp.sqlite", ranges=ranges, kernels=replicas(kernels, (3, 4)), strings=(GEMM, ALL_REDUCE))
    trace = load_trace(path)
    labelled = label_ops(trace)
    ranks = communication_summary(trace, labelled)["ranks"]
    assert [(r["pid"], r["device_id"], r["rank"]) for r in ranks] == [(100, 0, 0), (100, 1, 1)]
    assert [n for n in trace.notes if n.startswith("process 100 launches on 2 GPUs (0, 1")]
    # a pass per GPU: 2 measured steps' forwards on 2 GPUs are 4 passes, each rank's 2
    assert labelled.measured_passes["forward"] == 4
    assert [r["phases"]["forward"]["passes"] for r in ranks] == [2, 2]
    forward = labelled.phase_ranges[labelled.phase_ranges["measured"] & (labelled.phase_ranges["phase"] == "forward")]
    assert sorted(forward["device_id"]) == [0, 0, 1, 1]
    held = labelled.ops[labelled.ops["phase"] == "forward"]
    assert held.groupby("phase_range_id")["device_id"].nunique().eq(1).all()


def test_a_model_split_across_two_gpus_is_one_pass_over_both(tmp_path):
    """One process whose forward the main thread launches onto GPU 0, then GPU 1 (a model split
    across them): still a rank per GPU, but a phase range is one pass holding both GPUs' work,
    and the note says the model is split."""
    ranges, _, kernels = rank_process(100, 0, 0, 0, [])
    path = build_export(tmp_path / "split.sqlite", ranges=ranges, kernels=replicas(kernels, None), strings=(GEMM, ALL_REDUCE))
    trace = load_trace(path)
    labelled = label_ops(trace)
    assert labelled.split_models == (100,)
    ranks = communication_summary(trace, labelled)["ranks"]
    assert [(r["pid"], r["device_id"], r["rank"]) for r in ranks] == [(100, 0, 0), (100, 1, 1)]
    assert [n for n in trace.notes if n.startswith("process 100 launches on 2 GPUs (0, 1), its forward passes from one "
                                                   "thread onto each in turn: one model split across them")]
    assert labelled.measured_passes["forward"] == 2
    assert (labelled.phase_ranges["device_id"] == -1).all()
    held = labelled.ops[labelled.ops["phase"] == "forward"]
    assert held.groupby("phase_range_id")["device_id"].nunique().eq(2).all()


def test_one_process_on_two_gpus_with_no_phase_range(tmp_path):
    """Kernels on two GPUs, all from the main thread, and no range at all: three alike iterations
    of a matmul and an all-reduce on each GPU. They are a loop of three calls (each name launched
    twice a call, once a GPU), and one thread launching onto both GPUs makes each call one pass of
    a model split across them, holding both GPUs' kernels, not a pass per GPU."""
    _, _, kernels = rank_process(100, 0, 0, 0, [])
    kernels = [k for k in kernels if k[4] == 1]
    replica = [(*k[:5], k[5] + 500, k[6], 1, k[8]) for k in kernels]
    path = build_export(tmp_path / "bare.sqlite", kernels=kernels + replica, strings=(GEMM, ALL_REDUCE))
    labelled = label_ops(load_trace(path))
    assert labelled.split_models == (100,) and labelled.measured_passes == {"forward": 3}
    passes = labelled.ops.groupby("phase_range_id")["device_id"].agg(["size", "nunique"])
    assert passes["size"].tolist() == [4] * 3 and passes["nunique"].tolist() == [2] * 3


def test_a_process_per_gpu_is_no_process_on_several(tmp_path):
    first, second = rank_process(100, 1, 0, 0, []), rank_process(200, 0, 1, 0, [])
    path = build_export(tmp_path / "ddp.sqlite", ranges=first[0] + second[0], kernels=first[2] + second[2],
                        strings=(GEMM, ALL_REDUCE))
    trace = load_trace(path)
    communication_summary(trace, label_ops(trace))
    assert not [n for n in trace.notes if "GPUs (" in n]


# ------------------------------------------------------------------ real two-GPU exports

# Independent of the analyzer: per (process, GPU), kernels, kernel and NCCL time, and the NCCL
# time that the islands of compute kernels (runs of overlapping non-NCCL kernels on the GPU,
# merged with window functions) overlap.
PER_RANK_SQL = """
WITH k AS (
  SELECT (globalPid >> 24) & 16777215 AS pid, deviceId AS device, start, "end",
         s.value LIKE '%nccl%' AS comm
  FROM CUPTI_ACTIVITY_KIND_KERNEL JOIN StringIds s ON s.id = demangledName),
reach AS (
  SELECT pid, device, start, "end",
         MAX("end") OVER (PARTITION BY pid, device ORDER BY start, "end"
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
  FROM k WHERE NOT comm),
numbered AS (
  SELECT pid, device, start, "end",
         SUM(reach IS NULL OR start > reach) OVER (PARTITION BY pid, device ORDER BY start, "end"
                                                  ROWS UNBOUNDED PRECEDING) AS island
  FROM reach),
islands AS (SELECT pid, device, MIN(start) AS start, MAX("end") AS "end"
            FROM numbered GROUP BY pid, device, island)
SELECT pid, device, COUNT(*), MAX("end") - MIN(start), SUM("end" - start),
  SUM(CASE WHEN comm THEN "end" - start END),
  (SELECT COALESCE(SUM(MIN(c."end", i."end") - MAX(c.start, i.start)), 0)
   FROM k c JOIN islands i ON i.pid = c.pid AND i.device = c.device
     AND i.start < c."end" AND i."end" > c.start
   WHERE c.comm AND c.pid = k.pid AND c.device = k.device)
FROM k GROUP BY pid, device ORDER BY device, pid
"""


@pytest.mark.parametrize("name", ["h100_2gpu_1s.sqlite"])
def test_real_two_gpu_exports_match_sql(external_trace, name):
    path = external_trace(name)
    trace = load_trace(path)
    summary = communication_summary(trace, label_ops(trace))
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        expected = conn.execute(PER_RANK_SQL).fetchall()
    assert len(expected) == 2 and len(summary["ranks"]) == 2
    for rank, (pid, device, count, span_ns, kernel_ns, comm_ns, covered_ns) in zip(
            summary["ranks"], expected):
        whole = rank["phases"]["step"]  # no step ranges: the whole capture is one pass
        assert (rank["pid"], rank["device_id"], rank["passes"]) == (pid, device, 1)
        assert whole["kernels_per_pass"] == count
        assert whole["gpu_span_ms_per_pass"] == pytest.approx(span_ns / 1e6, abs=1e-9)
        assert whole["kernel_ms_per_pass"] == pytest.approx(kernel_ns / 1e6, abs=1e-9)
        assert whole["communication_ms_per_pass"] == pytest.approx((comm_ns or 0) / 1e6, abs=1e-9)
        assert whole["exposed_communication_ms_per_pass"] == pytest.approx(
            ((comm_ns or 0) - covered_ns) / 1e6, abs=1e-9)


# Independent of the analyzer: each process's kernels in launch order (the launch call of the same
# correlation id and process), with their duration and whether they are NCCL's.
LAUNCH_ORDER_SQL = """
SELECT (k.globalPid >> 24) & 16777215 AS pid, k.demangledName, k."end" - k.start, s.value LIKE '%nccl%'
FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
  AND (r.globalTid >> 24) & 16777215 = (k.globalPid >> 24) & 16777215
ORDER BY pid, r.start
"""


@pytest.mark.parametrize("name, calls", [("mfu_2gpu_before.sqlite", 16), ("mfu_2gpu_after.sqlite", 15)])
def test_real_two_gpu_forward_loops_match_sql(external_trace, name, calls):
    """Two ranks of a forward-only job with no range of their own: each rank's kernels end with
    ``calls`` repeats of one sequence of 119 (two flash attentions and two NCCL send/receives a
    call). Each repeat is one forward pass; its figures are those of the last calls x 119 kernels
    in launch order."""
    path = external_trace(name)
    trace = load_trace(path)
    summary = communication_summary(trace, label_ops(trace))
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(LAUNCH_ORDER_SQL).fetchall()
    assert len(summary["ranks"]) == 2
    for rank in summary["ranks"]:
        loop = [row for row in rows if row[0] == rank["pid"]][-calls * 119:]
        names = [row[1] for row in loop]
        assert names[119:] == names[:-119] and names[:119] != names[1:120]  # a period of 119 kernels
        forward = rank["phases"]["forward"]
        assert rank["passes"] == forward["passes"] == calls
        assert forward["kernels_per_pass"] == 119
        assert forward["kernel_ms_per_pass"] == pytest.approx(sum(row[2] for row in loop) / calls / 1e6, abs=1e-9)
        assert forward["communication_ms_per_pass"] == pytest.approx(
            sum(row[2] for row in loop if row[3]) / calls / 1e6, abs=1e-9)


def _add_allreduce_payloads(path, calls):
    """Give an export NCCL's payload schema for all-reduce and ``calls`` (pid, tid, start, bytes)
    as ``ncclAllReduce`` ranges whose binaryData holds nsys's header and NCCL's payload."""
    schema = 16777223
    with sqlite3.connect(path) as conn:
        payload = NVTX.spec("payload")
        conn.execute(f"ALTER TABLE {NVTX.name} ADD COLUMN {payload.name} {payload.sql_type}")
        conn.execute(PAYLOAD_SCHEMAS.create_sql(extra=("domainId INTEGER", "idx INTEGER", "type INTEGER")))
        conn.executemany(f"INSERT INTO {PAYLOAD_SCHEMAS.name} VALUES (?, ?, ?, 9, ?, ?)",
                         [(schema, "NCCL communicator ID", None, 0, 18), (schema, "Message size [bytes]", 8, 1, 22),
                          (schema, "Reduction operation", 16, 2, 5)])
        for pid, tid, start, size in calls:
            blob = struct.pack("<IIIIQQ", 9, 0, schema, 0, 24, 56) + struct.pack("<QQQ", 77, size, 0)
            conn.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, "
                         "domainId, binaryData) VALUES (?, ?, 59, 'ncclAllReduce', ?, 9, ?)",
                         (start, start + 3 * US, global_tid(pid, tid), blob))


def _two_ranks_with_payloads(tmp_path) -> str:
    """Two ranks of a DDP job whose all-reduces carry NCCL payloads: each step's are launched 410 µs
    into it from thread 2 and 905 µs into it from thread 1; their calls start 2 µs earlier, the
    second half the size of the first (4 and 2 MiB on rank 0, 2 and 1 on rank 1)."""
    first = rank_process(100, 1, 0, 0, [])
    second = rank_process(200, 0, 1, 0, [])
    path = build_export(tmp_path / "payloads.sqlite", ranges=first[0] + second[0],
                        marks=first[1] + second[1], kernels=first[2] + second[2],
                        strings=(GEMM, ALL_REDUCE))
    mib = 1 << 20
    _add_allreduce_payloads(path, [(pid, tid, (index + 1) * 10_000 * US + at * US, size // part)
                                   for pid, size in ((100, 4 * mib), (200, 2 * mib))
                                   for tid, at, part in ((2, 408, 1), (1, 903, 2))
                                   for index in range(3)])
    return path


def test_message_sizes_from_nccl_payloads_give_bytes_and_bus_bandwidth(tmp_path):
    mib = 1 << 20
    trace = load_trace(_two_ranks_with_payloads(tmp_path))
    labelled = label_ops(trace)
    summary = communication_summary(trace, labelled)
    assert (summary["world_size"], summary["world_size_source"]) == (2, "config mark")
    # the sizes are matched by launch; no FSDP block reads every kernel's launch, so the ops keep none
    assert not set(LAUNCH_ONLY) & set(labelled.ops.columns)
    rows = summary["collectives"]
    assert [r["bytes_per_call"] for r in rows] == [3 * mib, 1.5 * mib]
    # all-reduce on 2 ranks moves 2(n-1)/n = 1 bus byte per message byte; 110 µs per step
    assert [r["bus_bandwidth_gb_per_s"] for r in rows] == pytest.approx(
        [6 * mib / 110_000, 3 * mib / 110_000])


def test_the_labelling_keeps_the_launches_of_the_communication_kernels_alone_and_the_figures_are_the_same(tmp_path):
    """Labelled as the summary labels them (:func:`ops_read`), the ops hold no launch column once
    labelled; the communication kernels' launches are kept beside them, and match each call's
    size to its kernel as when every op keeps its launch."""
    path = _two_ranks_with_payloads(tmp_path)
    trace = load_trace(path)
    columns, launch_rows = ops_read(trace.ranges, trace.kernels, trace.memops)
    assert not set(LAUNCH_ONLY) & columns and launch_rows is not None
    labelled = label_ops(trace, columns=columns, launch_rows=launch_rows)
    assert not set(LAUNCH_ONLY) & set(labelled.ops.columns)
    assert labelled.launches.index.tolist() == np.flatnonzero(communication_kernels(labelled.ops)).tolist()
    assert len(labelled.launches) == 12  # two all-reduces a step, three steps, two ranks
    whole = load_trace(path)
    summary = communication_summary(trace, labelled)
    assert summary == communication_summary(whole, label_ops(whole))
    assert [r["bytes_per_call"] for r in summary["collectives"]] == [3 * (1 << 20), 1.5 * (1 << 20)]


def test_every_ops_launches_are_read_only_where_fsdp_blocks_may_be_found():
    def names(*kernels):
        return pd.DataFrame({"demangled_name": pd.Categorical(kernels)})

    layers, plain = pd.DataFrame({"name": ["forward", "layer_0"]}), pd.DataFrame({"name": ["forward"]})
    gather, reduce = "ncclDevKernel_AllGather_RING_LL", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    assert launches_read(layers, names("gemm", gather)) == "every"
    assert launches_read(plain, names("gemm", gather)) == "communication"
    assert launches_read(layers, names("gemm", reduce)) == "communication"
    assert launches_read(layers, names("gemm"), names("[CUDA memcpy Device-to-Device]")) == "none"


@pytest.mark.parametrize("environment, world_size, source, rank, bus_factor", [
    ("PATH=/usr/bin;RANK=1;LOCAL_RANK=1;WORLD_SIZE=4;TOKEN=secret", 4, "launcher (RANK/WORLD_SIZE)", 1, 1.5),
    ("SLURM_PROCID=2;SLURM_NTASKS=3", 3, "launcher (SLURM_PROCID/SLURM_NTASKS)", 2, 4 / 3),
    ("RANK=4;WORLD_SIZE=4", 1, "ranks in the trace", 0, None),  # no rank 4 of 4: not a launcher's pair
    (None, 1, "ranks in the trace", 0, None),
])
def test_one_rank_under_its_own_nsys_takes_its_launchers_rank_and_world_size(
        tmp_path, environment, world_size, source, rank, bus_factor):
    ranges, _, kernels = rank_process(100, 0, 0, 0, [])  # no config mark
    path = build_export(tmp_path / "rank.sqlite", ranges=ranges, kernels=kernels, strings=(GEMM, ALL_REDUCE))
    _add_allreduce_payloads(path, [(100, tid, (index + 1) * 10_000 * US + at * US, 1 << 20)
                                   for tid, at in ((2, 408), (1, 903)) for index in range(3)])
    if environment is not None:
        add_environment(path, environment)
    trace = load_trace(path)
    summary = communication_summary(trace, label_ops(trace))
    assert (summary["world_size"], summary["world_size_source"]) == (world_size, source)
    assert [(r["rank"], r["rank_source"]) for r in summary["ranks"]] == [
        (rank, source if world_size > 1 else "device order")]
    held = [note for note in trace.notes if "each rank ran under its own nsys" in note]
    assert held == ([f"the trace holds rank {rank} of {world_size} ({source[10:-1]} in the environment nsys ran in: "
                     "each rank ran under its own nsys); the other ranks are in their own traces, and figures "
                     "across ranks cover only this one"] if world_size > 1 else [])
    # 2 MiB in 110 µs of all-reduce per step; a world of one rank moves nothing across a bus
    bandwidth = summary["collectives"][0]["bus_bandwidth_gb_per_s"]
    assert bandwidth == (pytest.approx(bus_factor * 2 * (1 << 20) / 110_000) if bus_factor else None)
    assert "secret" not in repr(trace.launcher_rank)


def test_device_pairs_are_sorted_by_device_then_process():
    pid = np.array([200, 100, 200, 300, 100], dtype=np.int32)
    device = np.array([0, 1, 0, 0, 1], dtype=np.int32)
    assert device_pairs(pid, device) == [(200, 0), (300, 0), (100, 1)]
    assert device_pairs(pid[:1], device[:1]) == [(200, 0)]


def test_collective_columns_mark_only_kernels_and_rows_are_copied_only_when_some_are_left_out():
    ops = pd.DataFrame({column: np.arange(4) for column in COLUMNS})
    assert kernel_rows(ops, np.ones(4, dtype=bool)) is ops
    kernels = kernel_rows(ops, np.array([True, False, True, False]))
    assert list(kernels.columns) == COLUMNS
    assert kernels["start_ns"].tolist() == [0, 2]
    assert len(kernel_rows(ops, np.zeros(4, dtype=bool))) == 0
    names = pd.Series(pd.Categorical(["ncclDevKernel_AllGather_RING_LL", "gemm", None, "ncclDevKernel_AllGather_RING_LL",
                                      "[CUDA memcpy Device-to-Device]"]))
    is_kernel = np.array([True, True, True, False, True])
    labelled = collective_columns(pd.DataFrame({"demangled_name": names, "pid": 1, "device_id": 0,
                                                "start_ns": [0, 1, 2, 10, 10], "dur_ns": [5, 1, 1, 4, 2]}), is_kernel)
    # the fourth op is no kernel: not communication whatever its name; the memcpy covers nothing
    assert labelled["collective"].tolist() == ["all_gather", "", "", "", ""]
    assert labelled["is_communication"].tolist() == [True, False, False, False, False]
    assert communication_kernels(labelled.assign(op_kind=np.where(is_kernel, "kernel", "memcpy"))).tolist() == \
        labelled["is_communication"].tolist()
    # one value per communication kernel: [1, 2) and [2, 3) compute
    assert exposed_ns(labelled, labelled["is_communication"].to_numpy(), is_kernel).tolist() == [3]


def direct_pass_figures(kernels: pd.DataFrame, rows: np.ndarray, passes: int, instance: str) -> dict:
    """Pass figures straight from the selected kernels (a mask), without runs."""
    chosen = kernels[rows]
    comm = chosen[chosen["is_communication"]]
    spans = chosen.groupby(instance, observed=True).agg(first=("start_ns", "min"), last=("end_ns", "max"))
    spans = (spans["last"] - spans["first"]).to_numpy()
    comm_ns, exposed = int(comm["dur_ns"].sum()), int(comm["exposed_ns"].sum())
    return {
        "kernels_per_pass": len(chosen) / passes,
        "kernel_ms_per_pass": int(chosen["dur_ns"].sum()) / passes / 1e6,
        "gpu_span_ms_per_pass": int(spans.sum()) / passes / 1e6,
        "gpu_span_ms_spread": (spans.max() - spans.min()) / 1e6 if len(spans) else 0.0,
        "communication_ms_per_pass": comm_ns / passes / 1e6,
        "exposed_communication_ms_per_pass": exposed / passes / 1e6,
        "overlapped_communication_ms_per_pass": (comm_ns - exposed) / passes / 1e6,
    }


def random_kernels(rng: np.random.Generator, count: int) -> pd.DataFrame:
    """Kernels in runs of alike keys, as labelled ops come, and some alone; two processes, phases
    of several names (one no figure reads, and none), steps with a missing one."""
    def runs_of(values):
        return np.repeat(values, rng.integers(1, 6, len(values)))[:count]

    size = count + 1
    phase = pd.Categorical(runs_of(rng.choice(["forward", "backward", "", "other"], size)),
                           categories=["other", "backward", "", "forward"])
    step = pd.Categorical(runs_of(rng.choice(["step_1", "step_0", None], size)))
    start = np.sort(rng.integers(0, 10 * count + 1, count))
    dur = rng.integers(0, 30, count)
    comm = rng.random(count) < 0.3
    return pd.DataFrame({
        "measured": runs_of(rng.random(size) < 0.8), "pid": runs_of(rng.choice([7, 9], size)).astype(np.int32),
        "device_id": np.zeros(count, dtype=np.int32), "phase": phase, "phase_range_id": runs_of(rng.integers(-1, 4, size)),
        "step": step, "is_communication": comm, "dur_ns": dur, "exposed_ns": np.where(comm, dur // 2, 0),
        "start_ns": start, "end_ns": start + dur,
    })


def assert_same_runs_among_other_ops(rng: np.random.Generator, kernels: pd.DataFrame, runs: dict) -> None:
    """The runs of ``kernels`` with other ops (alike in every key) put between them, some at the
    ends and some side by side: those ops make no run and cut none."""
    other = rng.random(len(kernels) + 1) < 0.3
    at = np.repeat(np.arange(len(kernels) + 1), np.where(other, rng.integers(1, 3, len(kernels) + 1), 0))
    order = np.argsort(np.concatenate([np.arange(len(kernels)) * 2 + 1, at * 2]), kind="stable")
    copies = kernels.iloc[np.minimum(at, len(kernels) - 1)].assign(is_communication=False)  # no op but a kernel communicates
    ops = pd.concat([kernels, copies]).iloc[order].reset_index(drop=True)
    is_kernel = np.concatenate([np.ones(len(kernels), dtype=bool), np.zeros(len(at), dtype=bool)])[order]
    among = kernel_runs(ops, is_kernel, exposed_of(kernels))
    assert among["kernels"].sum() == len(kernels)
    assert rank_figure_keys(among) == rank_figure_keys(runs)
    # the other ops are passed over: they cut no run
    assert {column: values.tolist() for column, values in among.items()} == {column: values.tolist() for column, values in runs.items()}
    no_kernel = kernel_runs(ops.assign(is_communication=False), np.zeros(len(ops), dtype=bool), exposed_of(kernels)[:0])
    assert len(no_kernel["kernels"]) == 0  # no kernels, no runs
    assert len(kernel_runs(ops.iloc[:0], is_kernel[:0], exposed_of(kernels)[:0])["kernels"]) == 0


def exposed_of(kernels: pd.DataFrame) -> np.ndarray:
    """The ``exposed_ns`` of ``kernels``' communication kernels, as :func:`exposed_ns` gives them."""
    return kernels["exposed_ns"].to_numpy()[kernels["is_communication"].to_numpy()]


def rank_figure_keys(runs: dict) -> dict:
    """What the rank figures read of runs, whatever their cuts: the kernels, time and span of
    each combination of run keys."""
    keys = [tuple(int(runs[column][i]) for column in RUN_KEYS) for i in range(len(runs["kernels"]))]
    figures = {}
    for i, key in enumerate(keys):
        kernels, dur, comm, exposed, start, end = figures.get(key, (0, 0, 0, 0, np.inf, -np.inf))
        figures[key] = (kernels + int(runs["kernels"][i]), dur + int(runs["dur_ns"][i]),
                        comm + int(runs["communication_ns"][i]), exposed + int(runs["exposed_ns"][i]),
                        min(start, int(runs["start_ns"][i])), max(end, int(runs["end_ns"][i])))
    return figures


def test_pass_figures_from_runs_are_those_of_the_kernels():
    rng = np.random.default_rng(5)
    for count in [1, 2, 3, 10, 60, 400] * 5:
        kernels = random_kernels(rng, count)
        runs = kernel_runs(kernels, np.ones(count, dtype=bool), exposed_of(kernels))
        assert_same_runs_among_other_ops(rng, kernels, runs)
        assert runs["kernels"].sum() == count
        for pid in (7, 9):
            mine = kernels["measured"].to_numpy() & (kernels["pid"] == pid).to_numpy()
            mine_runs = runs["measured"] & (runs["pid"] == pid)
            for phase in ("forward", "backward", ""):
                rows = mine & (kernels["phase"] == phase).to_numpy()
                instance = "phase_range_id" if phase else "step"
                if not rows.any():
                    continue
                from_runs = pass_figures(runs, mine_runs & (runs["phase"] == RUN_PHASES.index(phase)), 3,
                                         runs[instance])
                assert from_runs == direct_pass_figures(kernels.assign(step=kernels["step"].cat.codes), rows, 3,
                                                        instance)
            if mine.any():
                assert pass_figures(runs, mine_runs, 2, runs["step"]) == \
                    direct_pass_figures(kernels.assign(step=kernels["step"].cat.codes), mine, 2, "step")


def test_runs_and_exposed_time_read_in_chunks_are_those_of_the_whole_ops(monkeypatch):
    """Kernels of two processes and GPUs interleaved in time, read a few ops at a time: the runs
    are each one GPU's stretch and give the same figures as the whole ops read at once, and each
    communication kernel's exposed time is what every compute kernel of its GPU leaves uncovered."""
    from analysis.core.intervals import covered_ns
    from analysis.trace.multi_gpu import communication, ranks

    rng = np.random.default_rng(23)
    for count in (1, 5, 40, 300):
        kernels = random_kernels(rng, count)
        kernels["device_id"] = rng.integers(0, 2, count).astype(np.int32)
        whole = kernel_runs(kernels, np.ones(count, dtype=bool), exposed_of(kernels))
        comm = kernels["is_communication"].to_numpy()
        exposed = communication.exposed_ns(kernels, comm, np.ones(count, dtype=bool))
        monkeypatch.setattr(ranks, "RUN_CHUNK_OPS", 7)
        monkeypatch.setattr(communication, "COVER_CHUNK_OPS", 3)
        chunked = kernel_runs(kernels, np.ones(count, dtype=bool), exposed_of(kernels))
        assert rank_figure_keys(chunked) == rank_figure_keys(whole)
        assert chunked["kernels"].sum() == count
        # chunks of 7 ops lack some of the four GPUs: their empty parts keep every column's dtype
        assert {key: values.dtype for key, values in chunked.items()} == {key: values.dtype for key, values in whole.items()}
        assert communication.exposed_ns(kernels, comm, np.ones(count, dtype=bool)).tolist() == exposed.tolist()
        monkeypatch.undo()
        device = kernels["pid"].to_numpy() * 10 + kernels["device_id"].to_numpy()
        start, end = kernels["start_ns"].to_numpy(), kernels["end_ns"].to_numpy()
        assert len(exposed) == comm.sum()
        for at, row in enumerate(np.flatnonzero(comm)):
            cover = (device == device[row]) & ~comm
            covered = covered_ns(start[row:row + 1], end[row:row + 1], start[cover], end[cover])[0]
            assert exposed[at] == end[row] - start[row] - covered


def _rank(pid: int, device: int, kernels_per_step: float, passes: int = 4) -> dict:
    return {"pid": pid, "device_id": device, "rank": pid, "passes": passes,
            "phases": {"step": {"passes": passes, "kernels_per_pass": kernels_per_step}}}


def test_processes_of_different_work_are_noted_and_a_jobs_ranks_are_not():
    """Two programs under one nsys (126 against 1,116 kernels a step) get a note that the pooled
    per-pass figures mix them; ranks of one job (a few kernels apart), a process with a replica per
    GPU and a process whose steps were not measured get none."""
    (note,) = rank_notes([_rank(780, 0, 126), _rank(781, 0, 1116)], 2, "ranks in the trace")
    assert "126 kernels in process 780 and 1,116 in process 781" in note
    assert not rank_notes([_rank(1, 0, 1116), _rank(2, 1, 1119)], 2, "ranks in the trace")
    replicas = [_rank(1, 0, 300), _rank(1, 1, 150)]  # one process: its devices' steps add up
    assert not [n for n in rank_notes(replicas, 2, "ranks in the trace") if "different work" in n]
    idle = [_rank(1, 0, 1116), _rank(2, 0, 0, passes=0)]
    assert not [n for n in rank_notes(idle, 2, "ranks in the trace") if "different work" in n]


def _shifted(process: tuple, by_ns: int) -> tuple:
    """A :func:`rank_process`'s ranges, marks and kernels ``by_ns`` later."""
    ranges, marks, kernels = process
    return ([(r[0], r[1] + by_ns, r[2] + by_ns, *r[3:]) for r in ranges],
            [(m[0], m[1] + by_ns, *m[2:]) for m in marks],
            [(k[0] + by_ns, k[1] + by_ns, k[2] + by_ns, *k[3:]) for k in kernels])


def _jobs_notes(path, processes: list[tuple]) -> list[str]:
    path = build_export(path, ranges=[r for p in processes for r in p[0]], kernels=[k for p in processes for k in p[2]],
                        strings=(GEMM, ALL_REDUCE))
    trace = load_trace(path)
    communication_summary(trace, label_ops(trace))
    return [note for note in trace.notes if "groups one after another" in note]


def test_jobs_one_after_another_in_one_capture_are_noted_and_one_jobs_ranks_are_not(tmp_path):
    """A script that runs one two-rank job after another under one nsys (DDP variants): the note
    names the groups of processes that run at once; the ranks of one job get none."""
    first = [rank_process(100, 0, 0, 0, []), rank_process(200, 1, 1, 0, [])]
    later = [_shifted(rank_process(300, 0, 0, 0, []), 100_000 * US), _shifted(rank_process(400, 1, 1, 0, []), 100_000 * US)]
    assert _jobs_notes(tmp_path / "jobs.sqlite", first + later) == [
        "the processes run in 2 groups one after another, each group's at once (processes 100, 200; then 300, 400): "
        "separate jobs of one capture; the phases' per-pass figures pool every job's passes and the ranks are "
        "numbered across the jobs, so read each process's own figures (per rank)"]
    assert _jobs_notes(tmp_path / "one_job.sqlite", first) == []
