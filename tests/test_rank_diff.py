"""The diff of naive against overlapped DDP: the pairing on ``parallel``, the per-rank comparison
(step GPU span against each run's step-to-step spread, communication, exposed and overlapped) and
its page, on a synthetic pair and on the committed two-GPU traces."""
from __future__ import annotations

import html
import lzma
import shutil
import sqlite3

import pytest

from analysis import analyze_trace
from analysis.app.answers import diff_pairs
from analysis.compare.diff import diff_summaries
from analysis.questions.records import DiffRecord
from analysis.report import render_diff
from tests.conftest import REPO
from tests.synthetic import ALL_REDUCE, GEMM, US, build_export, rank_process

RUN = {"size": "medium", "context_length": 128, "mode": "train", "dtype": "fp32", "batch_size": 4}
MULTI_GPU = REPO / "nsys_runs" / "traces" / "multi_gpu"
STEP_BASES_US = {"step_0": 20_000, "step_1": 30_000}  # where rank_process puts the measured steps


def _ddp_trace(folder, parallel: str, cover: list, late_steps: tuple = ()):
    """Two ranks of ``rank_process``; ``late_steps``: steps that end with one more compute kernel
    [960, 1200) µs, launched in grad_sync, which lengthens their GPU span by 240 µs."""
    ranks = []
    for pid, device, rank, offset in ((100, 0, 0, 0), (200, 1, 1, 20)):
        ranges, marks, kernels = rank_process(pid, device, rank, offset, cover, {**RUN, "parallel": parallel})
        for number, step in enumerate(late_steps):
            base = STEP_BASES_US[step] * US
            kernels.append((base + 960 * US, base + 1200 * US, base + 906 * US, pid, 1, 900 + number, GEMM, device, 7))
        ranks.append((ranges, marks, kernels))
    return build_export(folder / f"medium_{parallel}.sqlite", ranges=ranks[0][0] + ranks[1][0],
                        marks=ranks[0][1] + ranks[1][1], kernels=ranks[0][2] + ranks[1][2],
                        strings=(GEMM, ALL_REDUCE))


def _pair(tmp_path, late_steps: tuple):
    naive = analyze_trace(_ddp_trace(tmp_path, "ddp-naive", [], late_steps))
    overlapped = analyze_trace(_ddp_trace(tmp_path, "ddp-overlap", [(500, 600)]))
    return naive, overlapped


def test_naive_and_overlapped_ddp_make_a_diff_pair_with_naive_as_a(tmp_path):
    naive, overlapped = _pair(tmp_path, ())
    (pair,) = diff_pairs([overlapped, naive])
    assert (pair.a["trace"], pair.b["trace"], pair.changed) == (
        "medium_ddp-naive.sqlite", "medium_ddp-overlap.sqlite", "parallel: ddp-naive → ddp-overlap")
    fsdp = {**overlapped, "config": {**overlapped["config"], "parallel": "fsdp"}}
    single = {**overlapped, "config": {k: v for k, v in overlapped["config"].items()
                                       if k not in ("parallel", "world_size", "rank")}}
    assert diff_pairs([naive, fsdp]) == [] and diff_pairs([naive, single]) == []
    assert diff_pairs([naive, {**overlapped, "config": {**overlapped["config"], "world_size": 4}}]) == []


def test_per_rank_rows_and_a_change_within_the_spread(tmp_path):
    naive, overlapped = _pair(tmp_path, ("step_1",))
    ranks = diff_summaries(naive, overlapped)["ranks"]
    rank0, rank1 = ranks["rows"]
    # rank 0: steps span [10, 960) and [10, 1200) µs in A, [10, 960) in B
    assert rank0["rank"] == 0 and rank0["a_passes"] == rank0["b_passes"] == 2
    assert rank0["a_step_gpu_span_ms"] == pytest.approx(1.07)
    assert rank0["a_step_gpu_span_spread_ms"] == pytest.approx(0.24)
    assert rank0["b_step_gpu_span_ms"] == pytest.approx(0.95)
    assert rank0["b_step_gpu_span_spread_ms"] == 0
    assert rank0["step_gpu_span_delta_ms"] == pytest.approx(-0.12) and not rank0["beyond_spread"]
    # both all-reduces (100 + 10 µs) exposed in A; B's backward one is covered by a compute kernel
    assert rank0["a_communication_ms"] == rank0["b_communication_ms"] == pytest.approx(0.11)
    assert (rank0["a_exposed_communication_ms"], rank0["b_exposed_communication_ms"]) == pytest.approx((0.11, 0.01))
    assert (rank0["a_overlapped_communication_ms"], rank0["b_overlapped_communication_ms"]) == pytest.approx((0, 0.1))
    assert rank0["exposed_delta_ms"] == pytest.approx(-0.1)
    assert rank1["a_step_gpu_span_ms"] == pytest.approx(1.05) and rank1["b_step_gpu_span_ms"] == pytest.approx(0.93)
    assert ranks["why"].startswith(
        "Rank 0: the step's GPU span goes 1.07 ms → 950 µs (−120 µs) against a step-to-step spread of 240 µs in A "
        "and 0 µs in B (2 steps each); exposed communication goes 110 µs → 10 µs (−100 µs) of 110 µs → 110 µs "
        "of communication kernels, 0 µs → 100 µs of it overlapped with compute. Rank 1:")
    assert ranks["why"].endswith("On no rank does the step span change by more than the runs' step-to-step "
                                 "spread, so the runs' step spans do not measurably differ.")


