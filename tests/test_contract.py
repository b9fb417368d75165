"""The contract module: importable without torch, and the one trace stem everything uses."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cs336_profile import contract
from cs336_profile.config import RunConfig

REPO_MODULES = ("cs336_profile.contract", "cs336_profile.config", "analysis", "analysis.app.analyze",
                "analysis.app.cli", "analysis.report", "nsys_runs.sweep")


def test_the_contract_config_and_analyzer_import_without_torch():
    # A None entry in sys.modules makes `import torch` raise ImportError, as on a machine without it.
    code = "import sys; sys.modules['torch'] = None\n" + "".join(f"import {m}\n" for m in REPO_MODULES)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", ["runs/small_ctx128_train_fp32.sqlite.xz", "small_ctx128_train_fp32.sqlite",
                                  "small_ctx128_train_fp32.nsys-rep", "small_ctx128_train_fp32.qdrep"])
def test_trace_stem_drops_every_trace_suffix_and_the_folder(name):
    assert contract.trace_stem(name) == "small_ctx128_train_fp32"


def test_trace_stem_keeps_dots_inside_the_name():
    assert contract.trace_stem("run.v2.sqlite") == "run.v2"
    assert contract.trace_stem("notes.txt") == "notes"


def test_every_mode_runs_phases_in_the_step_order():
    for phases in contract.PHASES_BY_MODE.values():
        assert list(phases) == [p for p in contract.PHASES if p in phases]
    assert set(contract.PHASES_BY_MODE) == set(contract.MODES)
    assert RunConfig(mode="forward-backward").phases == ("forward", "loss", "backward")


def test_step_range_names_use_the_default_prefixes():
    assert contract.step_range_name(3, measured=True) == "step_3"
    assert contract.step_range_name(0, measured=False) == "warmup_0"

