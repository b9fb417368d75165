"""The table cache (analysis.load.table_cache): a trace served from it is the trace read from its
export, field for field; an entry that is damaged, planted, made for another trace or by other
loader code is never served; ``--no-cache`` writes none; a summary made from it is the summary.
The labelling's operations kept beside the tables (analysis.app.analyze.ops_product) are the ones
made, give the same summary whatever the range names, and are made again when damaged, made by
other code or for another input."""
from __future__ import annotations

import dataclasses
import functools
import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.app import analyze as analyze_module
from analysis.app import cli
from analysis.app.analyze import analyze_trace, ops_product
from analysis.core import phases
from analysis.core.range_names import RangeNames
from analysis.load import RangeFilter, load_trace
from analysis.load import table_cache as table_cache_module
from analysis.load.input_cache import InputCache
from analysis.load.table_cache import MANIFEST, PRODUCT_SEPARATOR, SEAL, TableCache, entry_key, entry_name
from analysis.load.trace import Trace

TRAIN = "small_ctx128_train_fp32.sqlite"
FORWARD = "small_ctx256_forward_fp32.sqlite"


@pytest.fixture(autouse=True)
def own_cache_home(tmp_path, monkeypatch):
    """Each test seals with a key of its own folder."""
    monkeypatch.setenv("CS336_PROFILE_CACHE", str(tmp_path / "cache-home"))


def assert_same_trace(read: Trace, served: Trace) -> None:
    """Every field equal, DataFrames with their dtypes, column and index types, scalars with their type."""
    for field in dataclasses.fields(Trace):
        a, b = getattr(read, field.name), getattr(served, field.name)
        if isinstance(a, pd.DataFrame):
            pd.testing.assert_frame_equal(a, b, check_exact=True, check_column_type=True, check_index_type=True)
            assert list(a.dtypes) == list(b.dtypes), field.name
        else:
            assert a == b and type(a) is type(b), field.name


def served_from_cache(cache: TableCache, path: Path, monkeypatch) -> Trace:
    """The trace ``cache`` serves for ``path``; fails when it would read the export."""
    def no_read(*args):
        raise AssertionError("read the export although an entry was there")

    with monkeypatch.context() as patch:
        patch.setattr(table_cache_module, "load_trace", no_read)
        return cache.load(path, RangeFilter())


def entry_of(cache: TableCache, path: Path) -> Path:
    return cache.folder / entry_name(entry_key(path, RangeFilter()))


@pytest.mark.parametrize("name", [TRAIN, FORWARD])
def test_every_field_comes_back_as_read(fixture_trace, tmp_path, monkeypatch, name):
    path = fixture_trace(name)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    read = load_trace(path, RangeFilter())
    assert_same_trace(read, cache.load(path, RangeFilter()))  # read and stored
    assert_same_trace(read, served_from_cache(cache, path, monkeypatch))
    copy = Path(shutil.copyfile(path, tmp_path / "copy.sqlite"))
    assert served_from_cache(cache, copy, monkeypatch).path == copy  # a copy is served under its own name


def test_every_kind_of_value_round_trips(fixture_trace, tmp_path, monkeypatch):
    """Categorical, string, object, nullable and plain columns, an index of its own, None and
    empty tables, tuples and lists: what new Trace fields may hold."""
    path = fixture_trace(FORWARD)
    varied = pd.DataFrame({
        "count": pd.array([1, None, 3], dtype="Int64"),
        "share": pd.array([0.5, None, 1.0], dtype="Float64"),
        "flag": pd.array([True, None, False], dtype="boolean"),
        "label": pd.Categorical(["a", "b", "a"], categories=["b", "a"], ordered=True),
        "text": pd.array(["x", None, "z"], dtype=pd.StringDtype("python", na_value=pd.NA)),
        "objects": np.array(["p", None, "r"], dtype=object),
        "small": np.array([1, 2, 3], dtype=np.uint8),
    }, index=pd.Index([10, 20, 30], name="row"))
    trace = dataclasses.replace(load_trace(path, RangeFilter()), gemm_ops=varied, marks=varied.iloc[:0],
                                notes=["one", "two"], shared_pids=(7, 9), nsys_version=None)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    key = entry_key(path, RangeFilter())
    cache._store_trace(entry_of(cache, path), key, trace)
    assert_same_trace(trace, served_from_cache(cache, path, monkeypatch))


