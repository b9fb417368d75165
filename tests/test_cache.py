"""The results database: content keys, round trips, flat SQL tables, replacement."""
from __future__ import annotations

import ast
import copy
import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import sqlite_utils

from analysis.app import cache as cache_module
from analysis.app.cache import ResultsCache
from analysis.load import input_cache
from tests.bad_inputs import runner_trace


@functools.cache
def _analyzed() -> dict:
    """The stored summary of a small runner-shaped trace: a summary of the schema to start from."""
    from analysis.app.analyze import stored_summary

    with tempfile.TemporaryDirectory() as folder:
        return stored_summary(runner_trace(Path(folder) / "base.sqlite"))


def _summary(trace: str, forward_ms: float, phases=("forward", "backward")) -> dict:
    """A summary of the schema whose forward and backward figures (what the flat tables hold) are given."""
    figures = {
        "forward": {
            "kernels_per_pass": 1198.0,
            "kernel_ms_per_pass": forward_ms,
            "gpu_span_ms_per_pass": 37.9,
            "cpu_span_ms_per_pass": 38.3,
            "by_category_ms_per_pass": {"gemm": 20.5, "elementwise": 9.25},
        },
        "backward": {
            "kernels_per_pass": 1463.0,
            "kernel_ms_per_pass": 36.0,
            "gpu_span_ms_per_pass": 38.1,
            "cpu_span_ms_per_pass": 38.5,
            "by_category_ms_per_pass": {"gemm": 25.0},
        },
    }
    base = copy.deepcopy(_analyzed())
    return {**base, "trace": trace, "gpu": "NVIDIA H200", "nsys_version": "2025.3.1", "measured_passes": 3,
            "phases": {phase: {**base["phases"][phase], **figures[phase]} for phase in phases}}


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "run.sqlite"
    path.write_bytes(b"SQLite format 3\0" + bytes(range(256)) * 64)
    return path


@pytest.fixture
def results(tmp_path):
    with ResultsCache(tmp_path / "report" / "results.db") as cache:
        yield cache


def test_key_of_a_file_larger_than_one_read_chunk(results, tmp_path):
    path = tmp_path / "big.sqlite"
    content = os.urandom(3 * (1 << 20) + 12345)
    path.write_bytes(content)
    assert results.key_for(path) == f"{hashlib.sha256(content).hexdigest()}@{cache_module.analyzer_key()}"


def test_key_is_content_hash_plus_analyzer_key(results, trace_file, tmp_path):
    digest = hashlib.sha256(trace_file.read_bytes()).hexdigest()
    assert results.key_for(trace_file) == f"{digest}@{cache_module.analyzer_key()}"
    renamed = tmp_path / "renamed.sqlite"
    renamed.write_bytes(trace_file.read_bytes())
    assert results.key_for(renamed) == results.key_for(trace_file)
    changed = tmp_path / "changed.sqlite"
    changed.write_bytes(trace_file.read_bytes() + b"\0")
    assert results.key_for(changed) != results.key_for(trace_file)


def test_a_copy_hits_under_its_own_name(results, trace_file, tmp_path):
    results.put(trace_file, _summary("run.sqlite", 30.5))
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(trace_file.read_bytes())
    assert results.get(copy) == _summary("copy.sqlite", 30.5)


def test_round_trip_and_persistence(results, trace_file):
    assert results.get(trace_file) is None
    summary = _summary("run.sqlite", 30.5)
    results.put(trace_file, summary)
    assert results.get(trace_file) == summary
    with ResultsCache(results.db_path) as reopened:
        assert reopened.get(trace_file) == summary


def _fresh_analyzer_key(monkeypatch, **patches) -> str:
    """The analyzer key computed again with the module attributes ``patches`` replaced."""
    for name, value in patches.items():
        monkeypatch.setattr(cache_module, name, value)
    cache_module.code_hash.cache_clear()
    cache_module.analyzer_key.cache_clear()
    return cache_module.analyzer_key()


@pytest.fixture
def analyzer_key_restored():
    yield
    cache_module.code_hash.cache_clear()
    cache_module.analyzer_key.cache_clear()


