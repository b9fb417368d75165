"""ckpt-b: the best checkpoint block size from the checkpoint experiment's rows."""
from __future__ import annotations

import json
from pathlib import Path

from analysis.questions.checkpointing import answer_ckpt_b
from analysis.questions.records import Unanswered
from analysis.questions.shared.results_files import read_results_dir

GIB = 1024**3
DIMS = {"handout": "2026", "size": "xl", "batch_size": 4, "context_length": 2048, "dtype": "fp32", "d_model": 2560,
        "num_layers": 32}


def _write(folder: Path, peaks: dict[int, float | None]) -> Path:
    rows = [{**DIMS, "checkpoint_every": k, "status": "ok" if p is not None else "OOM",
             "peak_memory_bytes": p, "step_ms_mean": 100.0 if p is not None else None} for k, p in peaks.items()]
    (folder / "checkpoint.json").write_text(json.dumps({"experiment": "checkpoint", "config": {}, "rows": rows}))
    return folder


def _peak(k: int, block: float, group: float, base: float = 50 * GIB) -> float:
    return base + k * block + 32 / k * group


def test_best_k_and_its_neighbours_with_oom(tmp_path):
    peaks = {k: _peak(k, 1 * GIB, 0.5 * GIB) for k in (1, 2, 4, 8)} | {16: None, 0: None}
    answer = answer_ckpt_b(read_results_dir(_write(tmp_path, peaks)))
    assert answer.numbers["best_k"] == 4  # √(32·0.5/1) = 4
    assert abs(answer.numbers["optimal_k"] - 4) < 1e-6
    assert f"K=2: {peaks[2] / GIB:,.1f} GiB" in answer.full_answer and "K=8:" in answer.full_answer
    assert "Without checkpointing: OOM" in answer.full_answer


def test_cheap_groups_make_one_block_per_group_best(tmp_path):
    peaks = {k: _peak(k, 6 * GIB, 0.001 * GIB) for k in (1, 2, 4, 5, 6)} | {32: None}
    answer = answer_ckpt_b(read_results_dir(_write(tmp_path, peaks)))
    assert answer.numbers["best_k"] == 1 and answer.numbers["optimal_k"] < 1
    assert "Next smaller: none tried" in answer.full_answer and "next larger: K=2" in answer.full_answer


def test_without_results_it_says_what_it_needs(tmp_path):
    assert isinstance(answer_ckpt_b(read_results_dir(tmp_path)), Unanswered)
