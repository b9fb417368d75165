"""Activation checkpointing: the same loss and gradients, and the study's group sizes and rows."""
from __future__ import annotations

import pytest
import torch

from cs336_profile.config import model_config
from cs336_profile.experiments.checkpointing import CheckpointStudy, checkpoint_runs, group_sizes_to_try
from cs336_profile.model import TransformerLM
from cs336_profile.optim import cross_entropy
from cs336_profile.results import read_results
from cs336_profile.run import main
from tests.cpu_torch import tiny  # noqa: F401 - one thread for torch


def _loss_and_grads(checkpoint_every: int) -> tuple[float, dict[str, torch.Tensor]]:
    config = model_config("tiny")
    torch.manual_seed(0)
    model = TransformerLM(config.__class__(d_model=64, d_ff=256, num_layers=5, num_heads=4), 8,
                          checkpoint_every=checkpoint_every)
    tokens = torch.randint(config.vocab_size, (2, 8), generator=torch.Generator().manual_seed(1))
    loss = cross_entropy(model(tokens), tokens.roll(-1, dims=1))
    loss.backward()
    return loss.item(), {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("k", [1, 2, 5])
def test_checkpointed_groups_give_the_same_loss_and_gradients(k):
    loss, grads = _loss_and_grads(0)
    loss_k, grads_k = _loss_and_grads(k)
    assert loss_k == pytest.approx(loss, rel=1e-6)
    assert grads.keys() == grads_k.keys()
    for name in grads:
        torch.testing.assert_close(grads_k[name], grads[name], rtol=1e-5, atol=1e-7, msg=name)


@pytest.mark.parametrize("k, groups", [(1, 2), (2, 1), (0, 1)])
def test_checkpointing_recomputes_each_group_in_backward(k, groups):
    model = TransformerLM(model_config("tiny"), 8, checkpoint_every=k)
    run_blocks, calls = model._run_blocks, []
    model._run_blocks = lambda x, blocks: calls.append(list(blocks)) or run_blocks(x, blocks)
    model(torch.zeros(1, 8, dtype=torch.long)).sum().backward()
    forward = [[0], [1]] if k == 1 else [[0, 1]]
    # forward, then (checkpointed) backward recomputes the groups, last first
    assert calls == (forward + forward[::-1] if k else forward)
    assert len(forward) == groups


def test_group_sizes_surround_the_square_root_and_end_with_none():
    assert group_sizes_to_try(32) == [1, 2, 4, 5, 6, 7, 8, 16, 32, 0]
    assert group_sizes_to_try(2) == [1, 2, 0]
    runs = checkpoint_runs(CheckpointStudy())
    assert {(r.size, r.handout, r.batch_size, r.context_length, r.mode) for r in runs} == {("xl", "2026", 4, 2048, "train")}
    assert runs[0].model.num_layers == 32


def test_checkpoint_command_writes_a_row_per_group_size(tmp_path, capsys):
    main(["checkpoint", "--size", "tiny", "--context-length", "8", "--warmup", "0", "--steps", "1",
          "--device", "cpu", "--results-dir", str(tmp_path), "--no-progress"])
    rows = read_results(tmp_path / "checkpoint.json")["rows"]
    assert [(r["checkpoint_every"], r["status"]) for r in rows] == [(1, "ok"), (2, "ok"), (0, "ok")]
    assert all(r["handout"] == "2026" and r["step_ms_mean"] > 0 for r in rows)
    assert "blocks per checkpoint" in capsys.readouterr().out