def test_a_summary_of_another_schema_is_never_served(results, trace_file, monkeypatch, analyzer_key_restored):
    results.put(trace_file, _summary("run.sqlite", 30.5))
    schema = cache_module.stored_summary_schema()
    other = {**schema, "properties": {**schema["properties"], "new_section": {"type": "object"}}}
    assert _fresh_analyzer_key(monkeypatch, stored_summary_schema=lambda: other) != results.key_for(trace_file).split("@")[0]
    assert results.get(trace_file) is None


def test_a_summary_of_other_analysis_code_is_never_served(results, trace_file, tmp_path, monkeypatch,
                                                          analyzer_key_restored):
    results.put(trace_file, _summary("run.sqlite", 30.5))
    before = cache_module.analyzer_key()
    copy = tmp_path / "analysis"
    shutil.copytree(cache_module.ANALYSIS_PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    same_code = _fresh_analyzer_key(monkeypatch, ANALYSIS_PACKAGE=copy)
    assert same_code == before
    (copy / "report" / "html.py").write_text((copy / "report" / "html.py").read_text() + "\n# drawing only\n")
    assert _fresh_analyzer_key(monkeypatch) == before  # the render package never changes a summary
    (copy / "core" / "phases.py").write_text((copy / "core" / "phases.py").read_text() + "\n# a changed analysis\n")
    assert _fresh_analyzer_key(monkeypatch) != before
    assert results.get(trace_file) is None


def _edited(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_reworded_sentence_keeps_the_key_and_changed_figures_change_it(tmp_path, monkeypatch, analyzer_key_restored):
    """The key hashes the code that makes a stored summary: a writer's wording (a question module,
    the summary's sentences) is not part of it, a per-trace question's figures are."""
    before = cache_module.analyzer_key()
    copy = tmp_path / "analysis"
    shutil.copytree(cache_module.ANALYSIS_PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert _fresh_analyzer_key(monkeypatch, ANALYSIS_PACKAGE=copy) == before
    _edited(copy / "questions" / "nsys_a.py", "nsys times the forward pass at", "nsys measures the forward pass at")
    _edited(copy / "questions" / "sentences.py", "Model FLOPs over GPU time: ", "Model FLOPs per GPU second: ")
    assert _fresh_analyzer_key(monkeypatch) == before
    _edited(copy / "trace" / "question_figures" / "nsys_a.py", '"nsys_forward_ms": nsys_ms,',
            '"nsys_forward_ms": nsys_ms * 2,')
    assert _fresh_analyzer_key(monkeypatch) != before


def test_every_per_trace_question_is_figured_by_hashed_code():
    from analysis.questions.registry import PER_TRACE

    hashed = cache_module.summary_code_files(cache_module.ANALYSIS_PACKAGE)
    for question in PER_TRACE:
        module = question.per_trace.__module__
        assert cache_module.ANALYSIS_PACKAGE.parent / (module.replace(".", "/") + ".py") in hashed, question.id


def test_the_key_hashes_the_figures_and_no_writer():
    hashed = {path.relative_to(cache_module.ANALYSIS_PACKAGE).as_posix()
              for path in cache_module.summary_code_files(cache_module.ANALYSIS_PACKAGE)}
    assert {"trace/summary.py", "trace/question_figures/nsys_a.py", "core/gpu_peaks.csv", "load/trace.py"} <= hashed
    assert not {path for path in hashed if path.startswith(("questions/", "report/", "compare/"))}
    assert "app/cli.py" not in hashed
    assert "core/text.py" not in hashed


def test_no_hashed_module_imports_the_wording_left_out_of_the_key():
    """A module left out of the key as wording must not make figures: none of the hashed code imports it."""
    wording = {"analysis." + part.removesuffix(".py").replace("/", ".") for part in cache_module.SUMMARY_CODE_WORDING}
    importers = []
    for path in cache_module.summary_code_files(cache_module.ANALYSIS_PACKAGE):
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.Import):
                names = {alias.name for alias in node.names}
            else:
                continue
            if names & wording:
                importers.append(path.name)
    assert not importers, importers


def test_flat_tables_answer_sql(results, trace_file):
    results.put(trace_file, _summary("run.sqlite", 30.5))
    key = results.key_for(trace_file)
    db = sqlite_utils.Database(results.db_path)
    (trace_row,) = db["traces"].rows
    assert {name: trace_row[name] for name in ("key", "trace", "gpu", "nsys_version", "measured_passes")} == {
        "key": key,
        "trace": "run.sqlite",
        "gpu": "NVIDIA H200",
        "nsys_version": "2025.3.1",
        "measured_passes": 3,
    }
    assert trace_row["analyzed_at"].endswith("+00:00")
    assert list(db.query("SELECT phase, kernels_per_pass, kernel_ms_per_pass FROM phases ORDER BY phase")) == [
        {"phase": "backward", "kernels_per_pass": 1463.0, "kernel_ms_per_pass": 36.0},
        {"phase": "forward", "kernels_per_pass": 1198.0, "kernel_ms_per_pass": 30.5},
    ]
    assert list(db.query("SELECT trace, phase, category, ms_per_pass FROM categories ORDER BY phase, category")) == [
        {"trace": "run.sqlite", "phase": "backward", "category": "gemm", "ms_per_pass": 25.0},
        {"trace": "run.sqlite", "phase": "forward", "category": "elementwise", "ms_per_pass": 9.25},
        {"trace": "run.sqlite", "phase": "forward", "category": "gemm", "ms_per_pass": 20.5},
    ]


def test_replacing_an_entry_replaces_its_rows(results, trace_file, tmp_path):
    other = tmp_path / "other.sqlite"
    other.write_bytes(b"another trace")
    results.put(other, _summary("other.sqlite", 12.0))
    results.put(trace_file, _summary("run.sqlite", 30.5))
    results.put(trace_file, _summary("run.sqlite", 31.0, phases=("forward",)))
    db = sqlite_utils.Database(results.db_path)
    assert db["traces"].count == 2
    assert list(db.query("SELECT trace, phase, kernel_ms_per_pass FROM phases ORDER BY trace, phase")) == [
        {"trace": "other.sqlite", "phase": "backward", "kernel_ms_per_pass": 36.0},
        {"trace": "other.sqlite", "phase": "forward", "kernel_ms_per_pass": 12.0},
        {"trace": "run.sqlite", "phase": "forward", "kernel_ms_per_pass": 31.0},
    ]
    assert list(db.query("SELECT count(*) AS n FROM categories WHERE trace = 'run.sqlite'")) == [{"n": 2}]
    assert results.get(trace_file)["phases"]["forward"]["kernel_ms_per_pass"] == 31.0


def test_real_summary_fills_the_flat_tables(results, fixture_trace):
    from analysis.app.analyze import stored_summary

    trace = fixture_trace("small_ctx128_train_fp32.sqlite")
    summary = stored_summary(trace)
    results.put(trace, summary)
    db = sqlite_utils.Database(results.db_path)
    assert list(db.query("SELECT trace, gpu, measured_passes FROM traces")) == [
        {"trace": "small_ctx128_train_fp32.sqlite", "gpu": "NVIDIA H200", "measured_passes": 3}
    ]
    # 1,463 kernels per backward pass: the reference fact of the fixture's README.
    assert list(db.query("SELECT phase, kernels_per_pass FROM phases ORDER BY phase")) == [
        {"phase": "backward", "kernels_per_pass": 1463.0},
        {"phase": "forward", "kernels_per_pass": 956.0},
        {"phase": "optimizer_step", "kernels_per_pass": 888.0},
    ]
    category_ms = {
        (row["phase"], row["category"]): row["ms_per_pass"]
        for row in db.query("SELECT phase, category, ms_per_pass FROM categories")
    }
    assert category_ms == {
        (phase, category): ms
        for phase, figures in summary["phases"].items()
        for category, ms in figures["by_category_ms_per_pass"].items()
    }
    assert results.get(trace) == summary


def test_other_range_names_key_apart(tmp_path, trace_file):
    from analysis.core.range_names import RangeNames

    with ResultsCache(tmp_path / "results.db") as defaults, \
            ResultsCache(tmp_path / "results.db", RangeNames(regions=("scores", "softmax", "final"))) as renamed, \
            ResultsCache(tmp_path / "results.db", RangeNames(step_prefix="iter_")) as other:
        keys = {defaults.key_for(trace_file), renamed.key_for(trace_file), other.key_for(trace_file)}
        assert len(keys) == 3
        defaults.put(trace_file, _summary("run.sqlite", 30.5))
        assert renamed.get(trace_file) is None
        renamed.put(trace_file, _summary("run.sqlite", 31.0))
        assert defaults.get(trace_file)["phases"]["forward"]["kernel_ms_per_pass"] == 30.5
        assert renamed.get(trace_file)["phases"]["forward"]["kernel_ms_per_pass"] == 31.0


def test_timings_json_beside_the_trace_is_part_of_the_key(results, trace_file):
    alone = results.key_for(trace_file)
    results.put(trace_file, _summary("run.sqlite", 30.5))
    timings = trace_file.with_name("run.timings.json")
    timings.write_text('{"forward": 30.0}')
    with_timings = results.key_for(trace_file)
    assert with_timings.startswith(alone) and with_timings != alone
    assert results.get(trace_file) is None
    results.put(trace_file, _summary("run.sqlite", 31.0))
    timings.write_text('{"forward": 32.0}')
    assert results.key_for(trace_file) not in (alone, with_timings)
    assert results.get(trace_file) is None
    timings.unlink()
    assert results.get(trace_file)["phases"]["forward"]["kernel_ms_per_pass"] == 30.5


@pytest.fixture
def old_enough(monkeypatch):
    """Files written by the test count as settled at once (no racily-clean window)."""
    monkeypatch.setattr(cache_module, "RACY_WINDOW_NS", 0)


@pytest.fixture
def hashings(monkeypatch):
    """The files the results cache reads to hash, in order."""
    read: list[Path] = []

    def counted(path):
        read.append(Path(path))
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()

    monkeypatch.setattr(cache_module, "file_sha256", counted)
    return read


def test_an_unchanged_file_is_hashed_once_across_runs(results, trace_file, old_enough, hashings):
    digest = hashlib.sha256(trace_file.read_bytes()).hexdigest()
    assert results.sha256_of(trace_file) == digest
    with ResultsCache(results.db_path) as reopened:
        assert reopened.sha256_of(trace_file) == digest
    assert hashings == [trace_file]


def test_a_hash_the_cache_knows_is_not_read_again_by_the_analysis(results, trace_file, old_enough, monkeypatch):
    """A later run (a new process) takes the input's hash from the cache for the table cache and
    the summary too, without reading the file."""
    digest = results.sha256_of(trace_file)
    monkeypatch.setattr(input_cache, "_SHA256_BY_FILE", {})  # nothing hashed yet in this process
    monkeypatch.setattr(input_cache, "_sha256", lambda path: pytest.fail(f"{path} read again"))
    with ResultsCache(results.db_path) as reopened:
        assert reopened.sha256_of(trace_file) == digest
    assert input_cache.file_sha256(trace_file) == digest


@pytest.mark.parametrize("mtime_moves", [True, False])
def test_a_file_rewritten_with_its_size_is_hashed_again(results, trace_file, old_enough, hashings, mtime_moves):
    before = trace_file.stat()
    results.sha256_of(trace_file)
    content = bytes(reversed(trace_file.read_bytes()))
    trace_file.write_bytes(content)
    mtime_ns = before.st_mtime_ns + (1_000_000_000 if mtime_moves else 0)  # ctime still moves
    os.utime(trace_file, ns=(before.st_atime_ns, mtime_ns))
    assert trace_file.stat().st_size == before.st_size
    assert results.sha256_of(trace_file) == hashlib.sha256(content).hexdigest()
    assert hashings == [trace_file, trace_file]


def test_a_copy_elsewhere_is_hashed_and_found_by_content(results, trace_file, tmp_path, old_enough, hashings):
    results.put(trace_file, _summary("run.sqlite", 30.5))
    copy = tmp_path / "elsewhere" / "copy.sqlite"
    copy.parent.mkdir()
    shutil.copyfile(trace_file, copy)
    assert results.get(copy) == _summary("copy.sqlite", 30.5)
    assert hashings == [trace_file, copy]


def test_a_file_hash_row_is_trusted_only_with_its_seal(results, trace_file, old_enough, hashings):
    digest = results.sha256_of(trace_file)
    results.db.execute('UPDATE "file_hashes" SET sha256 = ?', ["0" * 64])
    assert results.sha256_of(trace_file) == digest
    assert hashings == [trace_file, trace_file]


def test_a_file_just_written_is_not_remembered(results, trace_file, hashings):
    results.sha256_of(trace_file)
    results.sha256_of(trace_file)
    assert hashings == [trace_file, trace_file]
    assert results.db.execute('SELECT COUNT(*) FROM "file_hashes"').fetchone() == (0,)
