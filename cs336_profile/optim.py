"""Cross-entropy and AdamW written out, as a course implementation is.

AdamW updates one parameter at a time, so on a GPU its step is a long run of small elementwise
kernels (no fused multi-tensor kernel): that is what the profiling questions look at.
"""
from __future__ import annotations

import math

import torch


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean of -log softmax(logits)[target] over all positions, with the max subtracted first."""
    shifted = logits - logits.max(dim=-1, keepdim=True).values  # (..., vocab)
    log_normalizer = torch.log(torch.exp(shifted).sum(dim=-1))  # (...,)
    target_logits = shifted.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (...,)
    return (log_normalizer - target_logits).mean()


class AdamW(torch.optim.Optimizer):
    """AdamW (Loshchilov & Hutter) with the bias correction folded into the step size."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01):
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError("AdamW needs lr, eps, weight_decay >= 0 and betas in [0, 1)")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state.update(t=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                state["t"] += 1
                t, m, v, grad = state["t"], state["m"], state["v"], p.grad
                m.mul_(beta1).add_(grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                step_size = lr * math.sqrt(1 - beta2**t) / (1 - beta1**t)
                p.addcdiv_(m, v.sqrt().add_(eps), value=-step_size)
                p.mul_(1 - lr * weight_decay)
        return loss
