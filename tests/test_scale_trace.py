"""The trace scaler on the real reference traces: counts, correlation, time order, untouched source."""
from __future__ import annotations

import hashlib
import shutil
import sqlite3

import pandas as pd
import pytest

from nsys_runs.scale_trace import ScaleError, main, scale_trace

TRAIN = "small_ctx128_train_fp32.sqlite"
FORWARD = "small_ctx256_forward_fp32.sqlite"
# Counted independently with the sqlite3 shell: all kernels, and the kernels whose launch call
# starts inside one of the 3 step_<i> ranges of its process.
KERNELS = {TRAIN: 16_759, FORWARD: 4_482}
MEASURED_KERNELS = {TRAIN: 9_921, FORWARD: 2_688}
MEASURED_STEPS = 3

PID = "((({column}) >> 24) & 16777215)"
NVTX_NAME = "coalesce(n.text, (SELECT value FROM StringIds s WHERE s.id = n.textId))"
STEP_RANGES_SQL = f"""
    SELECT {NVTX_NAME} AS name, CAST(substr({NVTX_NAME}, 6) AS INTEGER) AS step_index,
           n.start AS start_ns, n."end" AS end_ns, {PID.format(column="n.globalTid")} AS pid
    FROM NVTX_EVENTS n WHERE n.eventType = 59 AND {NVTX_NAME} GLOB 'step_[0-9]*'
"""
# Every kernel with the step range its launch call falls in (NULL outside the steps).
KERNEL_STEPS_SQL = f"""
    WITH steps AS MATERIALIZED ({STEP_RANGES_SQL})
    SELECT k.start AS start_ns, k."end" AS end_ns, steps.step_index
    FROM CUPTI_ACTIVITY_KIND_KERNEL k
    JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
      ON r.correlationId = k.correlationId
     AND {PID.format(column="r.globalTid")} = {PID.format(column="k.globalPid")}
    LEFT JOIN steps ON steps.pid = {PID.format(column="r.globalTid")} AND r.start BETWEEN steps.start_ns AND steps.end_ns
"""


def _query(path, sql: str) -> pd.DataFrame:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return pd.read_sql_query(sql, conn)
    finally:
        conn.close()


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def tripled(fixture_trace, tmp_path):
    """The training trace with its measured steps appended twice more: 3x the measured kernels."""
    out = tmp_path / "tripled.sqlite"
    scale_trace(fixture_trace(TRAIN), out, repeat=2)
    return out


@pytest.mark.parametrize("name", [TRAIN, FORWARD])
def test_three_times_the_measured_kernels(fixture_trace, tmp_path, name):
    out = tmp_path / name
    scaled = scale_trace(fixture_trace(name), out, repeat=2)
    kernels = _query(out, KERNEL_STEPS_SQL)
    assert (scaled.kernels_per_copy, scaled.measured_steps) == (MEASURED_KERNELS[name], MEASURED_STEPS)
    assert len(kernels) == scaled.kernels_total == KERNELS[name] + 2 * MEASURED_KERNELS[name]
    assert kernels.step_index.notna().sum() == 3 * MEASURED_KERNELS[name]
    per_step = kernels.groupby("step_index").size()
    assert list(per_step.index) == list(range(9))
    assert per_step.iloc[3:].tolist() == per_step.iloc[:3].tolist() * 2


def test_step_names_stay_unique_and_in_time_order(tripled):
    steps = _query(tripled, STEP_RANGES_SQL).sort_values("start_ns")
    assert steps.name.tolist() == [f"step_{i}" for i in range(9)]
    assert (steps.start_ns.to_numpy()[1:] > steps.end_ns.to_numpy()[:-1]).all()


def test_correlation_joins_launches_to_gpu_work_one_to_one(tripled):
    runtime = _query(tripled, f"SELECT correlationId, {PID.format(column='globalTid')} AS pid FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    gpu_ops = _query(
        tripled,
        " UNION ALL ".join(
            f"SELECT correlationId, {PID.format(column='globalPid')} AS pid FROM {table}"
            for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
        ),
    )
    assert not runtime.duplicated().any()
    assert not gpu_ops.duplicated().any()
    joined = gpu_ops.merge(runtime, on=["correlationId", "pid"], how="left", indicator=True)
    assert (joined["_merge"] == "both").all()


