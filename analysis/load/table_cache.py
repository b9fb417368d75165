"""A columnar copy of a loaded :class:`Trace`, so that analyzing a trace again skips reading its export.

:func:`analysis.load.load_trace` reads an export's SQLite tables into DataFrames; on millions of
kernels that read is about half of an analysis. :class:`TableCache` keeps what it returned in a
folder, one entry per trace, and serves it again while the entry's key holds:

* the sha256 of the input file (the ``.sqlite``, ``.sqlite.xz`` or ``.nsys-rep`` as given),
* the :class:`~analysis.load.nvtx.RangeFilter` it was read with,
* the hash of the loader's code (the modules of ``analysis/load/``; the analysis rules above it
  are not part of it, so a change there reuses the tables) and the versions of Python, numpy and
  pandas that made the DataFrames (and pandas' string storage).

An entry is a folder of NumPy ``.npy`` files, one or two per column (plain numeric columns as
they are, categorical and string columns as integer codes with their values listed in the
manifest, nullable columns as values and mask), and ``manifest.json``: the key, the scalar fields,
each column's dtype and the sha256 of each array. The manifest is sealed with the install's key
(:mod:`analysis.load.local_key`). An entry is written under a temporary name and renamed when
whole; it is served only when its seal holds, its key is the one asked for and every array is
there with the recorded dtype, shape and hash; otherwise it is removed and the export read again.
Fields are taken from the :class:`Trace` dataclass itself, so a new field of a supported kind
(a DataFrame or None, a number, a string, a list, tuple or dict of them) is cached without an edit here;
one of another kind leaves the trace uncached. Writing a trace's entry removes its entries of
other keys (older loader code), so the folder holds one entry per trace content.

Beside a trace's entry the cache keeps *products*: tables that code above the loader makes from the
loaded trace and that no range name changes (:class:`Product`; the labelling's operations sorted by
start, :func:`analysis.core.phases.trace_ops`). A product is an entry of its own, written and
checked as a trace's is, whose key is the trace's key plus the product's name and the hash of the
code that makes it (the caller's: this floor cannot see that code); one made by other code, or for
another input, is never served. When a product is served, the trace fields it was made from
(:attr:`Product.replaces`) are not read: the trace holds them empty, with their columns and dtypes.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import platform
import shutil
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.load.input_cache import InputCache, file_sha256, files_sha256, remove_stale_parts
from analysis.load.loader import load_trace
from analysis.load.local_key import seal, seal_holds
from analysis.load.nvtx import RangeFilter
from analysis.load.progress import stage
from analysis.load.trace import Trace

LOADER_PACKAGE = Path(__file__).resolve().parent
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SEAL = "manifest.seal"
PART_SUFFIX = ".part"
PRODUCT_SEPARATOR = "."  # a product's folder: its trace entry's name, this, the product's name, "-", its code's hash
NAME_CHARS = 16  # of the trace's sha256 and of the key's hash, in an entry's folder name
# Fields of a Trace that come from the call, not from the export: never stored, set from the call.
CALL_FIELDS = ("path",)


class Uncacheable(ValueError):
    """A value the cache has no exact encoding for (the trace is then not cached)."""


class DamagedEntry(ValueError):
    """An entry whose files are not what its manifest says."""


# A trace of fewer rows (kernels, copies and fills, NVTX ranges) is read from its export in well
# under a second: keeping its tables would cost disk (about a third of the export) and save little.
MIN_ROWS = 200_000


@dataclass(frozen=True)
class TableCache:
    """Loaded traces of at least ``min_rows`` rows kept as columns under ``folder`` (one
    subfolder per trace)."""

    folder: Path
    min_rows: int = MIN_ROWS

    def load(self, path: str | os.PathLike, ranges: RangeFilter | None = None,
             inputs: InputCache = InputCache()) -> Trace:
        """:func:`analysis.load.load_trace`, served from the cache when an entry of this input's
        content, ``ranges`` and loader holds; otherwise read from the export, and stored when it
        has ``min_rows`` rows or more."""
        path = Path(path)
        key = self._key(path, ranges)
        return self._load(path, ranges, inputs, key)[0]

    def load_with(self, path: str | os.PathLike, ranges: RangeFilter | None, inputs: InputCache,
                  product: Product) -> tuple[Trace, pd.DataFrame]:
        """The trace as :meth:`load` gives it and ``product.make(trace)``, both served from the cache
        when kept: then the trace's :attr:`Product.replaces` fields are not read (empty tables of
        their columns). A product made here is kept where the trace's tables are."""
        path = Path(path)
        key = self._key(path, ranges)
        if key is not None:
            kept_folder = self.folder / product_entry_name(key, product)
            if kept_folder.is_dir():
                stage(f"{path.name}: reading its kept tables")
            kept = read_product(kept_folder, product_key(key, product))
            trace = read_entry(self.folder / entry_name(key), key, path, leave_out=product.replaces) \
                if kept is not None else None
            if trace is not None:
                return trace, kept
        trace, stored = self._load(path, ranges, inputs, key)
        made = product.make(trace)
        if stored:  # replacing the product's entries made by other code
            self._store(self.folder / product_entry_name(key, product), product_key(key, product),
                        {product.name: made}, path.name, stale=f"{entry_name(key)}{PRODUCT_SEPARATOR}{product.name}-*")
        return trace, made

    def _key(self, path: Path, ranges: RangeFilter | None) -> dict | None:
        """The entry key of ``path``, or None where no entry may be used: not a readable file (the
        loader says why), or no folder to trust."""
        try:
            # A FIFO is never opened (it could block); a linked folder could lead writes elsewhere.
            return entry_key(path, ranges) if path.is_file() and not self.folder.is_symlink() else None
        except OSError:
            return None

    def _load(self, path: Path, ranges: RangeFilter | None, inputs: InputCache, key: dict | None
              ) -> tuple[Trace, bool]:
        """The trace, and whether its entry is there now (served, or stored here)."""
        if key is None:
            return load_trace(path, ranges, inputs), False
        entry = self.folder / entry_name(key)
        trace = read_entry(entry, key, path)
        if trace is not None:
            return trace, True
        trace = load_trace(path, ranges, inputs)
        if len(trace.kernels) + len(trace.memops) + len(trace.ranges) < self.min_rows:
            return trace, False
        return trace, self._store_trace(entry, key, trace)

    def _store_trace(self, entry: Path, key: dict, trace: Trace) -> bool:
        """Write ``trace`` as ``entry`` (:meth:`_store`), removing the entries of the same trace read
        by other loader code and the products made from them: never served again."""
        fields = {field.name: getattr(trace, field.name) for field in dataclasses.fields(trace)
                  if field.name not in CALL_FIELDS}
        return self._store(entry, key, fields, Path(trace.path).name, stale=f"{entry.name[:NAME_CHARS]}-*")

    def _store(self, entry: Path, key: dict, fields: dict, name: str, stale: str) -> bool:
        """Write ``fields`` (of the trace named ``name``) as ``entry``, removing the other entries
        whose names match ``stale``; whether it is there. A field of no known encoding, or a folder
        that cannot be written (full disk, read-only), leaves it uncached: the analysis goes on."""
        stage(f"{name}: keeping its loaded tables")
        part = entry.with_name(f"{entry.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}{PART_SUFFIX}")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            remove_stale_parts(self.folder, f"*{PART_SUFFIX}")
            write_entry(part, key, fields)
            _remove(entry)
            for other in self.folder.glob(stale):
                if other.is_dir() and not other.name.endswith(PART_SUFFIX):
                    _remove(other)
            os.rename(part, entry)
        except (Uncacheable, OSError):
            pass  # another process may have renamed its own copy first: either is whole
        finally:
            _remove(part)
        return entry.is_dir()


