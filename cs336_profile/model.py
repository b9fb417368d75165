"""The CS336 basics Transformer LM, written as the course writes it.

Token embedding → pre-norm blocks (RMSNorm, causal multi-head self-attention with RoPE, RMSNorm,
SwiGLU feed-forward) → final RMSNorm → LM head. Linear layers have no bias and multiply with
einsum; softmax is written out (max, subtract, exp, sum, divide), so no kernel is named "softmax"
and only the NVTX ranges of `scaled_dot_product_attention` can isolate it in a trace.
"""
from __future__ import annotations

import math
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from cs336_profile.annotate import nvtx_range
from cs336_profile.config import ModelConfig


class Linear(nn.Module):
    """y = x Wᵀ without bias; weights N(0, 2/(d_in+d_out)) truncated at 3σ (course init)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        std = math.sqrt(2.0 / (in_features + out_features))
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        nn.init.trunc_normal_(self.weight, mean=0.0, std=std, a=-3 * std, b=3 * std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("...i,oi->...o", x, self.weight)


class Embedding(nn.Module):
    """Lookup table (vocab_size, d_model), weights N(0, 1) truncated at 3."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_embeddings, embedding_dim))
        nn.init.trunc_normal_(self.weight, mean=0.0, std=1.0, a=-3.0, b=3.0)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return self.weight[token_ids]


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · g, computed in float32 and cast back to the input dtype."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        in_dtype = x.dtype
        x = x.to(torch.float32)
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x / rms * self.weight).to(in_dtype)


class RotaryPositionalEmbedding(nn.Module):
    """RoPE: rotates each pair (x[2k], x[2k+1]) by angle position · theta^(-2k/d)."""

    def __init__(self, theta: float, d_k: int, max_seq_len: int):
        super().__init__()
        inv_freq = theta ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)  # (d_k/2,)
        angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float32), inv_freq)  # (T, d_k/2)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor, token_positions: torch.Tensor) -> torch.Tensor:
        cos, sin = self.cos[token_positions], self.sin[token_positions]  # (..., T, d_k/2)
        x_even, x_odd = x[..., 0::2], x[..., 1::2]
        rotated = torch.stack((x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1)
        return rotated.flatten(-2)  # interleave the pairs back: (..., T, d_k)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Numerically stable softmax written out: subtract the max, exp, divide by the sum."""
    shifted = x - x.max(dim=dim, keepdim=True).values
    exp = torch.exp(shifted)
    return exp / exp.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(q kᵀ / sqrt(d_k)) v with `mask` True where attending is allowed (NVTX-annotated)."""
    with nvtx_range("attention"):
        with nvtx_range("computing attention scores"):
            scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])  # (..., Tq, Tk)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
        with nvtx_range("computing softmax"):
            weights = softmax(scores, dim=-1)
        with nvtx_range("final matmul"):
            return torch.einsum("...qk,...kd->...qd", weights, v)  # (..., Tq, d_v)


def causal_mask(seq_len: int, device: torch.device | str) -> torch.Tensor:
    """(T, T) boolean mask, True on and below the diagonal."""
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


class CausalMultiHeadSelfAttention(nn.Module):
    """Multi-head causal self-attention with RoPE on queries and keys."""

    def __init__(self, config: ModelConfig, max_seq_len: int, attention: str = "naive"):
        super().__init__()
        d = config.d_model
        self.num_heads = config.num_heads
        self.attention = attention
        self.q_proj, self.k_proj, self.v_proj = Linear(d, d), Linear(d, d), Linear(d, d)
        self.output_proj = Linear(d, d)
        self.rope = RotaryPositionalEmbedding(config.rope_theta, config.d_head, max_seq_len)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.num_heads, -1).transpose(1, 2)  # (B, H, T, d_head)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, d_model = x.shape
        q, k, v = (self._split_heads(proj(x)) for proj in (self.q_proj, self.k_proj, self.v_proj))
        positions = torch.arange(seq, device=x.device)
        q, k = self.rope(q, positions), self.rope(k, positions)
        if self.attention == "sdpa":
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            out = scaled_dot_product_attention(q, k, v, causal_mask(seq, x.device))
        out = out.transpose(1, 2).reshape(batch, seq, d_model)  # (B, T, d_model)
        return self.output_proj(out)


class SwiGLU(nn.Module):
    """W2 (SiLU(W1 x) ⊙ W3 x)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1, self.w2, self.w3 = Linear(d_model, d_ff), Linear(d_ff, d_model), Linear(d_model, d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.w1(x)
        return self.w2(gate * torch.sigmoid(gate) * self.w3(x))


class TransformerBlock(nn.Module):
    """Pre-norm block: x + attn(norm(x)), then + ffn(norm(x))."""

    def __init__(self, config: ModelConfig, max_seq_len: int, attention: str):
        super().__init__()
        self.ln1 = RMSNorm(config.d_model)
        self.attn = CausalMultiHeadSelfAttention(config, max_seq_len, attention)
        self.ln2 = RMSNorm(config.d_model)
        self.ffn = SwiGLU(config.d_model, config.d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class TransformerLM(nn.Module):
    """Token ids (B, T) → logits (B, T, vocab_size).

    `layer_ranges` puts an NVTX range `layer_<i>` around each block. `checkpoint_every` K > 0 runs
    groups of K consecutive blocks under torch.utils.checkpoint: only each group's input is kept
    for backward, and the group's forward is recomputed there (one level of recomputation).
    """

    def __init__(self, config: ModelConfig, max_seq_len: int, attention: str = "naive", layer_ranges: bool = False,
                 checkpoint_every: int = 0):
        super().__init__()
        self.config = config
        self.layer_ranges = layer_ranges
        self.checkpoint_every = checkpoint_every
        self.token_embeddings = Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(
            TransformerBlock(config, max_seq_len, attention) for _ in range(config.num_layers)
        )
        self.ln_final = RMSNorm(config.d_model)
        self.lm_head = Linear(config.d_model, config.vocab_size)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        x = self.token_embeddings(token_ids)  # (B, T, d_model)
        group = self.checkpoint_every or len(self.layers)
        for first in range(0, len(self.layers), group):
            blocks = range(first, min(first + group, len(self.layers)))
            if self.checkpoint_every and torch.is_grad_enabled():
                x = checkpoint(self._run_blocks, x, blocks, use_reentrant=False)
            else:
                x = self._run_blocks(x, blocks)
        return self.lm_head(self.ln_final(x))  # (B, T, vocab_size)

    def _run_blocks(self, x: torch.Tensor, blocks: range) -> torch.Tensor:
        for index in blocks:
            with nvtx_range(f"layer_{index}") if self.layer_ranges else nullcontext():
                x = self.layers[index](x)
        return x


def parameter_count(model: nn.Module) -> int:
    """Number of parameters (works on the meta device: nothing is allocated)."""
    return sum(p.numel() for p in model.parameters())
