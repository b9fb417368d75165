"""Matmul FLOPs and the head size read from PyTorch's op ranges with shapes
(``--pytorch=autograd-shapes-nvtx``), for traces that carry no model config."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis import analyze_trace
from analysis.core.flops import GemmShape, attention_head_size, gemm_ops_outermost, gemm_shape
from tests.conftest import REPO


@pytest.mark.parametrize("name, shape", [
    ("aten::mm, seq = 1, op_id = 2, sizes = [[1024, 512], [512, 1536]], input_op_ids = [(1,0), (2,0)]",
     GemmShape(1, 1024, 512, 1536)),
    ("aten::addmm, seq = 6, op_id = 678, sizes = [[1536], [1024, 512], [512, 1536], [], []], input_op_ids = [(245,0)]",
     GemmShape(1, 1024, 512, 1536)),
    ("aten::bmm, seq = 16, op_id = 9, sizes = [[48, 128, 64], [48, 64, 128]], input_op_ids = [(1,0), (2,0)]",
     GemmShape(48, 128, 64, 128)),
    ("aten::baddbmm, op_id = 9, sizes = [[48, 128, 128], [48, 128, 64], [48, 64, 128], [], []]", GemmShape(48, 128, 64, 128)),
    ("aten::mm, seq = 1, sizes = [[1024, 512], [256, 1536]]", None),  # inner sizes differ
    ("aten::mm, seq = 1", None),
    ("aten::add, seq = 1, sizes = [[4], [4]]", None),
])
def test_the_product_of_a_matmul_op(name, shape):
    assert gemm_shape(name) == shape


def test_a_matmul_op_nested_in_another_counts_once_and_the_head_size_is_the_square_products():
    scores = "aten::bmm, sizes = [[48, 128, 64], [48, 64, 128]]"
    ops = pd.DataFrame({"start_ns": [0, 1, 10, 20], "end_ns": [9, 8, 15, 25], "pid": 1, "tid": 1,
                        "name": ["aten::mm, sizes = [[2, 3], [3, 4]]", "aten::mm, sizes = [[2, 3], [3, 4]]", scores,
                                 "aten::bmm, sizes = [[1, 512, 768], [1, 768, 768]]"]})
    assert gemm_ops_outermost(ops)["start_ns"].tolist() == [0, 10, 20]
    assert attention_head_size(ops) == 64


def test_gpt2_forward_flops_from_its_op_shapes_equal_the_analytic_count():
    """GPT-2 with 4 layers, d_model 512, vocabulary 50257, 1024 tokens a pass (batch 4 × 256):
    2·tokens·(12·layers·d² + d·vocab) matmul FLOPs forward (attention runs in a fused kernel)."""
    summary = analyze_trace(REPO / "tests" / "data" / "foreign" / "gpt2_flags2026.sqlite.xz")
    tokens, layers, d, vocab = 4 * 256, 4, 512, 50257
    expected = 2 * tokens * (12 * layers * d * d + d * vocab)
    assert summary["phases"]["forward"]["model_flops_per_pass"] == pytest.approx(expected, rel=1e-6)
    assert summary["phases"]["backward"]["model_flops_per_pass"] == pytest.approx(2 * expected, rel=1e-6)
    assert summary["efficiency"]["flops_source"] == "matmul op shapes"
