"""Users' own traces, no flags: the analyzer's steps, warm-up, passes and nsys (a)-(e) figures
equal the independent reference (tests/foreign_reference.py, plain SQL from a hand-written
manifest) on every trace in tests/data/foreign."""
from __future__ import annotations

import json
import math
import re
from functools import cache

import pytest

from analysis import analyze_trace
from analysis.questions import nsys_b, nsys_c, nsys_d
from analysis.questions.question import Evidence
from analysis.questions.records import Unanswered
from analysis.questions.shared.results_files import ResultsSet
from analysis.report.structure_lines import describe
from tests.conftest import REPO

FOREIGN = REPO / "tests" / "data" / "foreign"
REFERENCE = json.loads((FOREIGN / "reference.json").read_text())["traces"]
PHASE = {"forward": "forward", "loss": "loss", "backward": "backward", "optimizer": "optimizer_step"}
TOLERANCE = 1e-3  # the reference rounds ms to 4 decimals and shares to 4 digits


@cache
def summary(name: str) -> dict:
    return analyze_trace(FOREIGN / REFERENCE[name]["file"])


def close(found, expected, tolerance: float = TOLERANCE) -> bool:
    return found is not None and math.isclose(found, expected, rel_tol=tolerance, abs_tol=5e-4)


def single(name: str) -> dict:
    (process,) = REFERENCE[name]["processes"]
    return process


ALL = sorted(REFERENCE)
SINGLE = [name for name in ALL if len(REFERENCE[name]["processes"]) == 1]
# Traces whose every process has a measured forward pass (an inference loop with no phase has none).
FORWARD = [name for name in ALL if all(process["passes"].get("forward") for process in REFERENCE[name]["processes"])]
SINGLE_FORWARD = [name for name in SINGLE if name in FORWARD]


@pytest.mark.parametrize("name", ALL)
def test_steps_and_warmup(name):
    table = summary(name)["structure"]["step_table"]
    for process in REFERENCE[name]["processes"]:
        mine = [row for row in table if row["pid"] == process["pid"]]
        steps = process["steps"]
        assert len(mine) == steps["found"]  # warm-up steps with no trace of them (unmarked) are not found
        assert sum(not row["measured"] and not row["cut"] for row in mine) == steps["warmup_in_trace"]
        assert sum(row["measured"] for row in mine) == steps["measured"]
        assert sum(row["cut"] for row in mine) == steps["cut"]


@pytest.mark.parametrize("name", SINGLE)
def test_passes_and_phase_kernels(name):
    reference, found = single(name), summary(name)
    # a phase the measured steps never run (an update in the warm-up alone, or none) is no phase of theirs
    assert found["measured_passes_by_phase"] == {PHASE[p]: n for p, n in reference["passes"].items() if n}
    for phase, figures in reference["phases"].items():
        if figures is None:  # no measured pass: the count above says the summary has none either
            continue
        mine = found["phases"][PHASE[phase]]
        assert close(mine["kernel_ms_per_pass"], figures["kernel_ms_per_pass"]), phase
        assert mine["kernels_per_pass"] == pytest.approx(figures["kernels_per_pass"]), phase
    assert close(found["overall"]["kernel_ms_per_pass"], reference["step"]["kernel_ms_per_step"])
    assert found["overall"]["kernels_per_pass"] == pytest.approx(reference["step"]["kernels_per_step"])


@pytest.mark.parametrize("name", [n for n in SINGLE if "launcher_rank" in single(n)])
def test_one_rank_under_its_own_nsys_has_its_launchers_rank_and_world_size(name):
    communication = summary(name)["communication"]
    (rank,) = communication["ranks"]
    expected = single(name)["launcher_rank"]
    assert (rank["rank"], communication["world_size"]) == (expected["rank"], expected["world_size"])


@pytest.mark.parametrize("name", [n for n in ALL if n not in SINGLE])
def test_passes_and_phase_kernels_per_rank(name):
    ranks = {rank["pid"]: rank for rank in summary(name)["communication"]["ranks"]}
    for reference in REFERENCE[name]["processes"]:
        mine = ranks[reference["pid"]]
        for phase, figures in reference["phases"].items():
            if reference["passes"][phase] == 0:  # a phase of other ranks only (the loss of a pipeline's last stage)
                assert PHASE[phase] not in mine["phases"], phase
                continue
            assert mine["phases"][PHASE[phase]]["passes"] == reference["passes"][phase]
            assert close(mine["phases"][PHASE[phase]]["kernel_ms_per_pass"], figures["kernel_ms_per_pass"]), phase


