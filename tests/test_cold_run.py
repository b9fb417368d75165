"""A run that analyzes a trace without the caches (``--no-cache``, the JSON output) loads neither the
table cache nor the report's modules, imports the analysis without the garbage collector and has
numpy's OpenBLAS start one thread."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import DATA, REPO
from tests.test_warm_run import RUN

TRACE = DATA / "small_ctx128_train_fp32.sqlite.xz"
# Modules a --no-cache JSON run has no use for: the table cache (and the uuid of its file names),
# the report's pages, the progress bar, Dask, and what only some notes or sentences need.
UNUSED_MODULES = ("analysis.load.table_cache", "analysis.report.render", "analysis.report.html", "jinja2", "tqdm",
                  "dask", "distributed", "uuid", "difflib", "statistics")


def test_a_run_without_the_cache_loads_no_module_it_does_not_use(tmp_path):
    result = subprocess.run([sys.executable, "-c", RUN, str(TRACE), "--format", "json", "--no-cache",
                             "--out", str(tmp_path)], capture_output=True, text=True, cwd=REPO, check=True)
    run = json.loads(result.stdout.splitlines()[-1])
    assert run["status"] == 0 and "analysis.load.loader" in run["modules"]  # analyzed: the check can fail
    assert [m for m in run["modules"] if m in UNUSED_MODULES] == []


# In a process of its own: a freeze would keep this test process's objects out of every collection.
UNCOLLECTED = """
import gc, json, sys
from analysis.app.engine import imports_uncollected
seen = {}
with imports_uncollected():
    seen["inside"] = gc.isenabled()
    import fractions  # a module this process has not imported
seen["after"], seen["frozen"] = gc.isenabled(), gc.get_freeze_count()
gc.unfreeze()
with imports_uncollected():
    import fractions  # loaded already: nothing is frozen
seen["frozen again"] = gc.get_freeze_count()
gc.disable()
with imports_uncollected():
    import decimal
seen["left off"] = not gc.isenabled() and gc.get_freeze_count() == 0
print(json.dumps(seen))
"""


def test_imports_are_made_without_the_collector_and_frozen_once_made():
    result = subprocess.run([sys.executable, "-c", UNCOLLECTED], capture_output=True, text=True, cwd=REPO, check=True)
    seen = json.loads(result.stdout)
    assert seen["inside"] is False and seen["after"] is True
    assert seen["frozen"] > 0 and seen["frozen again"] == 0
    assert seen["left off"] is True


# The command line's environment after a run, with OPENBLAS_NUM_THREADS unset or set by the user.
BLAS_THREADS = """
import os, sys
from analysis.app.cli import main
main(sys.argv[1:])
print(os.environ.get("OPENBLAS_NUM_THREADS"))
"""


def test_the_command_line_has_openblas_start_one_thread_unless_told(tmp_path):
    options = [str(TRACE), "--format", "json", "--no-cache", "--out", str(tmp_path)]
    seen = []
    for told in (None, "3"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | (
            {"OPENBLAS_NUM_THREADS": told} if told else {})
        result = subprocess.run([sys.executable, "-c", BLAS_THREADS, *options], capture_output=True, text=True,
                                cwd=REPO, env=env, check=True)
        seen.append(result.stdout.splitlines()[-1])
    assert seen == ["1", "3"]


# The command line's malloc settings after a run: the environment's, and what glibc was told.
MALLOC = """
import os, sys
from analysis.app import engine
told = []
import ctypes
real = ctypes.CDLL
class Libc:
    def __init__(self, *args):
        self.libc = real(*args)
    def __getattr__(self, name):
        if name == "mallopt":
            return lambda option, value: told.append([option, value]) or 1
        return getattr(self.libc, name)
ctypes.CDLL = Libc
from analysis.app.cli import main
main(sys.argv[1:])
print([os.environ.get(v) for _, v, _ in engine.MALLOC_SETTINGS], told)
"""


def test_the_command_line_has_malloc_return_large_blocks_unless_told(tmp_path):
    options = [str(TRACE), "--format", "json", "--no-cache", "--out", str(tmp_path)]
    seen = []
    for told in (None, "65536"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | (
            {"MALLOC_MMAP_THRESHOLD_": told} if told else {})
        result = subprocess.run([sys.executable, "-c", MALLOC, *options], capture_output=True, text=True,
                                cwd=REPO, env=env, check=True)
        seen.append(result.stdout.splitlines()[-1])
    assert seen == [f"['{4 << 20}', '1'] [[-3, {4 << 20}], [-8, 1]]", "['65536', '1'] [[-8, 1]]"]
    # A run served from the results cache analyzes nothing, and leaves malloc as it is.
    cached = [str(TRACE), "--format", "json", "--out", str(tmp_path / "cached")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    for _ in range(2):
        result = subprocess.run([sys.executable, "-c", MALLOC, *cached], capture_output=True, text=True,
                                cwd=REPO, env=env, check=True)
    assert result.stdout.splitlines()[-1] == "[None, None] []"
