"""Range names as :mod:`analysis.core.structure` reads them: the normal form, stem and family of a
name (the lines that say what it found are :mod:`analysis.report.structure_lines`)."""
from __future__ import annotations

import functools
import re

# A trailing index on a name's normal form: ``step_3``, ``iter3``, ``layer_12``, ``fwd_small_128_3``
# (a stem that ends in a letter of any script, or in a number with ``_`` before the index).
INDEXED = re.compile(r"^(?P<stem>.*?(?:[^\W\d_]|\d(?=_)))_?(?P<index>\d+)$")


# Where a camel-case name starts a word: ``OptimizerStep``, ``trainStep``.
CAMEL_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Distinct names whose forms are remembered: the structure asks for the same range names by each
# of its rules (a trace of thousands of steps has thousands of distinct step names).
REMEMBERED_NAMES = 1 << 16


@functools.lru_cache(maxsize=REMEMBERED_NAMES)
def normal_name(name: str) -> str:
    """A name in lower case with every run of other characters than letters and digits (of any
    script: ``前向传播`` stays), and every camel-case word break, as ``_`` (``Step 3`` -> ``step_3``,
    ``OptimizerStep`` -> ``optimizer_step``)."""
    return re.sub(r"[\W_]+", "_", CAMEL_WORD.sub("_", str(name)).lower()).strip("_")


def role_name(name: str) -> str:
    """The normal form of a name's last ``/``-separated part, which says its role in a namespaced
    name (``train/forward`` -> ``forward``, ``train/step_3`` -> ``step_3``)."""
    return normal_name(str(name).rsplit("/", 1)[-1])


@functools.lru_cache(maxsize=REMEMBERED_NAMES)
def name_stem(normal: str) -> str:
    """A normal name less its trailing index (``step_3`` -> ``step``)."""
    match = INDEXED.match(normal)
    return match["stem"] if match else normal


def name_families(names: list[str]) -> list[str]:
    """One representative per family of names (``step 0``, ``step 1`` -> ``step 0``; names that
    differ only in a bracketed last part, one per instance, are one family too)."""
    seen, kept = set(), []
    for name in names:
        key = name_stem(normal_name(INSTANCE_PART.sub("", name)))
        if key not in seen:
            seen.add(key)
            kept.append(name)
    return kept


def shown_families(names) -> str:
    """``names`` as a rule's text lists them: each family once (:func:`name_families`, in name
    order), as its :func:`family_label` in backticks (``step_0``, ``step_1`` -> ```step_<i>```)."""
    return ", ".join(f"`{family_label(name)}`" for name in name_families(sorted(set(names))))


# A bracketed last part that names one instance: ``all_reduce grad [layers.0.attn.q_proj.weight]``.
INSTANCE_PART = re.compile(r"\[[^\[\]]*\]$")


def family_label(name: str) -> str:
    """``step 3`` -> ``step <i>``, ``all_reduce grad [layers.0.ffn.w1]`` -> ``all_reduce grad [<…>]``;
    an unindexed name as it is."""
    return INSTANCE_PART.sub("[<…>]", name) if INSTANCE_PART.search(name) else re.sub(r"\d+$", "<i>", name)
