"""mp-b: LayerNorm and RMSNorm in fp16/bf16 against fp32, on activations and on built inputs."""
from __future__ import annotations

import torch

from cs336_profile.experiments.norm_precision import NormStudy, compare_norm, norm_precision_rows, worst_over_sites
from cs336_profile.results import read_results
from cs336_profile.run import main
from tests.cpu_torch import tiny  # noqa: F401 - one thread for torch


def test_rows_cover_every_norm_site_norm_dtype_and_computation():
    rows = norm_precision_rows(NormStudy(size="tiny", context_length=8, batch_size=2, train_steps=1), "cpu")
    sites = ["layers.0.ln1", "layers.0.ln2", "layers.1.ln1", "layers.1.ln2", "ln_final"]
    assert list(dict.fromkeys(row["site"] for row in rows)) == sites
    assert len(rows) == len(sites) * 2 * 2 * 2 and all(row["tokens"] == 16 and row["width"] == 64 for row in rows)
    for row in rows:
        assert (row["mean_rel_error"] is None) == (row["norm"] == "rmsnorm")
        assert 0 < row["output_rel_error"] < 0.02 and row["overflow_count"] == 0
    worst = worst_over_sites(rows)
    assert len(worst) == 8 and all(w["sites"] == 5 for w in worst)
    by_key = {(w["norm"], w["dtype"], w["compute"]): w for w in worst}
    # bf16 keeps 8 bits of mantissa, fp16 11: its errors are several times larger
    assert by_key["layernorm", "bf16", "low"]["output_rel_error"] > 4 * by_key["layernorm", "fp16", "low"]["output_rel_error"]


def test_fp16_overflows_and_underflows_where_bf16_does_not():
    x = torch.full((2, 64), 1e-4)
    x[0, ::2] = 300.0  # squares above fp16's 65504
    x[0, 1::2] = -300.0
    weight = torch.ones(64)
    fp16 = compare_norm(x, weight, 1e-5, "rmsnorm", "fp16", "low")
    assert fp16["overflow_count"] > 0  # the mean square is inf, and the output of that row
    assert fp16["underflow_squares"] == 64  # (1e-4)² = 1e-8 is below fp16's smallest subnormal
    assert fp16["zero_spread_rows"] == 1
    bf16 = compare_norm(x, weight, 1e-5, "rmsnorm", "bf16", "low")
    assert (bf16["overflow_count"], bf16["underflow_squares"]) == (0, 0)
    assert compare_norm(x, weight, 1e-5, "rmsnorm", "fp16", "upcast")["overflow_count"] == 0


def test_layernorm_command_writes_rows_and_the_worst_case_summary(tmp_path, capsys):
    main(["layernorm", "--size", "tiny", "--context-length", "8", "--batch-size", "1", "--train-steps", "0",
          "--device", "cpu", "--results-dir", str(tmp_path), "--no-progress"])
    rows = read_results(tmp_path / "layernorm.json")["rows"]
    summary = read_results(tmp_path / "layernorm_summary.json")["rows"]
    assert len(rows) == 40 and len(summary) == 8 and all(r["train_steps"] == 0 for r in rows)
    assert "rsqrt err" in capsys.readouterr().out
