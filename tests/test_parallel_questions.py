"""ddp-b and fsdp-b from summaries' communication sections with known figures, and what their
pages need when no trace is given."""
from __future__ import annotations

import pytest

from analysis.app.answers import answer_all
from analysis.questions import ddp_b, fsdp_b
from analysis.questions.question import Evidence
from analysis.questions.records import ResultsAnswer, Unanswered
from analysis.questions.shared.results_files import ResultsSet


def _phase(span, spread, communication, exposed, passes=5):
    return {"passes": passes, "kernels_per_pass": 10.0, "kernel_ms_per_pass": span,
            "gpu_span_ms_per_pass": span, "gpu_span_ms_spread": spread,
            "communication_ms_per_pass": communication, "exposed_communication_ms_per_pass": exposed,
            "overlapped_communication_ms_per_pass": communication - exposed}


def _summary(parallel, steps, blocks=(), forward=None):
    """A summary of a medium ctx128 run on two ranks; ``steps``: (span, spread, comm, exposed)
    of each rank's whole step."""
    ranks = [{"pid": 10 + r, "device_id": r, "rank": r, "rank_source": "config mark", "passes": 5,
              "phases": {"step": _phase(*step), **({"forward": _phase(*forward)} if forward else {})}}
             for r, step in enumerate(steps)]
    collective = "all_gather" if parallel == "fsdp" else "all_reduce"
    return {"trace": f"medium_{parallel}.sqlite",
            "config": {"size": "medium", "context_length": 128, "mode": "train", "dtype": "fp32",
                       "batch_size": 4, "world_size": 2, "parallel": parallel},
            "communication": {
                "ranks": ranks, "fsdp_blocks": list(blocks),
                "collectives": [{"collective": collective, "rank": r} for r in range(len(steps))]}}


def _evidence(*summaries):
    return Evidence(list(summaries), ResultsSet({}))


def test_ddp_b_compares_naive_and_overlapped_runs_of_the_same_shape():
    naive = _summary("ddp-naive", [(100.0, 2.0, 30.0, 30.0), (101.0, 3.0, 28.0, 27.0)])
    overlapped = _summary("ddp-overlap", [(80.0, 2.5, 32.0, 4.0), (81.0, 1.0, 31.0, 5.0)])
    record = ddp_b.QUESTION.answer(_evidence(naive, overlapped))
    table = record.tables[ddp_b.TABLE]
    assert list(table["trace"]) == ["medium ctx128 train fp32 ddp-naive rank 0",
                                    "medium ctx128 train fp32 ddp-naive rank 1",
                                    "medium ctx128 train fp32 ddp-overlap rank 0",
                                    "medium ctx128 train fp32 ddp-overlap rank 1"]
    assert table["exposed_share"].tolist() == pytest.approx([1.0, 27 / 28, 4 / 32, 5 / 31])
    # rank 0 (the longest in communication) exposed 30 -> 4 ms; span 100.5 -> 80.5 ms, beyond the 3 ms spread
    assert record.answer.startswith("Overlapping the all-reduces with backward cuts rank 0's exposed communication from "
                                    "30.00 ms to 4.00 ms per step and moves the step's GPU span 100 ms → 80.50 ms, "
                                    "beyond the step-to-step spread of up to 3.00 ms.")
    # the transfer takes at most the shorter rank's 28 ms, so rank 0 waits at least 2 ms in the naive run
    assert "3.4% of naive DDP's communication is waiting, not transfer: the transfer takes at most 28.00 ms per step (rank 1's time in the all-reduces), so rank 0 waits at " \
           "least 2.00 ms for rank 1 to arrive" in record.answer
    assert table["waiting_ms"].tolist() == pytest.approx([2.0, 0.0, 1.0, 0.0])