def test_a_value_of_no_known_encoding_leaves_the_trace_uncached(fixture_trace, tmp_path):
    path = fixture_trace(FORWARD)
    trace = dataclasses.replace(load_trace(path, RangeFilter()), notes=[np.int64(3)])
    cache = TableCache(tmp_path / "tables", min_rows=0)
    cache._store_trace(entry_of(cache, path), entry_key(path, RangeFilter()), trace)
    assert not list(cache.folder.iterdir())


def damage_an_array(entry: Path) -> None:
    array = entry / json.loads((entry / MANIFEST).read_text())["fields"]["kernels"]["table"]["columns"][0][1]["values"]
    data = bytearray(array.read_bytes())
    data[-1] ^= 1
    array.write_bytes(bytes(data))


def plant_a_manifest(entry: Path) -> None:
    """Edit the manifest (one note more) and leave its seal as it was: what a hand edit looks like."""
    manifest = json.loads((entry / MANIFEST).read_text())
    manifest["fields"]["notes"]["value"]["list"].append("planted")
    (entry / MANIFEST).write_text(json.dumps(manifest, sort_keys=True))


def remove_an_array(entry: Path) -> None:
    next(entry.glob("*.npy")).unlink()


def cut_an_array_short(entry: Path) -> None:
    array = max(entry.glob("*.npy"), key=lambda file: file.stat().st_size)
    array.write_bytes(array.read_bytes()[:-8])


def resealed_with(entry: Path, key: str, value: str) -> None:
    """The entry's manifest with one field of its key changed, sealed here as if this install wrote it."""
    manifest = json.loads((entry / MANIFEST).read_text())
    manifest["key"][key] = value
    text = json.dumps(manifest, sort_keys=True)
    (entry / MANIFEST).write_text(text)
    (entry / SEAL).write_text(table_cache_module.seal(MANIFEST, text))


def foreign_key(entry: Path) -> None:
    """The entry (tables or kept operations) of another trace moved under this one's name, sealed here."""
    resealed_with(entry, "trace_sha256", "0" * 64)


@pytest.mark.parametrize("spoil", [damage_an_array, plant_a_manifest, remove_an_array, cut_an_array_short, foreign_key])
def test_a_spoilt_entry_is_refused_and_the_export_read_again(fixture_trace, tmp_path, monkeypatch, spoil):
    path = fixture_trace(TRAIN)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    read = cache.load(path, RangeFilter())
    spoil(entry_of(cache, path))
    reads = []
    original = table_cache_module.read_entry

    def counted(*args):
        reads.append(original(*args))
        return reads[-1]

    with monkeypatch.context() as patch:
        patch.setattr(table_cache_module, "read_entry", counted)
        again = cache.load(path, RangeFilter())
    assert reads == [None]
    assert_same_trace(read, again)
    assert original(entry_of(cache, path), entry_key(path, RangeFilter()), path) is not None  # made anew


def test_a_change_of_loader_code_or_range_filter_misses_and_replaces_the_entry(fixture_trace, tmp_path, monkeypatch):
    path = fixture_trace(FORWARD)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    cache.load(path, RangeFilter())
    old = entry_of(cache, path)
    assert entry_key(path, None) != entry_key(path, RangeFilter())
    monkeypatch.setattr(table_cache_module, "loader_code_hash", lambda: "other loader")
    new = entry_of(cache, path)
    assert new != old
    cache.load(path, RangeFilter())
    assert [p.name for p in cache.folder.iterdir()] == [new.name]  # the stale entry is gone