@dataclass(frozen=True)
class Product:
    """A table made from a loaded trace by code above the loader, whatever the range names, kept
    beside the trace's entry (:meth:`TableCache.load_with`).

    ``code`` is the hash of every module that makes it (the caller's to compute); ``replaces``
    names the trace's fields it is made from that nothing reads once it is made, left unread when
    it is served; ``make`` makes it from the trace."""

    name: str
    code: str
    replaces: tuple[str, ...]
    make: Callable[[Trace], pd.DataFrame]


def product_key(key: dict, product: Product) -> dict:
    """What a product's entry must have been made from: the trace entry's ``key``, the product's code."""
    return {**key, "product": product.name, "product_code": product.code}


def product_entry_name(key: dict, product: Product) -> str:
    """A product's folder name: its trace entry's name, then the product's name and code hash."""
    return f"{entry_name(key)}{PRODUCT_SEPARATOR}{product.name}-{product.code[:NAME_CHARS]}"


def read_product(folder: Path, key: dict) -> pd.DataFrame | None:
    """The product kept in ``folder`` when it may be served (as :func:`read_entry` checks a trace's
    entry), else None."""
    fields = _read_fields(folder, key)
    return None if fields is None else fields[key["product"]]


def entry_key(path: Path, ranges: RangeFilter | None) -> dict:
    """What an entry for ``path`` read with ``ranges`` must have been made from."""
    return {
        "format": FORMAT_VERSION,
        "trace_sha256": file_sha256(path),
        "ranges": repr(ranges),  # every field of the frozen dataclass, its patterns with their flags
        "loader": loader_code_hash(),
        # What the DataFrames are made of: pandas stores strings in Arrow arrays where pyarrow is installed.
        "libraries": {"python": platform.python_version(), "numpy": np.__version__, "pandas": pd.__version__,
                      "pandas_strings": pd.StringDtype(na_value=np.nan).storage},
    }


