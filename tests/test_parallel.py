"""Data-parallel runs on the CPU: two gloo processes, the tiny model.

Naive DDP, overlapped DDP and FSDP must train the model exactly as one process does on the two
ranks' batches put together; the command line run writes every rank's rows and tells NVTX each
rank's place and the gradient synchronization.
"""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from cs336_profile import annotate
from cs336_profile.bench import prepare_workload, run_step
from cs336_profile.grad_sync import broadcast_from_rank0
from cs336_profile.parallel import PARALLEL_MODES, join_process_group, prepare_parallel_workload, rank_batch
from cs336_profile.results import read_results
from cs336_profile.run import main
from tests.cpu_torch import tiny
from tests.test_annotations import RecordingNvtx, names, steps

WORLD_SIZE = 2
TRAIN_STEPS = 2


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _launcher_environment(rank: int, port: int) -> None:
    """What torchrun sets for each process."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(WORLD_SIZE), LOCAL_RANK=str(rank))


def _spawn(worker, *args) -> None:
    mp.start_processes(worker, args=args, nprocs=WORLD_SIZE, start_method="spawn", join=True)


def _whole(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of the tensor, gathered from its shards when FSDP sharded it."""
    return (tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor).detach().clone()


def _parameters_and_gradients(model: torch.nn.Module) -> dict[str, dict[str, torch.Tensor]]:
    """Every parameter and its last gradient, whole."""
    named = dict(model.named_parameters())
    return {"parameters": {name: _whole(p) for name, p in named.items()},
            "gradients": {name: _whole(p.grad) for name, p in named.items()}}


def _train_worker(rank: int, port: int, out: str) -> None:
    _launcher_environment(rank, port)
    join_process_group("cpu")
    # Rank-dependent parameters become rank 0's.
    torch.manual_seed(rank)
    layer = torch.nn.Linear(3, 3)
    broadcast_from_rank0(layer)
    torch.save(dict(layer.state_dict()), Path(out) / f"broadcast_{rank}.pt")
    for mode in PARALLEL_MODES:
        run = tiny()
        workload = prepare_parallel_workload(run, mode, rank)
        for index in range(TRAIN_STEPS):
            record = run_step(run, workload, f"step_{index}")
        torch.save({**_parameters_and_gradients(workload.model), "times_ms": record.times_ms},
                   Path(out) / f"{mode}_{rank}.pt")
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("trained")
    _spawn(_train_worker, _free_port(), str(out))
    return out


def _single_process_training() -> dict[str, dict[str, torch.Tensor]]:
    """The same model trained in one process on the ranks' batches concatenated."""
    run = tiny()
    workload = prepare_workload(run)
    batches = [rank_batch(run, rank) for rank in range(WORLD_SIZE)]
    workload.tokens = torch.cat([tokens for tokens, _ in batches])
    workload.targets = torch.cat([targets for _, targets in batches])
    initial = {name: _whole(p) for name, p in workload.model.named_parameters()}
    for index in range(TRAIN_STEPS):
        run_step(run, workload, f"step_{index}")
    trained = _parameters_and_gradients(workload.model)
    assert all(not torch.equal(initial[name], p) for name, p in trained["parameters"].items())
    return trained


def test_broadcast_gives_every_rank_rank0s_parameters(trained):
    first, second = (torch.load(trained / f"broadcast_{rank}.pt") for rank in range(WORLD_SIZE))
    torch.manual_seed(0)
    expected = torch.nn.Linear(3, 3).state_dict()
    for name, value in expected.items():
        assert torch.equal(first[name], value) and torch.equal(second[name], value)


# AdamW's first steps move each weight by about lr = 1e-3 whatever the gradient's scale, so the
# gradients (averaged, not summed, across ranks) are compared as closely as the parameters.
TOLERANCES = {"parameters": dict(rtol=0, atol=1e-5), "gradients": dict(rtol=1e-4, atol=1e-8)}


