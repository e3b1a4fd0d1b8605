"""A run's files, read and written: durably (temp file, fsync, rename, fsync of the
directory), never through a link (:mod:`notebook_bcc.own_files`), with the secrets of bcc's
environment redacted (:mod:`notebook_bcc.redaction`); a file that cannot be read or written
says why, with a remedy (a damaged checkpoint, a read-only or full disk, a link)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from notebook_bcc import failpoints
from notebook_bcc.errors import DiskFull, InputError, StorageError
from notebook_bcc.own_files import open_dir, read_own, replace_in, write_replacing
from notebook_bcc.redaction import redact_bytes

__all__ = ["DAMAGED", "read_run_json", "rename_durable", "storage_error", "write_durable"]


_READ_ONLY = (errno.EACCES, errno.EPERM, errno.EROFS)


def storage_error(exc: OSError, path: Path) -> StorageError:
    if exc.errno == errno.ENOSPC:
        return DiskFull(f"disk full while writing {path}")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return StorageError(
            f"cannot write {path}: a directory on its way is a link",
            remedy="the run's code replaced a directory of the run with a link: remove the link",
        )
    if exc.errno in _READ_ONLY:
        return StorageError(
            f"cannot write {path}: {exc.strerror or exc}",
            remedy=f"make {path.parent} writable, or copy the run directory to a writable place",
        )
    return StorageError(f"cannot write {path}: {exc.strerror or exc}")


def read_run_json(root: Path, relpath: str) -> Any:
    """A JSON file of the run directory ``root``, never read through a link; a missing or
    damaged one (InputError, exit 3) or an unreadable one (StorageError, exit 8) says so
    with a remedy."""
    path = root / relpath
    try:
        return json.loads(read_own(path, root).decode("utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"{path} is missing: the run directory is damaged", remedy=DAMAGED.format(root=root)
        ) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise InputError(
                f"{path} is a link, which bcc never reads through: the run directory is damaged",
                remedy=DAMAGED.format(root=root),
            ) from None
        raise StorageError(
            f"cannot read {path}: {exc.strerror or exc}",
            remedy=f"make {root} readable by this user",
        ) from None
    except ValueError as exc:  # not UTF-8, or not JSON
        cause = " ".join(str(exc).split())[:120]
        raise InputError(
            f"{path} is damaged (not JSON: {cause})", remedy=DAMAGED.format(root=root)
        ) from None


DAMAGED = (
    "restore it from a backup, or redo the run without a model: `bcc replay {root} --out NEW_DIR`"
)


def write_durable(path: Path, data: bytes | str, root: Path | None = None) -> None:
    """Write atomically and durably: temp file, fsync, rename, fsync the directory. No link is
    followed: not at ``path``, nor at a directory below ``root``; secrets are redacted."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        write_replacing(path, redact_bytes(raw), root, hit=lambda p: failpoints.hit("write", p))
    except OSError as exc:
        raise storage_error(exc, path) from exc


def rename_durable(source: Path, target: Path, root: Path | None = None) -> None:
    """Rename within one directory, then fsync the directory."""
    try:
        dir_fd = open_dir(target.parent, root)
        try:
            replace_in(dir_fd, source.name, target.name)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise storage_error(exc, target) from exc
