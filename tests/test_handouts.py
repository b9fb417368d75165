"""Editions of the handout: size tables, and results rows that carry the edition and the model's dimensions."""
from __future__ import annotations

import pytest

from cs336_profile.bench import run_config
from cs336_profile.config import DEFAULT_HANDOUT, MODEL_KEYS, SIZES, SIZES_BY_HANDOUT, RunConfig, model_config
from cs336_profile.results import read_results
from cs336_profile.run import main
from tests.cpu_torch import tiny


def test_the_same_size_name_is_a_different_model_in_2026():
    assert DEFAULT_HANDOUT == "2025" and SIZES is SIZES_BY_HANDOUT["2025"]
    assert model_config("xl", "2026") == SIZES["2.7B"]
    xl_2026, big = model_config("xl", "2026"), model_config("10B", "2026")
    assert (xl_2026.d_model, xl_2026.d_ff, xl_2026.num_layers, xl_2026.num_heads) == (2560, 10240, 32, 32)
    assert (big.d_model, big.d_ff, big.num_layers, big.num_heads) == (4608, 12288, 50, 36)
    assert model_config("xl") != xl_2026 and model_config("small", "2026") == model_config("small")
    assert big.parameter_count() == 2 * 10_000 * 4608 + 50 * (4 * 4608**2 + 3 * 4608 * 12288 + 2 * 4608) + 4608


@pytest.mark.parametrize("size, handout", [("10B", "2025"), ("2.7B", "2026"), ("small", "2027")])
def test_sizes_outside_a_handouts_table_are_refused(size, handout):
    with pytest.raises(ValueError, match="handout"):
        RunConfig(size=size, handout=handout)


def test_results_rows_carry_the_handout_and_the_dimensions():
    row = run_config(tiny(handout="2026", measured_steps=1)).summary
    assert row["handout"] == "2026"
    assert {key: row[key] for key in MODEL_KEYS} == {"d_model": 64, "d_ff": 256, "num_layers": 2, "num_heads": 4,
                                                     "vocab_size": 10_000, "rope_theta": 10_000.0}


def test_bench_takes_the_2026_default_context_and_handout(tmp_path):
    main(["bench", "--handout", "2026", "--sizes", "tiny", "--mode", "forward", "--warmup", "0", "--steps", "1",
          "--device", "cpu", "--results-dir", str(tmp_path), "--no-progress"])
    (row,) = read_results(tmp_path / "bench.json")["rows"]
    assert (row["handout"], row["context_length"]) == ("2026", 512)
    (step,) = read_results(tmp_path / "bench_steps.json")["rows"]
    assert step["handout"] == "2026" and step["checkpoint_every"] == 0
