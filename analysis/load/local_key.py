"""The install's secret key, and the seals made with it: what proves a cache entry was written here.

A hash kept beside a cache entry proves nothing: whoever edits the entry can compute the hash
again. A seal is an HMAC-SHA256 under a random key made once per install and kept, readable by
its owner only, in the cache folder (``$CS336_PROFILE_CACHE``, see
:func:`analysis.load.input_cache.default_folder`). The results database and the decompression
cache seal what they store and serve an entry only when its seal holds, so an entry planted or
edited by hand, or cut short, is made again instead of being trusted.
"""
from __future__ import annotations

import functools
import hmac
import os
import secrets
from pathlib import Path

KEY_FILE = "install.key"
KEY_BYTES = 32


class KeyUnavailable(OSError):
    """The install's key can be neither read nor made; the message names the file."""


def seal(*parts: str) -> str:
    """Hex HMAC-SHA256 of ``parts`` (joined by NUL) under the install's key."""
    return hmac.new(install_key(), "\0".join(parts).encode(), "sha256").hexdigest()


def seal_holds(found: str | None, *parts: str) -> bool:
    """Whether ``found`` is the seal of ``parts`` (compared in constant time)."""
    return found is not None and hmac.compare_digest(found, seal(*parts))


def install_key() -> bytes:
    """The key of the cache folder in use now (made there on first use)."""
    from analysis.load.input_cache import default_folder

    return _key_in(default_folder().resolve())


@functools.cache
def _key_in(folder: Path) -> bytes:
    """The key kept in ``folder``, made (owner-only, never over an existing file) when absent."""
    path = folder / KEY_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not path.exists() and not path.is_symlink():
            _make_key(path)
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(descriptor, "rb") as handle:
            key = handle.read(KEY_BYTES + 1)
    except OSError as err:
        raise KeyUnavailable(f"cannot read or make the cache key {path} ({err.strerror or err}); "
                             "set CS336_PROFILE_CACHE to a folder of your own that can be written") from err
    if len(key) != KEY_BYTES:
        raise KeyUnavailable(f"the cache key {path} is damaged ({len(key)} bytes, not {KEY_BYTES}); remove it "
                             "and every cache entry is made again")
    return key


def _make_key(path: Path) -> None:
    """Write a new key beside ``path`` and link it there; a key another process made first wins."""
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    descriptor = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(secrets.token_bytes(KEY_BYTES))
        os.link(part, path)
    except FileExistsError:
        pass
    finally:
        part.unlink(missing_ok=True)