def entry_name(key: dict) -> str:
    """The entry's folder name: the start of the trace's sha256 and of the whole key's hash."""
    key_hash = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
    return f"{key['trace_sha256'][:NAME_CHARS]}-{key_hash[:NAME_CHARS]}"


@functools.cache
def loader_code_hash() -> str:
    """sha256 over the source of the loader's modules (``analysis/load/``)."""
    return files_sha256(LOADER_PACKAGE, sorted(LOADER_PACKAGE.rglob("*.py")))


def write_entry(folder: Path, key: dict, fields: dict) -> None:
    """Write ``fields`` (a trace's fields but :data:`CALL_FIELDS`, or a product's table by its
    name) into a new ``folder``, the sealed manifest last; :class:`Uncacheable` for a field of no
    known encoding."""
    folder.mkdir()
    arrays: dict[str, dict] = {}

    def save(array: np.ndarray) -> str:
        if array.dtype.hasobject:
            raise Uncacheable(f"an array of Python objects ({array.dtype})")
        name = f"{len(arrays)}.npy"
        array = np.ascontiguousarray(array)
        np.save(folder / name, array, allow_pickle=False)
        arrays[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "sha256": _array_sha256(array)}
        return name

    encoded = {name: {"table": _encode_frame(value, save)} if isinstance(value, pd.DataFrame)
               else {"value": _encode_plain(value)} for name, value in fields.items()}
    manifest = json.dumps({"key": key, "fields": encoded, "arrays": arrays}, sort_keys=True)
    (folder / MANIFEST).write_text(manifest)
    (folder / SEAL).write_text(seal(MANIFEST, manifest))


def read_entry(folder: Path, key: dict, path: Path, leave_out: tuple[str, ...] = ()) -> Trace | None:
    """The trace kept in ``folder`` when it may be served (sealed here, made for ``key``, every
    array whole), with ``path`` as given; else None, and a damaged entry is removed. The tables
    named in ``leave_out`` are not read: they come empty, with their columns and dtypes."""
    fields = _read_fields(folder, key, leave_out)
    return None if fields is None else Trace(**fields, path=path)


