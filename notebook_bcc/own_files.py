"""bcc's own files in a run directory, written without ever following a link (docs/run-directory.md, "A run
directory"): the run's code may have put a symbolic or hard link where bcc writes.

Below the run directory (``root``, the user's choice) every directory is opened component by
component with ``O_NOFOLLOW``; a file is written under a temp name created with
``O_CREAT|O_EXCL|O_NOFOLLOW`` and renamed over its target (a rename replaces a link, it never
writes through it); a file appended to (``events.jsonl``) or locked (``run.lock``) is opened
with ``O_NOFOLLOW`` and, when it is not a plain file of one link, replaced by a new one. Raises
``OSError`` (ELOOP/ENOTDIR for a linked directory); callers turn it into their own error.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["create_new", "open_dir", "open_own", "read_own", "replace_in", "write_replacing"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir(path: Path, root: Path | None = None, create: bool = False) -> int:
    """A descriptor of directory ``path``; no component below ``root`` may be a link (with no
    ``root``, ``path`` is the user's: opened as it is). ``create`` makes missing components."""
    parts: tuple[str, ...] = ()
    if root is not None:
        with contextlib.suppress(ValueError):
            parts = path.relative_to(root).parts
            path = root
    if create and not parts:  # a directory of the user's (outside the run)
        path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            sub = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_new(dir_fd: int, name: str, mode: int = 0o644) -> int:
    """A new, empty file ``name`` in ``dir_fd``, for writing; whatever had that name (a stale
    temp file, a link) is removed first, never followed."""
    try:
        return os.open(name, _NEW_FLAGS, mode, dir_fd=dir_fd)
    except FileExistsError:
        os.unlink(name, dir_fd=dir_fd)
        return os.open(name, _NEW_FLAGS, mode, dir_fd=dir_fd)


def replace_in(dir_fd: int, source: str, target: str) -> None:
    """Rename ``source`` over ``target`` in one directory, then fsync the directory."""
    os.replace(source, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    os.fsync(dir_fd)


def write_replacing(
    path: Path, data: bytes, root: Path | None = None, hit: Callable[[Path], None] | None = None
) -> None:
    """Write ``path`` atomically and durably: a new temp file, fsync, rename, fsync of the
    directory. ``hit(path)`` runs after the write, before the fsync (a failpoint)."""
    dir_fd = open_dir(path.parent, root)
    tmp = f".{path.name}.tmp"
    try:
        fd = create_new(dir_fd, tmp)
        try:
            _write_all(fd, data)
            if hit is not None:
                hit(path)
            os.fsync(fd)
        finally:
            os.close(fd)
        replace_in(dir_fd, tmp, path.name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    finally:
        os.close(dir_fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def open_own(path: Path, flags: int, root: Path | None = None) -> tuple[int, bool]:
    """Open bcc's own file ``path`` (created if missing) with ``flags`` (``O_WRONLY|O_APPEND``,
    ``O_RDWR``) and ``O_NOFOLLOW``; True with the descriptor when what was there (a link, a
    file with another name elsewhere) was replaced by a new, empty file."""
    dir_fd = open_dir(path.parent, root)
    try:
        try:
            fd = os.open(path.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            return os.open(
                path.name, flags | (_NEW_FLAGS & ~os.O_WRONLY), 0o644, dir_fd=dir_fd
            ), False
        except OSError:  # ELOOP: a symbolic link
            fd = -1
        if fd >= 0:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
                return fd, False
            os.close(fd)
        os.unlink(path.name, dir_fd=dir_fd)
        return os.open(path.name, flags | (_NEW_FLAGS & ~os.O_WRONLY), 0o644, dir_fd=dir_fd), True
    finally:
        os.close(dir_fd)


def read_own(path: Path, root: Path | None = None) -> bytes:
    """The content of bcc's own file ``path``, never read through a link (ELOOP if it is one)."""
    dir_fd = open_dir(path.parent, root)
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()
