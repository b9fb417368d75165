"""The figures of nsys_profile (d) for one trace: the share of kernel time in matrix
multiplications, forward only against forward and backward and a complete training step, and
every category's share in both. Shares are fractions of summed kernel time (memcpy/memset
excluded: copies, not computation); the training step is every kernel of the measured steps."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypedDict

from analysis.core.classify import GEMM
from analysis.trace.summary_schema import WRITTEN

if TYPE_CHECKING:
    import pandas as pd

    from analysis.trace.nsys_inputs import NsysInputs


class CategoryShares(TypedDict):
    category: str
    forward_share: float
    train_step_share: float | None
    change: float | None


class Record(TypedDict):
    """The per-trace record of (d), in the summary's ``questions["d"]``."""

    gemm_share_forward: float | None
    gemm_share_forward_backward: float | None
    gemm_share_train_step: float | None
    category_shares: list[CategoryShares]
    answer: Annotated[str, WRITTEN]


def figures(inputs: NsysInputs, phases: dict[str, dict]) -> dict:
    """(d)'s record for one trace (less its sentence); ``phases`` is not read.

    ``category_shares`` rows: ``category``, ``forward_share``, ``train_step_share`` and ``change``
    (train-step share minus forward share); the last two null when there is no training step.
    """
    forward = _shares(inputs.kernel_groups(("forward",)))
    if forward.empty:
        return {"gemm_share_forward": None, "gemm_share_forward_backward": None, "gemm_share_train_step": None,
                "category_shares": []}
    has_backward = inputs.passes("backward") > 0
    has_train_step = has_backward and inputs.passes("optimizer_step") > 0
    forward_backward = _shares(inputs.kernel_groups(("forward", "backward"))) if has_backward else None
    train = _shares(inputs.kernel_groups()) if has_train_step else None

    table = forward.rename("forward_share").to_frame()
    if has_train_step:
        table = table.join(train.rename("train_step_share"), how="outer").fillna(0.0)
        table["change"] = table["train_step_share"] - table["forward_share"]
    else:
        table = table.assign(train_step_share=None, change=None)
    table = table.sort_values("forward_share", ascending=False).rename_axis("category").reset_index()
    return {
        "gemm_share_forward": float(forward.get(GEMM, 0.0)),
        "gemm_share_forward_backward": float(forward_backward.get(GEMM, 0.0)) if forward_backward is not None else None,
        "gemm_share_train_step": float(train.get(GEMM, 0.0)) if has_train_step else None,
        "category_shares": table.to_dict("records"),
    }


def _shares(kernels: pd.DataFrame) -> pd.Series:
    """Fraction of summed kernel time per category of kernel rows or kernel groups (empty when
    there are none): indexed by the categories present, in the order of the ``category``
    column's categories, as a groupby would give, summed on its codes."""
    import numpy as np
    import pandas as pd

    category = kernels["category"].array
    codes = category.codes
    known = codes >= 0
    summed = np.bincount(codes[known], weights=kernels["dur_ns"].to_numpy()[known], minlength=len(category.categories))
    present = np.bincount(codes[known], minlength=len(category.categories)) > 0
    index = pd.CategoricalIndex(category.categories[present], categories=category.categories,
                                ordered=category.ordered, name="category")
    per_category = pd.Series(summed[present].astype(np.int64), index=index, name="dur_ns")
    total = per_category.sum()
    return per_category / total if total else per_category.astype(float)
