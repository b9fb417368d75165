"""The experiments at CPU scale: attention grid, mixed precision, memory, compile, overhead."""
from __future__ import annotations

import json

import pytest
import torch

from cs336_profile.experiments import attention
from cs336_profile.experiments.attention import MEASUREMENT_KEYS, AttentionGrid, run_attention_grid
from cs336_profile.experiments.compile import compile_runs
from cs336_profile.experiments.memory import (
    MemoryStudy,
    allocated_timeline,
    largest_allocations,
    residual_activation_rows,
    run_memory_study,
)
from cs336_profile.experiments.mixed_precision import accumulation_loops, toy_model_dtypes
from cs336_profile.experiments.overhead import alternating_steps, is_annotated_step, overhead_rows
from cs336_profile.run import main
from tests.cpu_torch import tiny


def cpu_grid(**settings) -> AttentionGrid:
    return AttentionGrid(**({"head_dims": (16,), "seq_lens": (8, 32), "implementations": ("eager", "sdpa"),
                             "warmup_passes": 1, "passes": 3, "device": "cpu"} | settings))


def test_attention_grid_gives_a_row_per_implementation_and_cell():
    rows = run_attention_grid(cpu_grid(), progress=False)
    assert [(r["implementation"], r["head_dim"], r["seq_len"]) for r in rows] == [
        ("eager", 16, 8), ("eager", 16, 32), ("sdpa", 16, 8), ("sdpa", 16, 32)]
    for row in rows:
        assert row["status"] == "ok" and row["batch_size"] == 8 and row["passes"] == 3
        assert row["forward_ms_mean"] > 0 and row["backward_ms_mean"] > 0
        assert row["memory_before_backward_bytes"] is None  # CPU: no CUDA allocator


def test_attention_cell_out_of_memory_is_a_row_and_the_grid_goes_on(monkeypatch):
    real_cell = attention._measure_cell

    def cell(fn, grid, head_dim, seq_len):
        if seq_len == 32:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return real_cell(fn, grid, head_dim, seq_len)

    monkeypatch.setattr(attention, "_measure_cell", cell)
    rows = run_attention_grid(cpu_grid(implementations=("sdpa",)), progress=False)
    assert [r["status"] for r in rows] == ["ok", "OOM"]
    assert all(rows[1][key] is None for key in MEASUREMENT_KEYS)


def test_attention_grid_without_timed_passes_is_refused():
    with pytest.raises(ValueError, match="passes >= 1"):
        cpu_grid(passes=0)


def test_attention_implementations_compute_the_same_function():
    q, k, v = (torch.randn(2, 16, 8) for _ in range(3))
    mask = torch.ones(16, 16, dtype=torch.bool).tril()
    torch.testing.assert_close(attention.attention_function("eager")(q, k, v, mask),
                               attention.attention_function("sdpa")(q, k, v, mask))
    with pytest.raises(ValueError, match="unknown attention implementation"):
        attention.attention_function("flash")


def test_accumulation_loops_give_the_float_results_of_the_assignment():
    rows = {row["loop"]: row for row in accumulation_loops("cpu")}
    assert rows["fp32 accumulator + fp32 values"]["result"] == 10.000133514404297
    assert rows["fp16 accumulator + fp16 values"]["result"] == 9.953125
    assert rows["fp32 accumulator + fp16 values"]["result"] == 10.00213623046875
    assert rows["fp32 accumulator + fp16 values upcast"]["result"] == 10.00213623046875
    assert rows["bf16 accumulator + bf16 values"]["result"] == 4.0  # 4 + 0.01 rounds back to 4 in bf16
    assert rows["fp16 accumulator + fp16 values"]["printed"] == "tensor(9.9531, dtype=torch.float16)"
    assert rows["fp16 accumulator + fp16 values"]["abs_error"] == pytest.approx(0.046875)


@pytest.mark.parametrize("autocast_dtype, low", [(torch.float16, "float16"), (torch.bfloat16, "bfloat16")])
def test_toy_model_dtypes_are_observed_under_autocast(autocast_dtype, low):
    observed = {row["quantity"]: row["dtype"] for row in toy_model_dtypes(autocast_dtype, "cpu")}
    assert observed["parameters (inside autocast)"] == "float32"
    assert observed["fc1 output"] == low and observed["logits (fc2 output)"] == low
    assert observed["loss"] == "float32"
    gradients = [dtype for quantity, dtype in observed.items() if quantity.startswith("gradient of")]
    assert len(gradients) == 4 and set(gradients) == {"float32"}


def test_residual_activation_size_of_the_2_7b_model():
    row = residual_activation_rows("2.7B", (128, 512), batch_size=4)[0]
    assert (row["bytes"], row["mib"]) == (4 * 128 * 2560 * 4, 5.0)
    assert row["derivation"] == "4 × 128 × 2560 × 4 bytes = 5,242,880 bytes = 5.00 MB (bytes / 1024²)"


def _frame(path: str, line: int, name: str) -> dict:
    return {"filename": path, "line": line, "name": name}


