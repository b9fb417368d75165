"""The folder of decompressed (``.sqlite.xz``) and exported (``.nsys-rep``) inputs.

A copy is made under a temporary name (``*.part``) and renamed when complete, so a killed run
or a full disk never leaves a file that looks finished; ``*.part`` files older than an hour
(left by killed runs) are removed on the way. Decompression stops at a size bound (a file that
expands past it is refused, never kept), ``nsys export`` runs under a timeout, a failed export
is removed instead of being reused, and a copy whose trace is then refused is removed by the
loader (:func:`discard`). A kept copy is served again only while the seal beside it
(``<copy>.seal``: :mod:`analysis.load.local_key`, over the input's and the copy's content hashes)
holds, so a file planted under a copy's name, or a copy cut short, is made again instead of being
analyzed as the input. With ``keep=False`` copies go to a temporary folder removed after use.
Every message names the folder.
"""
from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from analysis.load.errors import NsysReportGiven, TraceError, TruncatedTrace
from analysis.load.local_key import seal, seal_holds
from analysis.load.progress import stage

MIB = 1 << 20
STALE_PART_S = 3600.0
SEAL_SUFFIX = ".seal"


class InputCacheError(TraceError):
    """The cache folder cannot be used, or a copy grew past the bound; the message names the folder."""


@dataclass(frozen=True)
class InputCache:
    """How inputs are copied: ``keep`` them in the cache folder (``folder``, default
    :func:`default_folder`), decompress at most ``max_bytes`` (default: the larger of 256 MiB and
    100 × the compressed size), let ``nsys export`` run ``export_timeout_s`` seconds."""

    keep: bool = True
    folder: Path | None = None
    max_bytes: int | None = None
    export_timeout_s: float = 600.0

    def bound(self, compressed_bytes: int) -> int:
        """The most bytes one input may decompress to."""
        return self.max_bytes if self.max_bytes is not None else max(256 * MIB, 100 * compressed_bytes)


def default_folder() -> Path:
    """``$CS336_PROFILE_CACHE``, else ``$XDG_CACHE_HOME/cs336-profile`` (``~/.cache/cs336-profile``)."""
    base = os.environ.get("CS336_PROFILE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cs336-profile")
    return Path(base)


def files_sha256(root: Path, files: Iterable[Path]) -> str:
    """Hex SHA-256 over ``files`` in the order given: each one's path relative to ``root``, a NUL,
    then its bytes (what code hashes are made of: a renamed or moved file changes them too)."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# The sha256 of each file this process hashed or was told (:func:`known_file_sha256`), by the
# file's resolved path, device, inode, size and modification time.
_SHA256_BY_FILE: dict[tuple, str] = {}


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks; a file unchanged since (same inode, size and
    modification time) is hashed once per process, so the results cache, the table cache and the
    summary of one trace share one reading of it, or none when the results cache knew its hash."""
    key = _file_key(path, os.stat(path))
    if key not in _SHA256_BY_FILE:
        _SHA256_BY_FILE[key] = _sha256(key[0])
    return _SHA256_BY_FILE[key]


def known_file_sha256(path: Path, stat: os.stat_result, digest: str) -> None:
    """Take ``digest`` as the sha256 of ``path`` while it is as ``stat`` saw it, so that
    :func:`file_sha256` does not read it (a hash kept with the file's stat and trusted elsewhere:
    the results cache's sealed ``file_hashes``)."""
    _SHA256_BY_FILE[_file_key(path, stat)] = digest


def _file_key(path: Path, stat: os.stat_result) -> tuple:
    return Path(path).resolve(), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(MIB), b""):
            digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def cache_folder(settings: InputCache) -> Iterator[Path]:
    """The folder copies go to: the cache folder (created, stale parts removed), or with
    ``keep=False`` a temporary folder removed on exit."""
    if not settings.keep:
        with tempfile.TemporaryDirectory(prefix="cs336-profile-") as folder:
            yield Path(folder)
        return
    folder = settings.folder or default_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputCacheError(f"cannot use the cache folder {folder} ({err.strerror or err}); "
                              "set CS336_PROFILE_CACHE to a folder that can be written") from err
    remove_stale_parts(folder, "*.part*")
    yield folder


def remove_stale_parts(folder: Path, pattern: str) -> None:
    """Remove what killed runs left half written in ``folder``: the files or folders ``pattern``
    finds that are older than :data:`STALE_PART_S` (a live run's part is younger)."""
    cutoff = time.time() - STALE_PART_S
    for part in folder.glob(pattern):
        try:
            if part.stat().st_mtime >= cutoff:
                continue
            if part.is_dir():
                shutil.rmtree(part, ignore_errors=True)
            else:
                part.unlink()
        except OSError:
            pass  # another run's part, or gone already