def test_every_mode_trains_as_one_process_on_the_concatenated_batch(trained):
    reference = _single_process_training()
    for mode in PARALLEL_MODES:
        for rank in range(WORLD_SIZE):
            result = torch.load(trained / f"{mode}_{rank}.pt")
            for kind, tolerance in TOLERANCES.items():
                assert result[kind].keys() == reference[kind].keys()
                for name, expected in reference[kind].items():
                    torch.testing.assert_close(result[kind][name], expected, **tolerance,
                                               msg=lambda m, name=name, kind=kind: f"{mode} rank {rank} {kind} {name}: {m}")


def test_only_ddp_modes_time_a_gradient_synchronization(trained):
    for mode in PARALLEL_MODES:
        times = torch.load(trained / f"{mode}_0.pt")["times_ms"]
        assert ("grad_sync" in times) == mode.startswith("ddp"), mode
        assert times["step"] >= sum(ms for part, ms in times.items() if part != "step")


def _cli_worker(rank: int, ports: list[int], out: str) -> None:
    recordings = {}
    for mode, port in zip(("ddp-naive", "fsdp"), ports):
        _launcher_environment(rank, port)
        recorder = annotate.nvtx = RecordingNvtx()
        main(["--parallel", mode, "--sizes", "tiny", "--context-lengths", "8", "--device", "cpu", "--warmup", "1",
              "--steps", "2", "--layer-ranges", "--results-dir", out, "--name", mode, "--no-progress"])
        recordings[mode] = {"ranges": recorder.root,
                            "marks": [json.loads(message) for kind, (_, message) in
                                      (e for e in recorder.events if e[0] == "mark")]}
    (Path(out) / f"nvtx_{rank}.json").write_text(json.dumps(recordings))


@pytest.fixture(scope="module")
def command_line_runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli")
    _spawn(_cli_worker, [_free_port(), _free_port()], str(out))
    return out


def test_results_files_hold_every_ranks_rows(command_line_runs):
    for mode in ("ddp-naive", "fsdp"):
        summary = read_results(command_line_runs / f"{mode}.json")["rows"]
        assert [(row["rank"], row["world_size"], row["parallel"], row["status"]) for row in summary] == \
            [(rank, WORLD_SIZE, mode, "ok") for rank in range(WORLD_SIZE)]
        assert all((row["grad_sync_ms_mean"] is not None) == (mode == "ddp-naive") for row in summary)
        steps = read_results(command_line_runs / f"{mode}_steps.json")["rows"]
        assert sorted((row["rank"], row["step_kind"], row["step_index"]) for row in steps) == sorted(
            (rank, kind, index) for rank in range(WORLD_SIZE) for kind, index in
            (("warmup", 0), ("measured", 0), ("measured", 1)))
        assert all(row["step_ms"] > 0 for row in steps)


def test_each_rank_marks_its_place_and_ranges_the_gradient_synchronization(command_line_runs):
    for rank in range(WORLD_SIZE):
        recordings = json.loads((command_line_runs / f"nvtx_{rank}.json").read_text())
        for mode, expected_phases in (("ddp-naive", ["forward", "loss", "backward", "grad_sync", "optimizer_step"]),
                                      ("fsdp", ["forward", "loss", "backward", "optimizer_step"])):
            ranges, marks = recordings[mode]["ranges"], recordings[mode]["marks"]
            config = [m for m in marks if m["event"] == "config"]
            assert len(config) == 1
            assert (config[0]["parallel"], config[0]["rank"], config[0]["world_size"]) == (mode, rank, WORLD_SIZE)
            assert [m["step"] for m in marks if m["event"] == "step_timing"] == [0, 1]
            assert names(steps(ranges)) == ["warmup_0", "step_0", "step_1"]  # measured ones in measured_steps
            for _, phases in steps(ranges):
                assert names(phases) == expected_phases
                assert names(phases[0][1]) == ["layer_0", "layer_1"]  # the forward's block ranges


def test_without_a_launcher_the_run_stops_with_one_line(monkeypatch, capsys):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as stop:  # a usage error, before any work
        main(["--parallel", "ddp-naive", "--sizes", "tiny", "--device", "cpu"])
    assert stop.value.code == 2
    assert "--parallel needs a launcher that sets RANK, WORLD_SIZE, LOCAL_RANK" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["--parallel", "fsdp", "--sizes", "tiny", "--device", "cpu", "--compile"])
    assert stop.value.code == 2 and "leave out --compile" in capsys.readouterr().err