@pytest.mark.parametrize("name", [n for n in ALL if n not in SINGLE and n.startswith(("gpt2_ddp", "gpt2_fsdp"))])
def test_ranks_doing_the_same_work_every_step_are_not_noted_as_unlike(name):
    """The harness's DDP and FSDP runs do the same work in every step; a rank's NCCL kernels hold
    its wait for the others, which varies from step to step (0 to 120 ms against 9 ms of compute
    on an FSDP rank of four): no note may call those steps different work."""
    assert not [note for note in summary(name)["notes"] if "differ widely" in note]


@pytest.mark.parametrize("name", SINGLE_FORWARD)
def test_nsys_a_forward_time(name):
    reference, answer = single(name)["nsys_a"], summary(name)["questions"]["a"]
    assert close(answer["nsys_forward_ms"], reference["forward_cpu_ms_mean"])
    assert close(summary(name)["phases"]["forward"]["kernel_ms_per_pass"], reference["forward_kernel_ms_mean"])


@pytest.mark.parametrize("name", SINGLE_FORWARD)
def test_nsys_b_leading_kernel(name):
    reference, answer = single(name)["nsys_b"], summary(name)["questions"]["b"]
    top = reference["forward_top"]
    assert answer["top_forward_kernel"].startswith(top["kernel"]) or top["kernel"] in answer["top_forward_kernel"]
    assert close(answer["top_forward_ms_per_pass"], top["ms_per_pass"])
    assert close(answer["calls_per_forward_pass"], top["calls_per_pass"])  # the reference keeps 4 decimals
    if reference["forward_backward_top"] is not None:
        assert answer["top_forward_backward_kernel"] == reference["forward_backward_top"]["kernel"]


@pytest.mark.parametrize("name", SINGLE_FORWARD)
def test_nsys_d_matmul_shares(name):
    reference, answer = single(name)["nsys_d"], summary(name)["questions"]["d"]
    assert close(answer["gemm_share_forward"], reference["forward_matmul_share"])
    if reference.get("step_matmul_share") is not None and answer["gemm_share_train_step"] is not None:
        assert close(answer["gemm_share_train_step"], reference["step_matmul_share"])


@pytest.mark.parametrize("name", [n for n in SINGLE if single(n).get("nsys_e")])
def test_nsys_e_softmax_against_matmuls(name):
    reference, answer = single(name)["nsys_e"], summary(name)["questions"]["e"]
    assert close(answer["softmax_ms_per_pass"], reference["softmax_ms_per_pass"])
    assert close(answer["matmul_range_ms_per_pass"], reference["matmul_ms_per_pass"])


@pytest.mark.parametrize("name", [n for n in SINGLE if single(n).get("mem_f")])
def test_mem_f_blocks_from_the_module_labels(name):
    reference, ledger = single(name)["mem_f"], summary(name)["memory_ledger"]
    assert ledger["available"] and ledger["blocks_found"] == reference["blocks"]
    saved = [block["saved_for_backward_bytes"] / 2**20 for block in ledger["blocks"]]
    assert saved == pytest.approx(reference["saved_mib_per_block"], abs=0.01)


@pytest.mark.parametrize("name", FORWARD)
def test_the_structure_line_names_what_was_found(name):
    record = summary(name)["structure"]
    assert record["source"].removesuffix("+kernels") in ("ranges", "pytorch", "ranges+pytorch", "kernels")
    assert record["phase_names"].get("forward")


def test_mem_f_reads_the_parameters_per_block_from_the_trace():
    """No config mark: the parameters come from the AccumulateGrad op shapes; the 2026 handout's
    small block (d_model 768, d_ff 3072) has 4·768² + 3·768·3072 + 2·768 parameters."""
    ledger = summary("s2026_enzoding_flags2026_mem")["memory_ledger"]
    assert ledger["params_per_block"] == 4 * 768**2 + 3 * 768 * 3072 + 2 * 768
    assert ledger["gradient_bytes_per_block"] == pytest.approx(ledger["expected_gradient_bytes_per_block"], rel=0.01)


def test_nsys_b_names_the_computing_leader_where_a_collective_leads():
    """On a DDP rank the all-reduce leads forward and backward by time that holds the wait for the
    other rank; the sentence adds the leader among the computing kernels (here the forward's own
    leader, on both ranks) with its share of their time, above its share of all kernel time."""
    answer = summary("s2026_sarakothari_ddp2")["questions"]["b"]["answer"]
    ranks = REFERENCE["s2026_sarakothari_ddp2"]["processes"]
    assert all(rank["nsys_b"]["forward_backward_top"]["kernel"].startswith("ncclDevKernel") for rank in ranks)
    assert len({rank["nsys_b"]["forward_top"]["kernel"] for rank in ranks}) == 1
    found = re.search(r"among the computing kernels the forward leader leads with ([\d.]+)% of their time", answer)
    assert found and 5 < float(found[1]) < 100
    assert "computing kernels" not in summary("gpt2_nvtx")["questions"]["b"]["answer"]


