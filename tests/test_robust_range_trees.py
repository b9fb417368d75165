"""Robustness: traces of random range trees (names of every kind a user writes, any nesting, ranges
left open, launches from several threads, one to three processes) give a summary, never an
exception. Each seed is one trace; the two listed first once stopped the analysis (a
ZeroDivisionError on measured steps that launched nothing; a KeyError popping a step family that
another family's parts had taken already)."""
from __future__ import annotations

import random

import pytest

from analysis.app.analyze import analyze_trace
from tests.synthetic import PUSH_POP, build_export
from tests.test_structure import KERNELS, OPTIMIZER_KERNEL

NAMES = ("forward", "backward", "optimizer", "step", "step_{i}", "warmup", "warmup_{i}", "train_step", "iter {i}", "loss",
         "measured", "benchmark", "fwd", "bwd", "opt", "forward+loss", "bwd+opt", "scaled dot product attention",
         "computing attention scores", "computing softmax", "final matmul", "layer_{i}", "block", "embed", "lm_head",
         "", " ", "x" * 300, "前向传播", "反向传播", "优化器", "预热", "step_{i}_forward", "[iter {i}] bwd", "epoch_{i}/step_{i}",
         "rank0_step_{i}", "grad_all_reduce", "zero_grad", "data", "h2d-{i}", "profile", "eval", "generate_{i}",
         "Fwd-small-128-{i}", "warmup/step_{i}", "optimizer.step", "AdamW.step", "torch.nn.modules.module.Module.__call__",
         "torch.autograd.backward", "torch.optim.AdamW.step", "ProfilerStep#{i}", "measure_step_{i}", "dry_run_{i}",
         "micro_{i}_forward", "🙂", "step-{i}-x")
SEEDS = (377, 757, 0, 1, 2, 3, 4, 5, 6, 7)


def random_trace(path, seed: int):
    """An export of ``seed``'s random range trees and kernels."""
    rng = random.Random(seed)
    kernels, ranges, correlation = [], [], iter(range(1, 1 << 30))
    for process in range(rng.choice([1, 1, 1, 2, 3])):
        pid, now = 100 + 10 * process, [1000 + rng.randint(0, 5000)]

        def tree(depth: int, i: int) -> None:
            for _ in range(rng.randint(1, 4)):
                name, tid, start = rng.choice(NAMES).format(i=i), pid + (rng.random() < 0.1) * rng.randint(1, 2), now[0]
                now[0] += 3
                for _ in range(rng.randint(0, 4)):
                    kernel = OPTIMIZER_KERNEL if rng.random() < 0.1 else rng.choice(KERNELS)
                    duration = rng.choice([1, 10, 100])
                    kernels.append((now[0] + 300, now[0] + 300 + duration, now[0], pid, rng.choice([pid, pid + 1]),
                                    next(correlation), kernel, process % 2, 7))
                    now[0] += rng.choice([5, 20])
                if depth < 4 and rng.random() < 0.6:
                    tree(depth + 1, i)
                now[0] += 3
                end = None if rng.random() < 0.02 else now[0]
                ranges.append((name, start, end, pid, tid, tid if end is not None else None, PUSH_POP))
                now[0] += 2

        for i in range(rng.randint(1, 8)):
            tree(0, i)
    return build_export(path, kernels=kernels, ranges=ranges, strings=KERNELS)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_range_tree_gives_a_summary(tmp_path, seed):
    summary = analyze_trace(random_trace(tmp_path / f"trace_{seed}.sqlite", seed))
    assert summary["structure"]["step_rule"]