def test_each_copy_repeats_the_measured_timeline_after_the_previous_one(fixture_trace, tripled):
    source_end_ns = _query(fixture_trace(TRAIN), 'SELECT max("end") AS end_ns FROM CUPTI_ACTIVITY_KIND_RUNTIME').end_ns[0]
    kernels = _query(tripled, KERNEL_STEPS_SQL).dropna(subset=["step_index"])
    kernels["copy"] = kernels.step_index.astype(int) // MEASURED_STEPS
    copies = [group.sort_values("start_ns") for _, group in kernels.groupby("copy")]
    assert copies[1].start_ns.min() > max(source_end_ns, copies[0].end_ns.max())
    assert copies[2].start_ns.min() > copies[1].end_ns.max()
    original = copies[0].start_ns.to_numpy()
    for copy in copies[1:]:
        shift = copy.start_ns.to_numpy() - original
        assert (shift == shift[0]).all()


def test_source_untouched_and_schema_unchanged(fixture_trace, tmp_path):
    source = fixture_trace(TRAIN)
    digest = _sha256(source)
    out = tmp_path / "scaled.sqlite"
    scale_trace(source, out, repeat=1)
    schema_sql = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    assert _sha256(source) == digest
    assert _query(out, schema_sql).equals(_query(source, schema_sql))
    assert _query(out, "PRAGMA integrity_check").iloc[0, 0] == "ok"


def test_kernel_target_picks_the_fewest_copies(fixture_trace, tmp_path):
    scaled = scale_trace(fixture_trace(TRAIN), tmp_path / "50k.sqlite", kernels=50_000)
    # (50,000 - 16,759) / 9,921 = 3.35 -> 4 copies
    assert scaled.copies == 4
    assert len(_query(scaled.path, "SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL")) == 16_759 + 4 * 9_921


def test_step_names_held_in_string_ids(fixture_trace, tmp_path):
    """Ranges from NVIDIA's nvtx package carry their name in StringIds (textId), not in text."""
    source = tmp_path / "registered.sqlite"
    shutil.copyfile(fixture_trace(TRAIN), source)
    conn = sqlite3.connect(source)
    with conn:
        conn.execute(
            """INSERT INTO StringIds (id, value)
               SELECT (SELECT max(id) FROM StringIds) + row_number() OVER (ORDER BY start), text
               FROM NVTX_EVENTS WHERE text GLOB 'step_[0-9]*'"""
        )
        conn.execute(
            """UPDATE NVTX_EVENTS SET textId = (SELECT id FROM StringIds WHERE value = text), text = NULL
               WHERE text GLOB 'step_[0-9]*'"""
        )
    conn.close()
    out = tmp_path / "scaled.sqlite"
    scale_trace(source, out, repeat=2)
    steps = _query(
        out,
        "SELECT n.text, s.value FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId "
        "WHERE s.value GLOB 'step_*' ORDER BY n.start",
    )
    assert steps.text.isna().all()
    assert steps.value.tolist() == [f"step_{i}" for i in range(9)]
    assert _query(out, KERNEL_STEPS_SQL).step_index.notna().sum() == 3 * MEASURED_KERNELS[TRAIN]


def test_trace_without_step_ranges_is_refused(fixture_trace, tmp_path):
    out = tmp_path / "scaled.sqlite"
    with pytest.raises(ScaleError, match="step_<i>"):
        scale_trace(fixture_trace("attention_bench.sqlite"), out, repeat=1)
    assert list(tmp_path.iterdir()) == []


def test_command_line(fixture_trace, tmp_path, capsys):
    out = tmp_path / "scaled.sqlite"
    assert main([str(fixture_trace(FORWARD)), "-o", str(out), "--repeat", "1"]) == 0
    assert "1 copies of 3 measured steps, 7,170 kernels" in capsys.readouterr().out
    assert main([str(fixture_trace("attention_bench.sqlite")), "-o", str(out), "--repeat", "1"]) == 1
    assert "no closed NVTX ranges named step_<i>" in capsys.readouterr().err


def test_analyzer_sees_nine_identical_measured_steps(fixture_trace, tripled):
    from analysis import analyze_trace

    source, scaled = analyze_trace(fixture_trace(TRAIN)), analyze_trace(tripled)
    assert (source["measured_passes"], scaled["measured_passes"]) == (3, 9)
    assert scaled["phases"]["backward"]["kernels_per_pass"] == 1463
    for phase, figures in source["phases"].items():
        for name in ("kernels_per_pass", "kernel_ms_per_pass", "gpu_span_ms_per_pass", "cpu_span_ms_per_pass"):
            assert scaled["phases"][phase][name] == pytest.approx(figures[name], rel=1e-12), (phase, name)
