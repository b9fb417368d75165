"""The memory ledger (mem-f): a synthetic trace with known bytes, and the committed 2026 xl trace
checked against SQL written independently of the analyzer."""
from __future__ import annotations

import json
import lzma
import shutil
import sqlite3
from pathlib import Path

import pytest

from analysis import analyze_trace
from analysis.core.phases import label_ops
from analysis.core.timings import read_run_record
from analysis.load import load_trace
from analysis.questions.mem_f import ledger_sentence
from analysis.trace.memory_ledger import block_params, ledger_record, memory_ledger, op_label
from tests.synthetic import build_export

MAIN, AUTOGRAD = 1, 2
REPO = Path(__file__).resolve().parents[1]
XL_TRACE = REPO / "nsys_runs/traces/2026/xl_ctx128_train_fp32_layers_2026.sqlite.xz"
CONFIG = {"mode": "train", "d_model": 2, "d_ff": 3}
GRAD = block_params(2, 3) * 4  # 152 B: each block's backward allocates exactly its gradients


def _range(name, start, end, tid=MAIN):
    return (name, start, end, 1, tid, tid, 59)


def _node(name, seq, start, end):
    """A backward node inside its evaluate_function range, on the autograd thread."""
    return [_range(f"autograd::engine::evaluate_function: {name}", start, end, AUTOGRAD),
            _range(f"{name}, seq = {seq}, op_id = {900 + seq}, sizes = [[2, 4]]", start + 1, end - 1, AUTOGRAD)]


RANGES = [
    _range("measured_steps", 90, 990), _range("step_0", 100, 980), _range("forward", 110, 400),
    _range("layer_0", 120, 250), _range("layer_1", 260, 390), _range("backward", 500, 900),
    _range("aten::mm, seq = 10, op_id = 1, sizes = [[2, 3], [3, 4]], input_op_ids = [(0,-1)]", 130, 150),
    _range("aten::empty, op_id = 2, sizes = [[], []]", 135, 140),
    _range("aten::relu, seq = 11, op_id = 3, sizes = [[2, 4]], input_op_ids = [(1,0)]", 160, 180),
    _range("aten::mm, seq = 12, op_id = 4, sizes = [[2, 3], [3, 4]], input_op_ids = [(0,-1)]", 270, 290),
    _range("aten::relu, seq = 13, op_id = 5, sizes = [[2, 4]], input_op_ids = [(4,0)]", 300, 320),
    *_node("ReluBackward0", 13, 510, 540), *_node("MmBackward0", 12, 550, 600),
    *_node("ReluBackward0", 11, 610, 640), *_node("MmBackward0", 10, 650, 700),
    *_node("EmbeddingBackward0", 5, 709, 721),
]
# (start, address, bytes, is_alloc, api_start, pid, tid, correlation id)
EVENTS = [
    (0, 1, 1000, True, None, 1, 0, 0),  # baseline: allocated before the capture, alive
    (0, 2, 500, True, None, 1, 0, 0), (0, 2, 500, False, None, 1, 0, 0),  # and freed before it
    (137, 10, 300, True, 136, 1, MAIN, 1),  # layer_0 mm (inside aten::empty): saved
    (171, 11, 100, True, 170, 1, MAIN, 2), (201, 11, 100, False, 200, 1, MAIN, 3),  # temporary
    (176, 12, 50, True, 175, 1, MAIN, 4),  # layer_0 relu: saved
    (281, 20, 300, True, 280, 1, MAIN, 5), (311, 21, 50, True, 310, 1, MAIN, 6),  # layer_1: saved
    (521, 21, 50, False, 520, 1, AUTOGRAD, 7), (561, 20, 300, False, 560, 1, AUTOGRAD, 8),
    (571, 30, GRAD, True, 570, 1, AUTOGRAD, 9),  # block 1's gradients
    (621, 12, 50, False, 620, 1, AUTOGRAD, 10), (661, 10, 300, False, 660, 1, AUTOGRAD, 11),
    (671, 31, GRAD, True, 670, 1, AUTOGRAD, 12),  # block 0's gradients
    (681, 32, 40, True, 680, 1, AUTOGRAD, 13), (691, 32, 40, False, 690, 1, AUTOGRAD, 14),
]


def _structure(trace):
    """The run's structure the summary finds in ``trace``."""
    return label_ops(trace).structure


@pytest.fixture()
def synthetic(tmp_path):
    return build_export(tmp_path / "ledger.sqlite", kernels=[(112, 118, 111, 1, MAIN, 99)], ranges=RANGES,
                        memory_events=EVENTS)