def test_ddp_b_calls_a_difference_within_the_spread_no_difference():
    naive = _summary("ddp-naive", [(100.0, 6.0, 30.0, 30.0), (100.0, 6.0, 30.0, 30.0)])
    overlapped = _summary("ddp-overlap", [(97.0, 2.0, 30.0, 25.0), (97.0, 2.0, 30.0, 25.0)])
    answer = ddp_b.QUESTION.answer(_evidence(naive, overlapped)).full_answer
    assert "within the step-to-step spread of up to 6.00 ms, so the step change is no measured difference" in answer
    assert "waiting, not transfer" not in answer  # ranks that arrive together wait for no one


def test_ddp_b_separates_waiting_from_transfer_per_rank():
    naive = _summary("ddp-naive", [(100.0, 2.0, 30.0, 30.0), (100.0, 2.0, 10.0, 10.0)])
    answer = ddp_b.QUESTION.answer(_evidence(naive)).full_answer
    assert "rank 0 30.00 ms (30.00 ms exposed; at least 20.00 ms waiting); rank 1 10.00 ms" in answer
    assert "transfer at most 10.00 ms" in answer
    assert "a rank that arrives first spends the wait for the others inside it" in answer


def test_ddp_b_with_one_variant_names_the_missing_one():
    answer = ddp_b.QUESTION.answer(_evidence(_summary("ddp-naive", [(100.0, 2.0, 30.0, 30.0)] * 2))).full_answer
    assert "a trace of overlapped DDP is needed" in answer


def test_fsdp_b_lead_and_lag_per_block():
    blocks = [{"pid": 10 + r, "device_id": r, "rank": r, "block": b, "passes": 4, "allgather_ms": 1.0,
               "lead_ms": lead, "min_lead_ms": worst, "wait_ms": wait, "late_passes": late}
              for r in (0, 1) for b, (lead, worst, wait, late) in enumerate(
                  [(0.5, 0.2, 0.0, 0), (-0.3, -0.6, 0.3, 4) if r else (0.4, 0.1, 0.0, 0)])]
    summary = _summary("fsdp", [(200.0, 1.0, 20.0, 2.0)] * 2, blocks, forward=(60.0, 1.0, 8.0, 0.8))
    record = fsdp_b.QUESTION.answer(_evidence(summary))
    assert len(record.tables[fsdp_b.BLOCKS]) == 4
    answer = record.full_answer
    assert answer.startswith("medium ctx128 train fp32 fsdp: not always — 3 of 4 block all-gathers (2 blocks × 2 ranks)")
    assert "late: block 1 on rank 1 (4 of 4 passes, by up to 600 µs), so compute waits 0 µs–300 µs per forward " \
           "pass for all-gathers." in answer
    assert "is the first block" not in answer  # block 1 is late, not the first one
    assert "rank 1 8.00 ms of communication kernels, 800 µs of it with no compute beside it" in answer


def test_fsdp_b_reconciles_exposed_communication_with_skew_between_ranks():
    blocks = [{"pid": 10 + r, "device_id": r, "rank": r, "block": b, "passes": 3, "allgather_ms": 1.0,
               "lead_ms": -1.0 if b == 0 else 5.0, "min_lead_ms": -2.0 if b == 0 else 4.0,
               "wait_ms": 1.5 if b == 0 else 0.0, "late_passes": 3 if b == 0 else 0} for r in (0, 1) for b in (0, 1)]
    ranks = [_summary("fsdp", [(200.0, 1.0, 20.0, 2.0)] * 2, blocks, forward=forward)["communication"]["ranks"][0]
             for forward in ((60.0, 1.0, 70.0, 36.0), (60.0, 1.0, 30.0, 2.0))]
    summary = _summary("fsdp", [(200.0, 1.0, 20.0, 2.0)] * 2, blocks)
    summary["communication"]["ranks"] = [{**rank, "rank": index} for index, rank in enumerate(ranks)]
    summary["communication"]["skew"] = {"max_start_spread_ms": 50.0}
    answer = fsdp_b.QUESTION.answer(_evidence(summary)).full_answer
    assert "Block 0 is the first block: no earlier block's compute runs while its all-gather does" in answer
    # 70 - 30 = 40 ms of rank 0's time is waiting: more than half its 36 ms exposed
    assert "is mostly skew, not transfer: the transfer takes at most 30.00 ms per pass (the least rank's time), so " \
           "rank 0 spends at least 40.00 ms waiting inside the all-gathers for the other rank, whose steps start up " \
           "to 50.00 ms apart." in answer