def test_the_key_is_the_loaders_code_only(tmp_path, monkeypatch):
    """A copy of analysis/load alone hashes as the loader does (nothing above it counts: a change
    of analysis rules reuses the tables); an edit of any loader module changes it."""
    copy = Path(shutil.copytree(table_cache_module.LOADER_PACKAGE, tmp_path / "load",
                                ignore=shutil.ignore_patterns("__pycache__")))
    real = table_cache_module.loader_code_hash()
    monkeypatch.setattr(table_cache_module, "LOADER_PACKAGE", copy)
    table_cache_module.loader_code_hash.cache_clear()
    try:
        assert table_cache_module.loader_code_hash() == real
        table_cache_module.loader_code_hash.cache_clear()
        with open(copy / "tables.py", "a") as module:
            module.write("# edited\n")
        assert table_cache_module.loader_code_hash() != real
    finally:
        table_cache_module.loader_code_hash.cache_clear()


def test_the_cli_keeps_tables_beside_the_results_and_no_cache_writes_none(fixture_trace, tmp_path, monkeypatch):
    trace = str(fixture_trace(FORWARD))
    assert cli.main([trace, "--out", str(tmp_path / "bypass"), "--jobs", "1", "--format", "json", "--no-cache"]) == 0
    assert sorted(p.name for p in (tmp_path / "bypass").iterdir()) == ["small_ctx256_forward_fp32.json"]
    monkeypatch.setattr(table_cache_module, "TableCache", functools.partial(TableCache, min_rows=0))
    assert cli.main([trace, "--out", str(tmp_path / "kept"), "--jobs", "1", "--format", "json"]) == 0
    entries = sorted((tmp_path / "kept" / cli.TRACE_TABLES).iterdir())  # the tables, then the operations
    assert len(entries) == 2 and all((entry / MANIFEST).is_file() for entry in entries)
    assert entries[1].name.startswith(entries[0].name + PRODUCT_SEPARATOR)


def test_a_trace_of_few_rows_is_read_from_its_export_and_not_kept(fixture_trace, tmp_path):
    """A small trace is read in well under a second: keeping its tables would only cost disk."""
    path = fixture_trace(FORWARD)
    trace = load_trace(path, RangeFilter())
    rows = len(trace.kernels) + len(trace.memops) + len(trace.ranges)
    assert 0 < rows < TableCache(tmp_path).min_rows
    assert_same_trace(trace, TableCache(tmp_path / "small", min_rows=rows + 1).load(path, RangeFilter()))
    assert not (tmp_path / "small").exists()
    TableCache(tmp_path / "exact", min_rows=rows).load(path, RangeFilter())
    assert len(list((tmp_path / "exact").iterdir())) == 1


@pytest.mark.parametrize("name", [TRAIN, FORWARD])
def test_a_summary_from_the_cached_tables_is_the_summary_from_the_export(fixture_trace, tmp_path, name):
    path = fixture_trace(name)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    from_export = json.dumps(analyze_trace(path))
    assert json.dumps(analyze_trace(path, tables=cache)) == from_export  # read, stored
    assert list(cache.folder.iterdir())
    assert json.dumps(analyze_trace(path, tables=cache)) == from_export  # served


def test_array_headers_are_parsed_on_the_calling_thread_only(fixture_trace, tmp_path, monkeypatch):
    """np.load parses each header with ``ast``, which Python 3.11 cannot run on several threads
    at once (a SystemError, now and then): a served entry reads its files on the calling thread."""
    path = fixture_trace(TRAIN)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    cache.load(path, RangeFilter())
    readers = set()
    real_load = np.load

    def recording_load(*args, **kwargs):
        readers.add(threading.current_thread())
        return real_load(*args, **kwargs)

    monkeypatch.setattr(table_cache_module.np, "load", recording_load)
    assert_same_trace(load_trace(path, RangeFilter()), cache.load(path, RangeFilter()))
    assert readers == {threading.current_thread()}


def test_a_write_to_a_served_table_leaves_its_entry_whole(fixture_trace, tmp_path, monkeypatch):
    """The files are mapped copy-on-write: a column changed in place changes the process' copy only."""
    path = fixture_trace(TRAIN)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    read = cache.load(path, RangeFilter())
    served = served_from_cache(cache, path, monkeypatch)
    starts = served.kernels["start_ns"].to_numpy()
    starts.flags.writeable = True
    starts[:] = -1
    assert (served.kernels["start_ns"] == -1).all()
    assert_same_trace(read, served_from_cache(cache, path, monkeypatch))