SNAPSHOT = {"device_traces": [[
    {"action": "alloc", "size": 100, "time_us": 1, "frames": [
        _frame("/src/cs336_profile/model.py", 10, "forward"), _frame("/lib/torch/nn/modules/module.py", 1, "_call_impl"),
        _frame("/src/cs336_profile/bench.py", 5, "run_step")]},
    {"action": "alloc", "size": 300, "time_us": 2, "frames": [_frame("/src/cs336_profile/model.py", 20, "softmax")]},
    {"action": "free_requested", "size": 100, "time_us": 3, "frames": []},
    {"action": "free_completed", "size": 100, "time_us": 3, "frames": []},
    {"action": "segment_alloc", "size": 2**21, "time_us": 4, "frames": []},
    {"action": "alloc", "size": 300, "time_us": 5, "frames": [_frame("/src/cs336_profile/model.py", 20, "softmax")]},
]]}


def test_allocated_timeline_adds_allocations_to_the_baseline():
    full = allocated_timeline(SNAPSHOT, baseline_bytes=1000)
    assert full["allocated_bytes"].tolist() == [1100, 1400, 1300, 1600]
    reduced = allocated_timeline(SNAPSHOT, baseline_bytes=1000, max_points=2)
    assert reduced["allocated_bytes"].tolist() == [1400, 1600]  # the maximum of each half
    assert reduced["time_us"].tolist() == [1, 3]


def test_largest_allocations_are_grouped_by_size_and_model_code():
    table = largest_allocations(SNAPSHOT)
    assert table[["size_bytes", "count", "site"]].values.tolist() == [
        [300, 2, "model.py:20 in softmax"], [100, 1, "model.py:10 in forward"]]
    assert table["stack"].iloc[1] == "model.py:10 in forward <- bench.py:5 in run_step"


def test_memory_study_on_the_cpu_has_every_table_and_no_snapshots(tmp_path):
    study = MemoryStudy(size="tiny", context_lengths=(8,), modes=("forward", "train"), dtypes=("fp32",),
                        snapshot_context_length=8, device="cpu")
    tables = run_memory_study(study, tmp_path / "snapshots", progress=False)
    assert set(tables) == {"memory", "memory_timeline", "memory_largest_allocations", "memory_activation"}
    assert [(r["mode"], r["status"]) for r in tables["memory"]] == [("forward", "ok"), ("train", "ok")]
    assert tables["memory_timeline"] == [] and not (tmp_path / "snapshots").exists()


def test_compile_runs_pair_eager_and_compiled():
    runs = compile_runs(["tiny", "small"], 64, ["forward", "train"], device="cpu")
    assert [(r.size, r.mode, r.compile) for r in runs] == [
        ("tiny", "forward", False), ("tiny", "forward", True), ("tiny", "train", False), ("tiny", "train", True),
        ("small", "forward", False), ("small", "forward", True), ("small", "train", False), ("small", "train", True)]
    assert {r.context_length for r in runs} == {64}


def test_overhead_alternates_annotated_and_plain_steps_on_one_model():
    assert [is_annotated_step(i) for i in range(8)] == [True, False, False, True] * 2
    rows = list(alternating_steps(tiny(measured_steps=4)))
    assert [(r["step_index"], r["nvtx_annotations"]) for r in rows] == [(0, True), (1, False), (2, False), (3, True)]


def test_overhead_is_the_ratio_of_median_step_times():
    keys = {"size": "tiny", "context_length": 8, "mode": "train", "dtype": "fp32", "compile": False}
    steps = [keys | {"nvtx_annotations": flag, "step_ms": step, "forward_ms": forward}
             for flag, step, forward in [(True, 102.0, 40.0), (True, 104.0, 41.0), (True, 500.0, 42.0),
                                         (False, 100.0, 40.0), (False, 100.0, 40.0), (False, 100.0, 40.0)]]
    (row,) = overhead_rows(steps)
    assert row["annotated_step_ms_median"] == 104.0 and row["plain_step_ms_median"] == 100.0
    assert row["step_overhead_pct"] == pytest.approx(4.0) and row["forward_overhead_pct"] == pytest.approx(2.5)
    assert row["steps_each"] == 3


def test_experiment_commands_write_their_results_files(tmp_path):
    common = ["--device", "cpu", "--results-dir", str(tmp_path), "--no-progress"]
    main(["mixed-precision", *common])
    main(["attention", "--head-dims", "16", "--seq-lens", "8", "--implementations", "eager", "--passes", "2",
          "--warmup-passes", "1", *common])
    main(["memory", "--size", "tiny", "--context-lengths", "8", "--modes", "forward", "--dtypes", "fp32", *common])
    main(["overhead", "--sizes", "tiny", "--context-lengths", "8", "--steps", "4", "--warmup", "1", *common])
    written = {path.name for path in tmp_path.glob("*.json")}
    assert written == {"mixed_precision_accumulation.json", "mixed_precision_toy_model.json", "attention.json",
                       "memory.json", "memory_timeline.json", "memory_largest_allocations.json",
                       "memory_activation.json", "overhead.json", "overhead_steps.json"}


def test_a_custom_name_renames_the_files_but_not_the_experiments(tmp_path):
    main(["mixed-precision", "--name", "mp", "--device", "cpu", "--results-dir", str(tmp_path), "--no-progress"])
    experiments = {path.name: json.loads(path.read_text())["experiment"] for path in tmp_path.glob("*.json")}
    assert experiments == {"mp_accumulation.json": "mixed_precision_accumulation",
                           "mp_toy_model.json": "mixed_precision_toy_model"}
    config = json.loads((tmp_path / "mp_accumulation.json").read_text())["config"]
    assert config["name"] == "mp" and "experiment" not in config and "handler" not in config