def test_nsys_b_names_the_forward_computing_leader_where_a_collective_leads_the_forward():
    """Tensor parallelism: the all-reduce after each row-split layer leads the forward pass itself
    (on both ranks, by the reference); the sentence says its time holds the wait and names the
    forward's leader among the computing kernels."""
    answer = summary("tp2_nvtx")["questions"]["b"]["answer"]
    ranks = REFERENCE["tp2_nvtx"]["processes"]
    assert all(rank["nsys_b"]["forward_top"]["kernel"].startswith("ncclDevKernel") for rank in ranks)
    found = re.search(r"says little of the work; among the computing kernels `[^`]+` leads the forward pass with "
                      r"([\d.]+)% of their time", answer)
    assert found and 5 < float(found[1]) < 100


def test_kernel_time_inside_whole_graphs_is_named_where_kernels_are_told_apart():
    """A graph traced whole counts as one kernel of its own category; the answers that sort kernels
    into kinds (b, c, d) say how much time that hides, with the reference's forward share of it."""
    reference = single("gpt2_cudagraphs_nvtx")
    graphs_ms = sum(row["ms_per_pass"] for row in reference["nsys_c"] if row["kernel"].startswith("[CUDA graph "))
    share = graphs_ms / reference["nsys_a"]["forward_kernel_ms_mean"]
    whole, nodes = summary("gpt2_cudagraphs_nvtx"), summary("gpt2_cudagraphs_node_nvtx")
    for key in ("b", "c", "d"):
        assert f"hold {share:.1%} of forward kernel time" in whole["questions"][key]["answer"]
        assert "CUDA graphs traced whole" not in nodes["questions"][key]["answer"]
    assert "each CUDA graph traced whole counting as one kernel" in whole["efficiency"]["answer"]
    assert "CUDA graph" not in nodes["efficiency"]["answer"]


def test_an_inference_loop_with_no_phase_has_its_ranges_as_steps():
    """Ranges indexed in the order they run (``generate_<i>``) that hold most of the kernel time are
    the steps of a run with no phase: its warm-up calls are left out, as the reference leaves them."""
    found, reference = summary("gpt2_generate_nvtx"), single("gpt2_generate_nvtx")
    assert found["structure"]["step_ranges"] and not found["measured_passes_by_phase"]
    assert found["overall"]["scope"] == "measured steps"
    assert found["overall"]["kernels_per_pass"] == reference["step"]["kernels_per_step"]
    assert close(found["overall"]["kernel_ms_per_pass"], reference["step"]["kernel_ms_per_step"])
    assert describe(found["structure"]).startswith("structure from NVTX ranges: steps `generate_<i>` ×5: 2 warm-up")


@pytest.mark.parametrize("question", [nsys_b, nsys_c, nsys_d], ids=["b", "c", "d"])
def test_a_trace_of_whole_graphs_stays_out_of_the_kinds_of_kernels_across_traces(question):
    """Answers across traces that sort forward kernels into kinds leave out a trace whose forward ran
    inside CUDA graphs traced whole, and say so; with it alone they say what they need instead."""
    whole, other = summary("gpt2_cudagraphs_nvtx"), summary("cnn_flags2026")
    record = question.QUESTION.answer(Evidence([whole, other], ResultsSet()))
    assert next(iter(record.tables.values()))["trace"].tolist() == ["cnn_flags2026"]
    assert "Left out: gpt2_cudagraphs_nvtx (99.8% of its forward kernel time ran inside CUDA graphs traced whole" \
        in record.full_answer
    alone = question.QUESTION.answer(Evidence([whole], ResultsSet()))
    assert isinstance(alone, Unanswered) and "--cuda-graph-trace=node" in alone.needs


def test_two_programs_under_one_nsys_are_said_to_run_different_work():
    """Two unrelated training loops in one capture: the note says the pooled per-pass figures mix
    them (each process's own figures equal the reference's, above); a DDP job's ranks get none."""
    assert any("the processes run different work" in note for note in summary("two_procs_nvtx")["notes"])
    assert not any("the processes run different work" in note for note in summary("gpt2_ddp2_nvtx")["notes"])