def test_synthetic_ledger_has_exact_bytes(synthetic):
    trace = load_trace(synthetic)
    ledger = memory_ledger(trace.ranges, trace.memory_events, CONFIG, _structure(trace))
    assert ledger["baseline_bytes"] == 1000
    assert [b["forward_allocated_bytes"] for b in ledger["blocks"]] == [450, 350]
    assert [b["saved_for_backward_bytes"] for b in ledger["blocks"]] == [350, 350]
    assert [b["backward_change_bytes"] for b in ledger["blocks"]] == [GRAD - 350, GRAD - 350]
    assert ledger["gradient_bytes_per_block"] == ledger["expected_gradient_bytes_per_block"] == GRAD
    assert ledger["top_ops"] == [{"op": "aten::mm [2, 3] [3, 4]", "bytes": 300.0, "share": 600 / 700},
                                 {"op": "aten::relu [2, 4]", "bytes": 50.0, "share": 100 / 700}]
    timeline = ledger["timeline"]
    assert max(timeline["allocated_bytes"]) == 1000 + 700  # everything saved is alive at forward's end
    assert {(s["block"], s["phase"]) for s in timeline["blocks"]} == {(0, "forward"), (1, "forward"),
                                                                      (0, "backward"), (1, "backward")}


def test_gradient_change_is_read_not_assumed(tmp_path):
    """A backward that allocates twice the gradients shows twice the gradient bytes."""
    doubled = [(s, a, b * 2 if a in (30, 31) else b, *rest) for s, a, b, *rest in EVENTS]
    path = build_export(tmp_path / "doubled.sqlite", kernels=[(112, 118, 111, 1, MAIN, 99)], ranges=RANGES,
                        memory_events=doubled)
    trace = load_trace(path)
    record = ledger_record(trace, CONFIG, _structure(trace))
    assert record["gradient_bytes_per_block"] == 2 * GRAD
    assert "2.00× of" in ledger_sentence(record, {"config": CONFIG})


def test_trace_without_memory_events_says_how_to_record(tmp_path):
    path = build_export(tmp_path / "plain.sqlite", kernels=[(112, 118, 111, 1, MAIN, 99)], ranges=RANGES)
    trace = load_trace(path)
    record = ledger_record(trace, CONFIG, _structure(trace))
    assert not record["available"] and record["saved_for_backward_bytes_per_block"] is None
    assert record["memory_events"] == 0 and "answer" not in record
    sentence = ledger_sentence(record, {"config": CONFIG})
    assert sentence.startswith("This trace has no tensor-level memory events") and "--nsys-flags 2026 --memory-events" in sentence


def test_op_label_keeps_the_shapes():
    name = "aten::einsum, seq = 5, op_id = 9, sizes = [[], [4, 128, 2560], [2560, 2560], []], input_op_ids = [(0,-1)]"
    assert op_label(name) == "aten::einsum [4, 128, 2560] [2560, 2560]"


SAVED_SQL = """
WITH names AS (SELECT n.start, n.end, coalesce(n.text, s.value) AS name FROM NVTX_EVENTS n
               LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType = 59),
     bwd AS (SELECT min(start) AS t FROM names WHERE name = 'backward'),
     calls AS (SELECT m.address, m.bytes, m.memoryOperationType AS op, r.start AS t
               FROM CUDA_GPU_MEMORY_USAGE_EVENTS m JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
               ON r.correlationId = m.correlationId WHERE m.start > 0)
SELECT l.name, sum(a.bytes) FROM names l JOIN calls a ON a.op = 0 AND a.t >= l.start AND a.t < l.end
WHERE l.name LIKE 'layer_%' AND NOT EXISTS (
    SELECT 1 FROM calls f WHERE f.op = 1 AND f.address = a.address AND f.t > a.t AND f.t < (SELECT t FROM bwd))
GROUP BY l.name
"""


@pytest.fixture(scope="module")
def xl_export(tmp_path_factory):
    if not XL_TRACE.is_file():
        pytest.skip("the 2026 xl trace is not in this checkout")
    path = tmp_path_factory.mktemp("xl") / "xl_ctx128_train_fp32_layers_2026.sqlite"
    with lzma.open(XL_TRACE) as source, open(path, "wb") as target:
        shutil.copyfileobj(source, target)
    return path


def test_real_xl_trace_matches_independent_sql(xl_export):
    trace = load_trace(xl_export)
    config = read_run_record(trace.marks, trace.path).config
    record = ledger_record(trace, config, _structure(trace))
    with sqlite3.connect(xl_export) as conn:
        by_sql = dict(conn.execute(SAVED_SQL).fetchall())
    assert len(by_sql) == config["num_layers"] == record["blocks_found"]
    assert {f"layer_{b['block']}": b["saved_for_backward_bytes"] for b in record["blocks"]} == by_sql
    # the gradients implied by the events against the parameters from the config mark's dims
    assert record["expected_gradient_bytes_per_block"] == block_params(config["d_model"], config["d_ff"]) * 4
    assert record["gradient_bytes_per_block"] == record["expected_gradient_bytes_per_block"]
    assert sum(op["share"] for op in record["top_ops"]) < 1
    json.dumps(record)


def test_the_analysis_reads_the_op_ranges_the_ledger_needs(xl_export):
    """analyze_trace reads only the NVTX ranges it names, except in a trace with memory events,
    where the ledger needs every op range and autograd node range."""
    ledger = analyze_trace(xl_export)["memory_ledger"]
    assert ledger["gradient_bytes_per_block"] == ledger["expected_gradient_bytes_per_block"]
    assert "(no op range)" not in {op["op"] for op in ledger["top_ops"]}