def test_fsdp_b_all_in_time():
    blocks = [{"pid": 10, "device_id": 0, "rank": 0, "block": b, "passes": 4, "allgather_ms": 1.0,
               "lead_ms": 0.5 + b, "min_lead_ms": 0.25 + b, "wait_ms": 0.0, "late_passes": 0}
              for b in range(3)]
    answer = fsdp_b.QUESTION.answer(_evidence(_summary("fsdp", [(200.0, 1.0, 20.0, 2.0)], blocks))).full_answer
    assert answer.startswith("medium ctx128 train fp32 fsdp: yes — 3 of 3 block all-gathers")
    assert "the closest with 250 µs to spare" in answer


def test_without_traces_the_pages_say_what_they_need():
    records = {r.card.id: r for r in answer_all([], ResultsSet({}))}
    for question_id, flag in (("ddp-b", "--parallel ddp-naive"), ("fsdp-b", "--parallel fsdp")):
        assert isinstance(records[question_id].result, Unanswered)
        assert flag in records[question_id].result.needs
    assert records["fsdp-b"].card.editions == ("2026",)
    single_gpu = {"trace": "x.sqlite", "config": None, "communication": {
        "ranks": [{"rank": 0, "phases": {}}], "collectives": [], "fsdp_blocks": []}}
    assert isinstance(ddp_b.QUESTION.answer(_evidence(single_gpu)), Unanswered)
    assert not isinstance(fsdp_b.QUESTION.answer(_evidence(single_gpu)), ResultsAnswer)


def _one_rank(rank):
    """A summary of one rank of a two-rank job that ran under its own nsys (world size from its launcher)."""
    return {"trace": f"train_rank{rank}.sqlite", "config": None, "communication": {
        "world_size": 2, "world_size_source": "launcher (RANK/WORLD_SIZE)",
        "ranks": [{"pid": 10, "device_id": rank, "rank": rank, "rank_source": "launcher (RANK/WORLD_SIZE)", "passes": 5,
                   "phases": {"step": _phase(100.0, 2.0, 30.0, 30.0)}}],
        "collectives": [{"collective": "all_reduce", "rank": rank}], "fsdp_blocks": []}}


def test_ddp_b_names_the_traces_of_one_rank_each_it_cannot_compare():
    alone = ddp_b.QUESTION.answer(_evidence(_one_rank(0), _one_rank(1)))
    assert isinstance(alone, Unanswered)
    assert "Left out: train_rank0 (rank 0 of 2), train_rank1 (rank 1 of 2): each holds one rank" in alone.needs
    beside = ddp_b.QUESTION.answer(_evidence(_summary("ddp-naive", [(100.0, 2.0, 30.0, 30.0)] * 2), _one_rank(1)))
    assert "Left out: train_rank1 (rank 1 of 2)" in beside.full_answer
    assert "Left out" not in ddp_b.QUESTION.answer(_evidence(_summary("ddp-naive", [(100.0, 2.0, 30.0, 30.0)] * 2))).full_answer


def test_fsdp_b_splits_no_wait_from_transfer_in_a_trace_of_one_rank():
    block = {"trace": "x", "block": 0, "rank": 0, "pid": 10, "device_id": 0, "late_passes": 0, "min_lead_ms": 0.25,
             "mean_lead_ms": 0.3, "passes": 5}
    rank = _one_rank(0)
    rank["communication"]["fsdp_blocks"] = [block]
    rank["communication"]["ranks"][0]["phases"]["forward"] = _phase(50.0, 1.0, 10.0, 4.0)
    answer = fsdp_b.QUESTION.answer(_evidence(rank)).full_answer
    assert "train_rank0 holds one rank: its time in the all-gathers cannot be split" in answer
    assert "spends at least" not in answer and "Per rank in the forward pass" not in answer  # no skew split