def test_files_that_cannot_be_mapped_are_read(fixture_trace, tmp_path, monkeypatch):
    """A file system that cannot map files (np.load's mapping fails with OSError) still serves the entry."""
    path = fixture_trace(TRAIN)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    read = cache.load(path, RangeFilter())
    real_load = np.load

    def unmappable(file, *args, mmap_mode=None, **kwargs):
        if mmap_mode is not None:
            raise OSError(19, "No such device")
        return real_load(file, *args, **kwargs)

    monkeypatch.setattr(table_cache_module.np, "load", unmappable)
    assert_same_trace(read, served_from_cache(cache, path, monkeypatch))

def test_a_linked_tables_folder_is_neither_read_nor_written(fixture_trace, tmp_path):
    path = fixture_trace(FORWARD)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "tables").symlink_to(elsewhere)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    assert_same_trace(load_trace(path, RangeFilter()), cache.load(path, RangeFilter()))
    assert list(elsewhere.iterdir()) == []


# ----------------------------------------------------------------------------- kept products

RENAMED = [RangeNames(), RangeNames(warmup_steps=1), RangeNames(warmup_steps=3),
           RangeNames(phases=("forward", "backward", "optimizer_step"))]


def product_entries(cache: TableCache) -> list[Path]:
    return sorted(p for p in cache.folder.iterdir() if PRODUCT_SEPARATOR in p.name)


def served_ops(cache: TableCache, path: Path, monkeypatch) -> tuple[Trace, pd.DataFrame]:
    """The trace and kept operations ``cache`` serves; fails when either would be made again."""
    def no_make(*args, **kwargs):
        raise AssertionError("made again although kept")

    with monkeypatch.context() as patch:
        patch.setattr(table_cache_module, "load_trace", no_make)
        patch.setattr(phases, "trace_ops", no_make)
        return cache.load_with(path, RangeFilter(), InputCache(), ops_product())


@pytest.mark.parametrize("name", [TRAIN, FORWARD])
def test_a_summary_from_the_kept_operations_is_the_summary_from_the_export_whatever_the_names(
        fixture_trace, tmp_path, monkeypatch, name):
    path = fixture_trace(name)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    analyze_trace(path, tables=cache)  # keeps the tables and the operations
    assert len(product_entries(cache)) == 1
    for names in RENAMED:
        from_export = json.dumps(analyze_trace(path, names))
        with monkeypatch.context() as patch:
            patch.setattr(table_cache_module, "load_trace", None)  # served, or the call fails
            patch.setattr(phases, "trace_ops", None)
            assert json.dumps(analyze_trace(path, names, tables=cache)) == from_export, names


def test_kept_operations_are_the_ones_made_and_the_tables_they_replace_are_not_read(fixture_trace, tmp_path, monkeypatch):
    path = fixture_trace(TRAIN)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    read = load_trace(path, RangeFilter())
    made = phases.trace_ops(load_trace(path, RangeFilter()))
    assert (made[phases.INNERMOST_RANGE] >= 0).any()  # a trace whose launches lie in ranges
    cache.load_with(path, RangeFilter(), InputCache(), ops_product())
    loaded = []
    real_load = np.load
    monkeypatch.setattr(table_cache_module.np, "load", lambda file, **kw: loaded.append(Path(file)) or real_load(file, **kw))
    trace, ops = served_ops(cache, path, monkeypatch)
    pd.testing.assert_frame_equal(ops, made, check_exact=True)
    assert list(ops.dtypes) == list(made.dtypes)
    for field in ("kernels", "memops"):  # empty, with the columns and dtypes of the tables read
        assert len(getattr(trace, field)) == 0
        pd.testing.assert_frame_equal(getattr(trace, field), getattr(read, field).iloc[:0], check_index_type=False)
    manifest = json.loads((entry_of(cache, path) / MANIFEST).read_text())
    kernel_arrays = {entry_of(cache, path) / spec["values"]
                     for _, spec in manifest["fields"]["kernels"]["table"]["columns"] if "values" in spec}
    assert kernel_arrays and not kernel_arrays & set(loaded)
    assert_same_trace(dataclasses.replace(read, kernels=trace.kernels, memops=trace.memops), trace)


