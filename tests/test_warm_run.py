"""A run served from the results cache loads only what serving needs: the cache, the questions'
records and sentences, the JSON writer; never pandas, jinja2 or the loader and labelling."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import DATA, REPO

TRACE = DATA / "small_ctx128_train_fp32.sqlite.xz"
# Top-level packages a cache hit must not import, and the analysis modules of loading and labelling.
HEAVY_PACKAGES = ("pandas", "numpy", "jinja2", "tqdm", "dask", "distributed")
ANALYZING_MODULES = ("analysis.load.loader", "analysis.load.table_cache", "analysis.core.structure",
                     "analysis.core.phases", "analysis.trace.summary", "analysis.report.render")
# The command line in this interpreter, then the modules it loaded, as JSON on the last line of stdout.
RUN = """
import json, sys
from analysis.app.cli import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def _run(out, cache_folder, *options: str) -> dict:
    env = {**os.environ, "CS336_PROFILE_CACHE": str(cache_folder)}
    result = subprocess.run([sys.executable, "-c", RUN, str(TRACE), "--format", "json", "--out", str(out), *options],
                            capture_output=True, text=True, cwd=REPO, env=env, check=True)
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize("options", [(), ("--step-prefix", "step_", "--phase-names", "forward,backward")],
                         ids=["roles found", "roles named"])
def test_a_second_run_is_served_without_pandas_jinja2_or_the_loader(tmp_path, options):
    out, written = tmp_path / "out", tmp_path / "out" / "small_ctx128_train_fp32.json"
    first = _run(out, tmp_path / "cache", *options)
    assert first["status"] == 0 and "analysis.load.loader" in first["modules"]  # analyzed: the check can fail
    first_json = written.read_text()
    written.unlink()
    second = _run(out, tmp_path / "cache", *options)
    assert second["status"] == 0
    loaded = [m for m in second["modules"] if m.split(".")[0] in HEAVY_PACKAGES or m in ANALYZING_MODULES]
    assert loaded == []
    assert written.read_text() == first_json