def test_a_change_beyond_the_spread_is_said_so_and_the_page_shows_it(tmp_path):
    naive, overlapped = _pair(tmp_path, ("step_0", "step_1"))
    diff = diff_summaries(naive, overlapped)
    rows = diff["ranks"]["rows"]
    assert [r["step_gpu_span_delta_ms"] for r in rows] == pytest.approx([-0.24, -0.24])
    assert all(r["beyond_spread"] for r in rows)
    assert diff["ranks"]["why"].endswith("On both ranks the step span changes by more than either run's "
                                         "step-to-step spread.")
    page = html.unescape(render_diff(DiffRecord(naive, overlapped, "", diff), tmp_path / "out").read_text())
    assert "Per rank" in page and diff["ranks"]["why"] in page
    assert "step gpu span spread (ms)" in page.lower()


def test_single_gpu_diffs_have_no_rank_section(tmp_path):
    naive, _ = _pair(tmp_path, ())
    one_rank = {**naive, "communication": None}
    assert diff_summaries(one_rank, naive)["ranks"] is None


@pytest.fixture(scope="module")
def committed_pair():
    names = ("medium_ctx256_train_fp32_ddp-naive_2gpu", "medium_ctx256_train_fp32_ddp-overlap_2gpu")
    return [analyze_trace(MULTI_GPU / f"{name}.sqlite.xz") for name in names]


def _rank0_communication_ms_per_step(trace_xz, folder) -> float:
    """NCCL kernel time per measured step of the rank-0 process, straight from the export: kernels
    whose launching API call (same correlationId, same process) lies in one of that process's
    step_ ranges."""
    plain = folder / trace_xz.name.removesuffix(".xz")
    with lzma.open(trace_xz) as source, open(plain, "wb") as target:
        shutil.copyfileobj(source, target)
    conn = sqlite3.connect(plain)
    text = "coalesce(e.text, s.value)"
    (pid,) = conn.execute(f"""SELECT e.globalTid >> 24 FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
                              WHERE {text} LIKE '{{\"event\": \"config\"%' AND {text} LIKE '%\"rank\": 0,%'""").fetchone()
    total_ns, steps = conn.execute(f"""
        WITH steps AS (SELECT e.start, e.end FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
                       WHERE {text} LIKE 'step\\_%' ESCAPE '\\' AND e.globalTid >> 24 = :pid)
        SELECT (SELECT sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
                JOIN StringIds n ON n.id = k.demangledName
                JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
                     AND r.globalTid >> 24 = k.globalPid >> 24
                WHERE k.globalPid >> 24 = :pid AND n.value LIKE 'ncclDevKernel%'
                  AND EXISTS (SELECT 1 FROM steps WHERE r.start >= steps.start AND r.start <= steps.end)),
               (SELECT count(*) FROM steps)""", {"pid": pid}).fetchone()
    conn.close()
    return total_ns / steps / 1e6


def test_committed_ddp_traces_pair_and_compare_per_rank(committed_pair, tmp_path):
    naive, overlapped = committed_pair
    (pair,) = diff_pairs([overlapped, naive])
    assert pair.changed == "parallel: ddp-naive → ddp-overlap" and pair.a is naive
    rows = {row["rank"]: row for row in pair.diff["ranks"]["rows"]}
    assert sorted(rows) == [0, 1] and all(r["a_passes"] == r["b_passes"] == 3 for r in rows.values())
    expected = _rank0_communication_ms_per_step(MULTI_GPU / naive["trace"], tmp_path)
    assert rows[0]["a_communication_ms"] == pytest.approx(expected, rel=1e-9)
    # naive DDP all-reduces after backward: nothing overlaps; the overlapped run hides part of it
    assert all(r["a_overlapped_communication_ms"] == 0 for r in rows.values())
    assert all(r["b_exposed_communication_ms"] < r["a_exposed_communication_ms"] for r in rows.values())
    for row in rows.values():
        assert row["beyond_spread"] == (abs(row["step_gpu_span_delta_ms"]) > max(
            row["a_step_gpu_span_spread_ms"], row["b_step_gpu_span_spread_ms"]))