def _read_fields(folder: Path, key: dict, leave_out: tuple[str, ...] = ()) -> dict | None:
    """The fields kept in ``folder`` (those of ``leave_out`` as empty tables), or None as
    :func:`read_entry` says."""
    try:
        manifest_text = (folder / MANIFEST).read_text()
        sealed = (folder / SEAL).read_text()
    except (OSError, UnicodeDecodeError):
        return None  # no entry (or one being replaced): read the export
    loaded: dict[str, np.ndarray] = {}
    try:
        if not seal_holds(sealed, MANIFEST, manifest_text):
            raise DamagedEntry("its seal does not hold")
        manifest = json.loads(manifest_text)
        if manifest["key"] != key:
            raise DamagedEntry("made for another key")
        fields = manifest["fields"]
        unread = {name for spec in (fields[field]["table"] for field in leave_out) for name in _array_names(spec)}
        loaded = _load_arrays(folder, {name: spec for name, spec in manifest["arrays"].items() if name not in unread})
        empty = {name: np.empty([0, *manifest["arrays"][name]["shape"][1:]], manifest["arrays"][name]["dtype"])
                 for name in unread}

        def load(name: str) -> np.ndarray:
            return loaded[name] if name in loaded else empty[name]

        return {name: _decode_frame(spec["table"], load, empty=name in leave_out) if "table" in spec
                else _decode_plain(spec["value"]) for name, spec in fields.items()}
    except (DamagedEntry, OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    # Removed once the arrays read are let go (here, and with the exception): a file still mapped
    # cannot be removed on every system.
    loaded.clear()
    _remove(folder)
    return None


def _array_sha256(array: np.ndarray) -> str:
    return hashlib.sha256(memoryview(array).cast("B")).hexdigest()


def _load_arrays(folder: Path, arrays: dict) -> dict[str, np.ndarray]:
    """Every array the manifest lists, by file name, each checked against the manifest's dtype,
    shape and hash. Each file is mapped copy-on-write rather than read: its pages come from the
    system's file cache as the hash reads them, without a copy into fresh memory (whose pages the
    system would first zero), and a write to the array changes this process' copy alone. The
    files are opened here, one after another: reading a header parses it with ``ast``, which
    Python 3.11 cannot do on several threads at once. The hashes, most of an entry's reading at
    about a GB/s a core, run on threads, since hashing releases the GIL, each from when its array
    is opened: they overlap the opening of the next files."""
    loaded, hashes = {}, {}
    with ThreadPoolExecutor() as pool:
        for name, expected in arrays.items():
            array = _mapped(folder / name)
            if array.dtype.str != expected["dtype"] or list(array.shape) != expected["shape"]:
                raise DamagedEntry(f"{name} is not the array its manifest lists")
            loaded[name] = array
            hashes[name] = pool.submit(_array_sha256, np.ascontiguousarray(array))
        for name, expected in arrays.items():
            if hashes[name].result() != expected["sha256"]:
                raise DamagedEntry(f"{name} is not the array its manifest lists")
    return loaded


def _mapped(path: Path) -> np.ndarray:
    """The array of the ``.npy`` file ``path``, mapped copy-on-write; read into memory where the
    file system cannot map files."""
    try:
        return np.asarray(np.load(path, mmap_mode="c", allow_pickle=False))
    except OSError:
        return np.load(path, allow_pickle=False)


def _encode_plain(value):
    """A JSON value for ``value`` (None, bool, int, float, str, or a list, tuple or dict of them;
    a container tagged so that it comes back as what it was, a dict as its (key, value) pairs)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) in (list, tuple):
        return {type(value).__name__: [_encode_plain(item) for item in value]}
    if type(value) is dict:
        return {"dict": [[_encode_plain(key), _encode_plain(item)] for key, item in value.items()]}
    raise Uncacheable(f"a value of type {type(value).__name__}")


def _decode_plain(encoded):
    if isinstance(encoded, dict):
        (kind, items), = encoded.items()
        if kind == "dict":
            return {_decode_plain(key): _decode_plain(item) for key, item in items}
        return {"list": list, "tuple": tuple}[kind](_decode_plain(item) for item in items)
    return encoded


def _encode_frame(frame: pd.DataFrame, save) -> dict:
    if frame.attrs or not all(isinstance(name, str) for name in frame.columns) or frame.columns.has_duplicates:
        raise Uncacheable("a DataFrame with attrs, duplicate or non-string column names")
    default_index = isinstance(frame.index, pd.RangeIndex) and frame.index.equals(pd.RangeIndex(len(frame))) \
        and frame.index.name is None
    return {
        "rows": len(frame),
        "index": None if default_index else {"name": _encode_plain(frame.index.name),
                                             "values": _encode_values(frame.index.array, save)},
        "columns": [[name, _encode_values(frame[name].array, save)] for name in frame.columns],
        "columns_dtype": str(frame.columns.dtype),
    }


def _array_names(spec: dict) -> list[str]:
    """The array files of an encoded table's rows (index and columns; a categorical column's
    categories, part of its dtype, are not among them)."""
    values = [values for _, values in spec["columns"]] + ([spec["index"]["values"]] if spec["index"] else [])
    return [encoded[part] for encoded in values for part in ("values", "mask", "codes") if part in encoded]


def _decode_frame(spec: dict, load, empty: bool = False) -> pd.DataFrame:
    """The table of ``spec``; with ``empty``, none of its rows (``load`` then gives empty arrays)."""
    rows = 0 if empty else spec["rows"]
    index = pd.RangeIndex(rows) if spec["index"] is None else \
        pd.Index(_decode_values(spec["index"]["values"], load), name=_decode_plain(spec["index"]["name"]))
    columns = {name: _decode_values(values, load) for name, values in spec["columns"]}
    if any(len(values) != rows for values in columns.values()) or len(index) != rows:
        raise DamagedEntry("a column of another length than its table")
    frame = pd.DataFrame(columns, index=index, copy=False)
    frame.columns = frame.columns.astype(spec["columns_dtype"])
    return frame


def _encode_values(values, save) -> dict:
    """The encoding of one column's values (a pandas array)."""
    if type(values) is pd.arrays.NumpyExtensionArray:
        values = values.to_numpy()  # a NumPy column, as the DataFrame holds it
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return {"kind": "category", "codes": save(values.codes), "ordered": bool(dtype.ordered),
                "categories": _encode_values(dtype.categories.array, save)}
    if isinstance(dtype, pd.StringDtype) or dtype == np.dtype(object):
        return _encode_strings(values, save)
    if isinstance(values, pd.arrays.IntegerArray | pd.arrays.FloatingArray | pd.arrays.BooleanArray):
        return {"kind": "masked", "dtype": dtype.name, "values": save(values.to_numpy(dtype.numpy_dtype, na_value=0)),
                "mask": save(np.asarray(values.isna()))}
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        return {"kind": "array", "values": save(values)}
    raise Uncacheable(f"a column of dtype {dtype}")