@contextmanager
def _part_file(target: Path, suffix: str = ".part") -> Iterator[Path]:
    """A temporary name beside ``target``, renamed to it on success and removed on any error."""
    part = target.with_name(f"{target.stem}.{os.getpid()}{suffix}")
    try:
        yield part
        os.replace(part, target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def _sealed_copy(source: Path, folder: Path, settings: InputCache) -> tuple[Path, bool]:
    """(the copy's path for ``source`` in ``folder``, whether it may be served as it is). Outside
    the kept cache folder a copy is always made; in it, a copy whose seal does not hold (planted,
    cut short, of another input) is removed, with its seal, to be made again."""
    target = folder / f"{file_sha256(source)}.sqlite"
    seal_path = target.with_name(target.name + SEAL_SUFFIX)
    try:
        if settings.keep and target.is_file() and not target.is_symlink() and \
                seal_holds(seal_path.read_text(), file_sha256(source), file_sha256(target)):
            return target, True
    except (OSError, UnicodeDecodeError):
        pass  # no seal, or one that cannot be read: the copy is made again
    for stale in (target, seal_path):
        stale.unlink(missing_ok=True)
    return target, False


def _seal(source: Path, copy: Path, settings: InputCache) -> None:
    """Write the seal that lets a kept ``copy`` be served for ``source`` later."""
    if not settings.keep:
        return
    with _part_file(copy.with_name(copy.name + SEAL_SUFFIX)) as part:
        part.write_text(seal(file_sha256(source), file_sha256(copy)))


def decompress_xz(path: Path, folder: Path, settings: InputCache) -> Path:
    """The decompressed copy of an ``.xz`` input in ``folder`` (made unless a sealed one is there)."""
    target, ready = _sealed_copy(path, folder, settings)
    if ready:
        return target
    bound = settings.bound(path.stat().st_size)
    stage(f"{path.name}: decompressing")
    try:
        with _part_file(target) as part, lzma.open(path) as source, open(part, "wb") as out:
            written = 0
            while chunk := source.read(MIB):
                written += len(chunk)
                if written > bound:
                    raise InputCacheError(
                        f"decompresses to more than {bound / MIB:,.0f} MiB (the bound; raise it with "
                        "--max-decompressed-mib); nothing was kept")
                out.write(chunk)
        _seal(path, target, settings)
    except (lzma.LZMAError, EOFError) as err:
        raise TruncatedTrace(f"the xz stream is damaged or cut short ({err})") from err
    except OSError as err:
        raise InputCacheError(f"cannot decompress into {folder} ({err.strerror or err})") from err
    return target


def export_report(path: Path, nsys: str, folder: Path, settings: InputCache) -> Path:
    """The SQLite export of an ``.nsys-rep`` in ``folder``, made with ``nsys export`` unless a sealed
    one is there."""
    target, ready = _sealed_copy(path, folder, settings)
    if ready:
        return target
    stage(f"{path.name}: exporting with nsys export")
    with _part_file(target, ".part.sqlite") as part:  # nsys adds .sqlite to a name without it
        try:
            returncode, output = _run_bounded([nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
                                               "--output", str(part), str(path)], settings.export_timeout_s)
        except subprocess.TimeoutExpired as err:
            raise NsysReportGiven(f"is an nsys report and `nsys export` did not finish in "
                                  f"{settings.export_timeout_s:g} s (timeout; it was stopped with every process "
                                  "it started; raise it with --export-timeout)") from err
        except OSError as err:
            raise InputCacheError(f"cannot export into {folder} ({err.strerror or err})") from err
        if returncode != 0 or not part.exists():
            last = output.strip().splitlines()[-1:] or ["no output"]
            raise NsysReportGiven(f"is an nsys report and `nsys export` failed: {last[0]}")
    try:
        _seal(path, target, settings)
    except OSError as err:
        raise InputCacheError(f"cannot export into {folder} ({err.strerror or err})") from err
    return target


def _run_bounded(command: list[str], timeout_s: float) -> tuple[int, str]:
    """(exit status, stderr or else stdout) of ``command`` run in a process group of its own; past
    ``timeout_s`` the whole group is killed (nsys's own children too, none left running) and
    :class:`subprocess.TimeoutExpired` raised."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    return process.returncode, stderr or stdout


def discard(copy: Path, original: Path) -> None:
    """Remove the cached copy of an input that was refused, and its seal (never the input itself)."""
    if copy != original:
        copy.unlink(missing_ok=True)
        copy.with_name(copy.name + SEAL_SUFFIX).unlink(missing_ok=True)
