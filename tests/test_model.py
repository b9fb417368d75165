"""The CS336 model, loss and optimizer: shapes, parameter counts and agreement with PyTorch."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from cs336_profile.config import SIZES, ModelConfig
from cs336_profile.model import (
    Linear,
    RotaryPositionalEmbedding,
    TransformerLM,
    causal_mask,
    parameter_count,
    scaled_dot_product_attention,
    softmax,
)
from cs336_profile.optim import AdamW, cross_entropy

PARAMETERS = {
    "tiny": 1_411_392,
    "small": 128_625_408,  # the assignment's check of the model code
    "medium": 423_183_360,
    "large": 969_411_840,
    "xl": 1_998_235_200,
    "2.7B": 3_406_809_600,  # given by the assignment
}


@pytest.mark.parametrize("size", list(SIZES))
def test_parameter_count_of_every_size_on_the_meta_device(size):
    with torch.device("meta"):
        model = TransformerLM(SIZES[size], max_seq_len=16)
    assert parameter_count(model) == PARAMETERS[size]
    assert SIZES[size].parameter_count() == PARAMETERS[size]


def test_model_config_rejects_heads_that_do_not_divide_d_model():
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(d_model=64, d_ff=128, num_layers=1, num_heads=5)


def test_linear_is_x_times_weight_transposed():
    layer = Linear(8, 3)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(layer(x), x @ layer.weight.T)
    assert layer.weight.shape == (3, 8)


def test_softmax_matches_torch_and_survives_large_logits():
    x = torch.randn(4, 7) * 50 + 1000
    torch.testing.assert_close(softmax(x, dim=-1), torch.softmax(x, dim=-1))
    assert torch.isfinite(softmax(x, dim=-1)).all()


def test_naive_attention_matches_torch_sdpa_with_a_causal_mask():
    q, k, v = (torch.randn(2, 3, 9, 16) for _ in range(3))
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v, causal_mask(9, "cpu")), expected)


def test_rope_scores_depend_only_on_relative_position():
    rope = RotaryPositionalEmbedding(theta=10_000.0, d_k=16, max_seq_len=64)
    q, k = torch.randn(16), torch.randn(16)

    def score(query_position: int, key_position: int) -> torch.Tensor:
        rotated_q = rope(q[None], torch.tensor([query_position]))[0]
        rotated_k = rope(k[None], torch.tensor([key_position]))[0]
        return rotated_q @ rotated_k

    torch.testing.assert_close(score(5, 2), score(40, 37))
    assert not torch.allclose(score(5, 2), score(5, 4))


def test_rope_leaves_position_zero_unchanged():
    rope = RotaryPositionalEmbedding(theta=10_000.0, d_k=8, max_seq_len=4)
    x = torch.randn(1, 8)
    torch.testing.assert_close(rope(x, torch.tensor([0])), x)


def test_model_gives_logits_per_position_and_naive_equals_sdpa_attention():
    config = SIZES["tiny"]
    tokens = torch.randint(config.vocab_size, (2, 12))
    torch.manual_seed(0)
    naive = TransformerLM(config, max_seq_len=12, attention="naive")
    torch.manual_seed(0)
    sdpa = TransformerLM(config, max_seq_len=12, attention="sdpa")
    logits = naive(tokens)
    assert logits.shape == (2, 12, config.vocab_size)
    torch.testing.assert_close(logits, sdpa(tokens), rtol=1e-4, atol=1e-4)


def test_model_is_causal():
    torch.manual_seed(0)
    model = TransformerLM(SIZES["tiny"], max_seq_len=10)
    tokens = torch.randint(SIZES["tiny"].vocab_size, (1, 10))
    changed = tokens.clone()
    changed[0, 7] = (changed[0, 7] + 1) % SIZES["tiny"].vocab_size
    torch.testing.assert_close(model(tokens)[0, :7], model(changed)[0, :7])


def test_cross_entropy_matches_torch():
    logits, targets = torch.randn(3, 5, 11) * 10, torch.randint(11, (3, 5))
    expected = F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1))
    torch.testing.assert_close(cross_entropy(logits, targets), expected)


def test_adamw_without_weight_decay_matches_torch():
    torch.manual_seed(0)
    ours, theirs = torch.nn.Parameter(torch.randn(20)), torch.nn.Parameter(torch.randn(20))
    theirs.data.copy_(ours.data)
    optimizers = (AdamW([ours], lr=1e-2, weight_decay=0.0), torch.optim.AdamW([theirs], lr=1e-2, weight_decay=0.0))
    for _ in range(5):
        grad = torch.randn(20)
        for parameter, optimizer in zip((ours, theirs), optimizers):
            parameter.grad = grad.clone()
            optimizer.step()
    torch.testing.assert_close(ours, theirs)


def test_adamw_weight_decay_shrinks_parameters_by_lr_times_decay():
    parameter = torch.nn.Parameter(torch.full((4,), 2.0))
    parameter.grad = torch.zeros(4)  # no gradient step: only the decay moves the parameter
    AdamW([parameter], lr=0.1, weight_decay=0.5).step()
    torch.testing.assert_close(parameter.detach(), torch.full((4,), 2.0 * (1 - 0.1 * 0.5)))