def test_operations_kept_by_other_code_are_made_again_and_replaced(fixture_trace, tmp_path, monkeypatch):
    path = fixture_trace(FORWARD)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    from_export = json.dumps(analyze_trace(path))
    analyze_trace(path, tables=cache)
    old = product_entries(cache)
    monkeypatch.setattr(analyze_module, "ops_code_hash", lambda: "f" * 64)  # the labelling's code changed
    made = []
    real = phases.trace_ops
    monkeypatch.setattr(phases, "trace_ops", lambda *a, **kw: made.append(1) or real(*a, **kw))
    assert json.dumps(analyze_trace(path, tables=cache)) == from_export
    assert made == [1]
    new = product_entries(cache)
    assert len(old) == len(new) == 1 and old != new and new[0].name.endswith("-" + "f" * 16)
    assert len(list(cache.folder.iterdir())) == 2  # the trace's tables (reused) and the new operations


def operations_of_other_code(product: Path) -> None:
    """Operations made by other code, sealed here, renamed as this code's."""
    resealed_with(product, "product_code", "e" * 64)


@pytest.mark.parametrize("spoil", [damage_an_array, cut_an_array_short, remove_an_array, foreign_key,
                                   operations_of_other_code])
def test_spoilt_kept_operations_are_refused_and_made_again(fixture_trace, tmp_path, monkeypatch, spoil):
    path = fixture_trace(TRAIN)
    cache = TableCache(tmp_path / "tables", min_rows=0)
    trace, made = cache.load_with(path, RangeFilter(), InputCache(), ops_product())
    product, = product_entries(cache)
    if spoil is damage_an_array:  # the operations' first column, not the kernels' (there are none here)
        array = product / json.loads((product / MANIFEST).read_text())["fields"]["ops"]["table"]["columns"][0][1]["values"]
        data = bytearray(array.read_bytes())
        data[-1] ^= 1
        array.write_bytes(bytes(data))
    else:
        spoil(product)
    remade = []
    real = phases.trace_ops
    monkeypatch.setattr(phases, "trace_ops", lambda *a, **kw: remade.append(1) or real(*a, **kw))
    again_trace, again = cache.load_with(path, RangeFilter(), InputCache(), ops_product())
    assert remade == [1]
    pd.testing.assert_frame_equal(again, made, check_exact=True)
    assert len(again_trace.kernels) == 0  # moved into the operations, as when first made
    served_ops(cache, path, monkeypatch)  # kept anew


def test_the_operations_key_is_the_code_of_the_labelling_floors(tmp_path, monkeypatch):
    """A copy of the analysis package and the runner's package hashes as they do; an edit of a
    core or load module, or of the runner's constants, changes it; an edit above (a section) does not."""
    package = Path(shutil.copytree(analyze_module.ANALYSIS_PACKAGE, tmp_path / "analysis",
                                   ignore=shutil.ignore_patterns("__pycache__")))
    shared = Path(shutil.copytree(analyze_module.OPS_CODE_SHARED, tmp_path / "cs336_profile",
                                  ignore=shutil.ignore_patterns("__pycache__")))
    real = analyze_module.ops_code_hash()
    monkeypatch.setattr(analyze_module, "ANALYSIS_PACKAGE", package)
    monkeypatch.setattr(analyze_module, "OPS_CODE_SHARED", shared)

    def hashed() -> str:
        analyze_module.ops_code_hash.cache_clear()
        return analyze_module.ops_code_hash()

    try:
        assert hashed() == real
        with open(package / "trace" / "phase_breakdown.py", "a") as module:
            module.write("# edited\n")
        assert hashed() == real
        for edited in (package / "core" / "attribution.py", package / "load" / "tables.py", shared / "contract.py"):
            before = hashed()
            with open(edited, "a") as module:
                module.write("# edited\n")
            assert hashed() != before, edited
    finally:
        analyze_module.ops_code_hash.cache_clear()
