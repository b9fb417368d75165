"""The analyzer installs without the runner's packages: it never imports them, and the runner
started without them says in one line how to install them."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER_ONLY = ("torch", "nvtx", "rich")
TRACE = REPO / "nsys_runs" / "traces" / "small_ctx128_forward_fp32.sqlite.xz"


def _python_without(modules: tuple[str, ...], code: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter where importing any of ``modules`` fails as if absent."""
    hide = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in modules)
    return subprocess.run([sys.executable, "-c", hide + code, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


def test_runner_without_torch_says_how_to_install_it():
    result = _python_without(("torch",), "import runpy; runpy.run_module('cs336_profile.run', run_name='__main__')")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["the runner needs torch: pip install 'cs336-profile[runner]' (torch and nvtx)"]


def test_analyzer_runs_without_the_runner_packages(tmp_path):
    result = _python_without(RUNNER_ONLY, "import sys; from analysis.app.cli import main; sys.exit(main(sys.argv[1:]))",
                             str(TRACE), "--format", "json", "--out", str(tmp_path), "--no-cache")
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "small_ctx128_forward_fp32.json").read_text())
    assert summary["phases"]["forward"]["kernels_per_pass"] > 0


def test_results_cache_needs_no_sqlite_utils(tmp_path):
    run = "import sys; from analysis.app.cli import main; sys.exit(main(sys.argv[1:]))"
    for _ in range(2):  # analyzed and stored, then served from the results database
        result = _python_without(("sqlite_utils",), run, str(TRACE), "--format", "json", "--out", str(tmp_path))
        assert result.returncode == 0, result.stderr
    with sqlite3.connect(tmp_path / "results.db") as db:
        assert db.execute("SELECT trace FROM traces").fetchall() == [(TRACE.name,)]


def test_one_trace_as_json_imports_only_what_it_needs(tmp_path):
    """The pages' packages, the results cache's, the progress bar and the process pool are not
    imported for one trace written as JSON without the cache (each costs start-up time)."""
    unneeded = ("jinja2", "matplotlib", "sqlite_utils", "tqdm", "distributed", "concurrent.futures.process")
    run = ("import sys; from analysis.app.cli import main; code = main(sys.argv[1:]); "
           f"print(sorted(name for name in {unneeded!r} if name in sys.modules)); sys.exit(code)")
    result = _python_without((), run, str(TRACE), "--format", "json", "--out", str(tmp_path), "--no-cache")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