def _encode_strings(values, save) -> dict:
    """Strings (a string dtype, or Python strings in an object column) as codes into their distinct
    values; the missing ones as code -1, all the same missing value (None or NaN) in an object column."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    uniques = list(uniques)
    if not all(type(value) is str for value in uniques):
        raise Uncacheable("a text column holding other values than strings")
    spec = {"kind": "strings", "codes": save(codes), "uniques": uniques}
    if isinstance(values.dtype, pd.StringDtype):
        return {**spec, "storage": values.dtype.storage, "na_is_nan": values.dtype.na_value is not pd.NA}
    missing = {type(value).__name__ for value in values[codes < 0]}
    if len(missing) > 1 or missing - {"NoneType", "float"}:
        raise Uncacheable("an object column with missing values of several kinds")
    return {**spec, "object_missing": "nan" if missing == {"float"} else None}


def _decode_values(spec: dict, load):
    kind = spec["kind"]
    if kind == "array":
        return load(spec["values"])
    if kind == "masked":
        array_type = pd.api.types.pandas_dtype(spec["dtype"]).construct_array_type()
        return array_type(load(spec["values"]), load(spec["mask"]))
    if kind == "category":
        categories = pd.Index(_decode_values(spec["categories"], load))
        return pd.Categorical.from_codes(load(spec["codes"]), dtype=pd.CategoricalDtype(categories, spec["ordered"]))
    if kind == "strings":
        codes = load(spec["codes"])
        if len(codes) and (codes.min() < -1 or codes.max() >= len(spec["uniques"])):
            raise DamagedEntry("a string code out of range")
        if "storage" not in spec:
            missing = np.nan if spec["object_missing"] == "nan" else None
            return np.array([*spec["uniques"], missing], dtype=object)[codes]
        dtype = pd.StringDtype(spec["storage"], na_value=np.nan if spec["na_is_nan"] else pd.NA)
        return pd.array(np.array([*spec["uniques"], dtype.na_value], dtype=object)[codes], dtype=dtype)
    raise DamagedEntry(f"an unknown column kind {kind!r}")


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
