"""Writing output files without following links or leaving half-written files.

Every writer of the output folder (JSON, CSV, Markdown, HTML, figures, the results database) goes
through :func:`atomic_file` or :func:`write_file`: the content goes to a new temporary file in
the same folder, which then replaces the target with ``os.replace``. A symbolic link sitting
where an output belongs is refused, never followed, so a link planted in ``--out`` cannot make
the analyzer overwrite a file elsewhere; a folder on the way that leaves the output folder
(``out/figures`` linked to ``/etc``) is refused too. A write that fails (full disk, killed
process) leaves the previous file as it was.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


class UnsafeOutput(OSError):
    """An output path that is a link or leads out of the output folder; the message says which."""


def checked_target(path: Path, root: Path | None = None) -> Path:
    """``path`` if writing it cannot follow a link: raise :class:`UnsafeOutput` when it is a
    symbolic link, or when its folder resolves outside ``root`` (the output folder)."""
    path = Path(path)
    if path.is_symlink():
        raise UnsafeOutput(f"{path} is a symbolic link; refusing to write through it")
    if root is not None:
        folder, top = path.parent.resolve(), Path(root).resolve()
        if folder != top and top not in folder.parents:
            raise UnsafeOutput(f"{path} leads outside {root} (through a symbolic link); refusing to write it")
    return path


@contextmanager
def atomic_file(path: Path, mode: str = "w", root: Path | None = None, encoding: str = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path`` for writing; on success it replaces ``path``.

    ``mode`` is ``"w"`` (text, ``encoding``) or ``"wb"``. On any error the temporary file is
    removed and ``path`` keeps its old content."""
    target = checked_target(path, root)
    handle = tempfile.NamedTemporaryFile(mode, dir=target.parent, prefix=f".{target.name}.", suffix=".tmp",
                                         delete=False, encoding=None if "b" in mode else encoding)
    try:
        with handle:
            yield handle
        checked_target(target, root)  # a link planted while we wrote
        os.replace(handle.name, target)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def write_file(path: Path, content: str | bytes, root: Path | None = None) -> Path:
    """Write ``content`` (text as UTF-8, or bytes) to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, "wb" if isinstance(content, bytes) else "w", root) as handle:
        handle.write(content)
    return Path(path)
