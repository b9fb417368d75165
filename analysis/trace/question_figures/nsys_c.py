"""The figures of nsys_profile (c) for one trace: the non-matmul kernels above :data:`MIN_SHARE` of
forward kernel time, each named as an operation (its label and the NVTX region its time falls in:
an attention sub-range, the T² score work, or outside them), and the non-matmul time by category
and by region. Empty where the trace launched no forward kernels."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypedDict

from analysis.core.classify import GEMM
from analysis.core.kernel_names import kernel_label
from analysis.trace.summary_schema import STORED_ONLY, WRITTEN

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from analysis.trace.nsys_inputs import NsysInputs

MIN_SHARE = 0.01
OUTSIDE = "outside the attention sub-ranges"


class NonGemmKernel(TypedDict):
    kernel: str
    label: str
    category: str
    region: str  # the attention sub-range (by role) holding most of its time, or OUTSIDE
    region_share: float  # of its time
    calls_per_pass: float
    ms_per_pass: float
    share: float


class CategoryShare(TypedDict):
    category: str
    ms_per_pass: float
    share: float


class RegionShare(TypedDict):
    region: str
    ms_per_pass: float
    share: float


class Record(TypedDict):
    """The per-trace record of (c), in the summary's ``questions["c"]``."""

    min_share: float
    non_gemm_share: float | None
    attention_non_gemm_share: float | None  # of forward kernel time, inside the attention sub-ranges
    non_gemm_by_region: list[RegionShare]
    top_non_gemm_forward: list[NonGemmKernel]
    non_gemm_categories_forward: list[CategoryShare]
    non_gemm_ms_per_pass: Annotated[float | None, STORED_ONLY]
    answer: Annotated[str, WRITTEN]


def figures(inputs: NsysInputs, phases: dict[str, dict]) -> dict:
    """(c)'s record for one trace (less its sentence): non-GEMM kernels and categories above the
    threshold, with their shares; ``phases`` is not read."""
    import numpy as np
    import pandas as pd

    from analysis.trace.nsys_inputs import category_ms

    kernels = inputs.kernel_groups(("forward",))
    passes = inputs.passes("forward")
    if kernels.empty:
        return {"min_share": MIN_SHARE, "non_gemm_share": None, "attention_non_gemm_share": None,
                "non_gemm_by_region": [], "top_non_gemm_forward": [], "non_gemm_categories_forward": [],
                "non_gemm_ms_per_pass": None}
    totals = inputs.kernel_totals(("forward",), passes)
    non_gemm = totals[totals["category"] != GEMM]
    notable = non_gemm[non_gemm["share"] > MIN_SHARE]
    forward_ms = kernels["dur_ns"].sum() / max(passes, 1) / 1e6
    categories = category_ms(kernels, passes).drop(GEMM, errors="ignore")
    category_rows = [
        {"category": str(name), "ms_per_pass": float(ms), "share": float(ms / forward_ms)}
        for name, ms in categories.items()
    ]
    role_names, role_code, kernel, dur = _non_gemm_columns(kernels)
    role_ns = np.bincount(role_code, weights=dur, minlength=len(role_names)).astype(np.int64)
    by_region = pd.Series(role_ns, index=role_names).sort_values(ascending=False) / max(passes, 1) / 1e6
    region_rows = [{"region": str(name), "ms_per_pass": float(ms), "share": float(ms / forward_ms)}
                   for name, ms in by_region.items()]
    attention_share = float(sum(row["share"] for row in region_rows if row["region"] != OUTSIDE))
    main_regions = _main_regions(kernel, role_names, role_code, dur)
    notable = notable.assign(label=notable["kernel"].map(kernel_label),
                             region=[main_regions[name][0] for name in notable["kernel"]],
                             region_share=[main_regions[name][1] for name in notable["kernel"]])
    return {
        "min_share": MIN_SHARE,
        "non_gemm_share": float(non_gemm["share"].sum()),
        "attention_non_gemm_share": attention_share if any(r["region"] != OUTSIDE for r in region_rows) else None,
        "non_gemm_by_region": region_rows,
        "top_non_gemm_forward": notable[["kernel", "label", "category", "region", "region_share", "calls_per_pass",
                                         "ms_per_pass", "share"]].to_dict("records"),
        "non_gemm_categories_forward": category_rows,
        "non_gemm_ms_per_pass": float(non_gemm["ms_per_pass"].sum()),
    }


def _non_gemm_columns(kernels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, pd.Series, np.ndarray]:
    """The region roles present (:data:`OUTSIDE` or the attention sub-range's role, so renamed
    ranges give the same record; sorted), then of each non-GEMM row of ``kernels`` (kernel
    groups, :meth:`~analysis.trace.nsys_inputs.NsysInputs.kernel_groups`) in a known region its
    role's position among them, demangled name and summed duration. Roles go by code, not by a
    string per row."""
    import numpy as np
    import pandas as pd

    from analysis.core.structure import REGIONS

    scores, softmax, final = REGIONS
    roles = {"": OUTSIDE, scores: "attention scores", softmax: "softmax", final: "final matmul"}
    codes, regions = pd.factorize(kernels["region"])
    role_of_region = [roles.get(str(region)) for region in regions]
    known_roles = np.array(sorted({role for role in role_of_region if role is not None}), dtype=str)
    role_code_of_region = np.array([-1 if role is None else int(np.searchsorted(known_roles, role))
                                    for role in role_of_region] + [-1], dtype=np.int64)
    role_code = role_code_of_region[codes]  # code -1 (missing) takes the trailing -1
    kept = (kernels["category"] != GEMM).to_numpy() & (role_code >= 0)
    present, role_code = np.unique(role_code[kept], return_inverse=True)
    return known_roles[present], role_code, kernels["demangled_name"][kept], kernels["dur_ns"].to_numpy()[kept]


def _main_regions(kernel: pd.Series, role_names: np.ndarray, role_code: np.ndarray,
                  dur: np.ndarray) -> dict[str, tuple[str, float]]:
    """Per kernel, the region role holding most of its time (the first of ``role_names``, which
    are sorted, on a tie) and that share of its time; one value of each column per row of kernel
    calls (a kernel group)."""
    import numpy as np
    import pandas as pd

    kernel_code, kernel_names = pd.factorize(kernel)
    named = kernel_code >= 0
    table = np.zeros((len(kernel_names), len(role_names)), dtype=np.int64)
    np.add.at(table, (kernel_code[named], role_code[named]), dur[named])
    main = table.argmax(axis=1) if len(role_names) else np.zeros(len(kernel_names), dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):  # a kernel of zero time: share NaN
        share = table[np.arange(len(kernel_names)), main] / table.sum(axis=1)
    return {str(name): (str(role_names[column]), float(part))
            for name, column, part in zip(kernel_names, main, share)}
