"""The run-to-run spread of bench results: within-run CV, between-run ratio, the first step of a
run without warm-up left out, the first configuration of the process marked."""
from __future__ import annotations

import pytest

from analysis.questions.shared import run_spread
from tests.test_questions_results import bench_row, results_dir  # noqa: F401  (the fixture)


def steps(size, warmup, forward_ms, config_index=0) -> list[dict]:
    row = {key: value for key, value in bench_row(size, warmup_steps=warmup).items()
           if key not in ("measured_steps", "status") and not key.endswith(("_mean", "_std"))}
    return [row | {"config_index": config_index, "step_kind": "measured", "step_index": index,
                   "forward_ms": ms, "backward_ms": 2 * ms, "step_ms": 3 * ms}
            for index, ms in enumerate(forward_ms)]


def test_spread_between_runs_drops_the_cold_first_step(results_dir):
    results_dir("bench_steps", steps("small", 0, [300.0, 10.0, 10.0]) + steps("medium", 0, [50.0, 40.0, 40.0], 1),
                name="cold_steps")
    results = results_dir("bench_steps", steps("small", 2, [14.0, 16.0]) + steps("medium", 2, [40.0, 40.0], 1),
                          name="warm_steps")
    table = run_spread.spread_table(results)
    small = run_spread.configuration_spread(table, size="small")
    assert small["runs"] == 2 and small["first_in_process"]
    assert small["forward_run_mean_min_ms"] == pytest.approx(10.0)  # 300 ms first step left out
    assert small["forward_between_runs_ratio"] == pytest.approx(1.5)
    assert small["step_between_runs_ratio"] == pytest.approx(1.5)
    assert small["forward_cv_max_share"] == pytest.approx(2 ** 0.5 / 15)
    medium = run_spread.configuration_spread(table, size="medium")
    assert not medium["first_in_process"] and medium["forward_between_runs_ratio"] == pytest.approx(1.0)
    assert run_spread.configuration_spread(table, size="xl") is None


def test_spread_from_summary_rows_keeps_single_runs_without_a_ratio(results_dir):
    results = results_dir("bench", [bench_row("small", forward_ms_mean=20.0, forward_ms_std=2.0, config_index=0),
                                     bench_row("xl", warmup_steps=0, forward_ms_mean=9.0, forward_ms_std=1.0,
                                               config_index=1)])
    table = run_spread.spread_table(results)
    assert list(table["size"]) == ["small"]  # a run without warm-up has no steady summary
    assert table.loc[0, "forward_cv_median_share"] == pytest.approx(0.1)
    assert table.loc[0, "forward_between_runs_ratio"] != table.loc[0, "forward_between_runs_ratio"]  # NaN
