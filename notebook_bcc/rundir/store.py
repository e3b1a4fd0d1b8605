"""The run directory (README, "A run directory"): creation, run lock, durable writes, events, logs, checkpoint.

Every write goes through ``write_durable``: temp file, fsync, rename, fsync of the directory.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lxml import etree

from notebook_bcc import failpoints
from notebook_bcc.errors import DiskFull, InputError, RunLocked, StorageError, UsageError

__all__ = [
    "RunStore",
    "Recovery",
    "read_log",
    "read_run_json",
    "write_durable",
    "slugify",
    "utc_now",
]

#: a transition log written before its checkpoint, renamed ``NNNN_EVENT.xml`` after it
PENDING = ".pending.xml"

LOCK_NAME = "run.lock"


def slugify(text: str, limit: int = 40) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].strip("-") or "run"


def utc_now() -> str:
    """The timestamp written into events and logs: ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


#: an OSError that says the run directory may not be written (not that the disk is full)
_READ_ONLY = (errno.EACCES, errno.EPERM, errno.EROFS)


def _storage_error(exc: OSError, path: Path) -> StorageError:
    if exc.errno == errno.ENOSPC:
        return DiskFull(f"disk full while writing {path}")
    if exc.errno in _READ_ONLY:
        return StorageError(
            f"cannot write {path}: {exc.strerror or exc}",
            remedy=f"make {path.parent} writable, or copy the run directory to a writable place",
        )
    return StorageError(f"cannot write {path}: {exc.strerror or exc}")


def read_run_json(root: Path, relpath: str) -> Any:
    """A JSON file of the run directory ``root``; a missing or damaged one (InputError, exit
    3) or an unreadable one (StorageError, exit 8) says so with a remedy."""
    path = root / relpath
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"{path} is missing: the run directory is damaged", remedy=_DAMAGED.format(root=root)
        ) from None
    except OSError as exc:
        raise StorageError(
            f"cannot read {path}: {exc.strerror or exc}",
            remedy=f"make {root} readable by this user",
        ) from None
    except ValueError as exc:  # not UTF-8, or not JSON
        cause = " ".join(str(exc).split())[:120]
        raise InputError(
            f"{path} is damaged (not JSON: {cause})", remedy=_DAMAGED.format(root=root)
        ) from None


_DAMAGED = (
    "restore it from a backup, or redo the run without a model: `bcc replay {root} --out NEW_DIR`"
)


def write_durable(path: Path, data: bytes | str) -> None:
    """Write atomically and durably: temp file, fsync, rename, fsync the directory."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(raw)
            failpoints.hit("write", path)
            fh.flush()
            os.fsync(fh.fileno())
        _replace_durably(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _storage_error(exc, path) from exc


class RunStore:
    """One run directory. Create with ``RunStore.create``; reopen with ``RunStore.open``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock_fd: int | None = None

    # -- creation -------------------------------------------------------------------------
    @staticmethod
    def choose_dir(out: Path | None, runs_dir: Path, slug: str) -> Path:
        if out is not None:
            if (out / LOCK_NAME).exists():  # a live run there says who holds it (exit 8)
                probe = RunStore(out)
                probe.lock()
                probe.unlock()
            if out.exists() and (not out.is_dir() or any(out.iterdir())):
                raise UsageError(
                    f"--out {out} exists and is not an empty directory",
                    remedy="choose a new --out path or empty that directory",
                )
            return out
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = runs_dir / f"{stamp}-{slug}"
        n = 2
        while path.exists():
            path = runs_dir / f"{stamp}-{slug}-{n}"
            n += 1
        return path

    @classmethod
    def create(cls, root: Path, problem: Path, data: Sequence[Path]) -> RunStore:
        try:
            root.mkdir(parents=True, exist_ok=True)
            for sub in ("assets", "logs", "outputs"):
                (root / sub).mkdir(exist_ok=True)
        except OSError as exc:
            raise _storage_error(exc, root) from exc
        store = cls(root)
        store.lock()
        try:
            failpoints.hit("create", root / "problem.md")
            shutil.copyfile(problem, root / "problem.md")
            for src in data:
                dst = root / "assets" / src.name
                failpoints.hit("create", dst)
                shutil.copyfile(src, dst)
                dst.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            (root / "events.jsonl").touch()
        except OSError as exc:
            raise _storage_error(exc, root) from exc
        return store

    @classmethod
    def open(cls, root: Path) -> RunStore:
        if (root / "config.json").is_file() and not (root / "state.json").exists():
            raise InputError(
                f"{root}/state.json, the run's checkpoint, is missing: the run directory is damaged",
                remedy=_DAMAGED.format(root=root),
            )
        if not (root / "state.json").is_file():
            raise InputError(
                f"{root} is not a bcc run directory (no state.json)",
                remedy="pass a directory created by `bcc run`",
            )
        return cls(root)

    # -- lock -----------------------------------------------------------------------------
    def lock(self) -> None:
        path = self.root / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a read-only run directory: bcc cannot carry it on
            raise _storage_error(exc, path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunLocked(f"run {self.root} is locked by pid {holder}") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
            self._lock_fd = None

    # -- writes ---------------------------------------------------------------------------
    def write(self, relpath: str, data: bytes | str) -> None:
        write_durable(self.root / relpath, data)

    def write_json(self, relpath: str, data: Any) -> None:
        self.write(relpath, json.dumps(data, indent=2, default=str) + "\n")

    def write_checkpoint(self, data: dict[str, Any]) -> None:
        """``state.json``: one top-level key a line, each value compact (json's C encoder; the
        indenting one took 1.2 ms of the 1.5 ms a checkpoint costs, after every transition)."""
        lines = ",\n".join(
            f"{json.dumps(k)}: {json.dumps(v, default=str, ensure_ascii=False)}"
            for k, v in data.items()
        )
        self.write("state.json", "{\n" + lines + "\n}\n")

    def commit(
        self,
        seq: int,
        event: str,
        xml: bytes,
        records: Sequence[dict[str, Any]],
        checkpoint: dict[str, Any],
    ) -> None:
        """Make one transition durable: its log under a pending name, its events.jsonl lines,
        ``state.json`` (the commit point), then the log's rename to ``NNNN_EVENT.xml``.

        A crash before ``state.json`` leaves a pending log and event lines past the
        checkpoint, which ``recover`` drops; a crash after it leaves a pending log at the
        checkpoint's seq, which ``recover`` publishes. So no seq is ever used twice.
        """
        self.commit_all([(seq, event, xml)], records, checkpoint)

    def commit_all(
        self,
        logs: Sequence[tuple[int, str, bytes]],
        records: Sequence[dict[str, Any]],
        checkpoint: dict[str, Any],
    ) -> None:
        """``commit`` of several transitions under one checkpoint (a fork and its branches):
        all of them are durable, or (a crash before ``state.json``) none is."""
        pending = []
        for seq, event, xml in logs:
            pending.append(self.root / "logs" / f"{seq:04d}_{event}{PENDING}")
            write_durable(pending[-1], xml)
        self.append_events(records)
        self.write_checkpoint(checkpoint)
        for path in pending:
            _rename_durable(path, path.with_name(path.name.replace(PENDING, ".xml")))

    def append_event(self, record: dict[str, Any]) -> None:
        """Append one line to events.jsonl and fsync; stamped with ``at`` (UTC) unless given."""
        self.append_events([record])

    def append_events(self, records: Sequence[dict[str, Any]]) -> None:
        """Append lines to events.jsonl in one write, then fsync."""
        now = utc_now()
        data = "".join(json.dumps({"at": now, **r}, default=str) + "\n" for r in records)
        path = self.root / "events.jsonl"
        try:
            with open(path, "ab") as fh:
                failpoints.hit("write", path)
                fh.write(data.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise _storage_error(exc, path) from exc

    def recover(self, seq: int) -> Recovery:
        """Bring the history back to the checkpoint at ``seq`` (after a crash, or before an
        abort is committed): a pending log at or before ``seq`` is published, a log past it
        becomes ``NNNN_EVENT.abandoned.xml``, and the transition and guard lines past it
        (and a torn line) leave events.jsonl."""
        logs = self.root / "logs"
        for path in sorted(logs.glob(f"[0-9][0-9][0-9][0-9]_*{PENDING}")):
            if _seq_of(path) <= seq:
                _rename_durable(path, path.with_name(path.name.replace(PENDING, ".xml")))
        abandoned = []
        for path in sorted(logs.glob(f"[0-9][0-9][0-9][0-9]_*{PENDING}")) + self.log_files():
            if _seq_of(path) > seq:
                stem = path.name.split(".")[0]
                target, n = logs / f"{stem}.abandoned.xml", 2
                while target.exists():
                    target, n = logs / f"{stem}.abandoned-{n}.xml", n + 1
                _rename_durable(path, target)
                abandoned.append(target.name)
        for leftover in [*self.root.glob(".*.tmp"), *logs.glob(".*.tmp")]:
            leftover.unlink(missing_ok=True)
        path = self.root / "events.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        kept = [line for line in lines if _committed_line(line, seq)]
        if len(kept) != len(lines):
            write_durable(path, "".join(f"{line}\n" for line in kept))
        return Recovery(tuple(abandoned), len(lines) - len(kept))

    # -- reads ----------------------------------------------------------------------------
    def summarised(self) -> bool:
        """Both summaries are written: the last thing a completed run does."""
        return all((self.root / name).exists() for name in ("summary.json", "summary.md"))

    def read_json(self, relpath: str) -> Any:
        """A JSON file of the run (``read_run_json``: a damaged one says so)."""
        return read_run_json(self.root, relpath)

    def events(self) -> Iterator[dict[str, Any]]:
        """Events in order; a torn line (a crash mid-append, before ``recover``) is skipped."""
        path = self.root / "events.jsonl"
        if not path.exists():
            return
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue

    def log_files(self) -> list[Path]:
        """The committed transitions' logs, ``logs/NNNN_EVENT.xml``, in order: not the
        ``.attempts.xml`` of a transition whose agent never answered validly, nor the
        ``.abandoned.xml`` of one a crash or an abort undid, nor a ``.pending.xml``."""
        logs = (self.root / "logs").glob("[0-9][0-9][0-9][0-9]_*.xml")
        return sorted(p for p in logs if p.name.count(".") == 1)

    def logs(self) -> Iterator[etree._Element]:
        """The committed transitions' logs, parsed, in order."""
        for path in self.log_files():
            yield read_log(path)


def read_log(path: Path) -> etree._Element:
    """A transition log's root element, parsed without entities, network or size limits."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
    return etree.parse(str(path), parser).getroot()


@dataclass(frozen=True)
class Recovery:
    """What ``RunStore.recover`` undid: the logs it renamed and the event lines it dropped."""

    abandoned_logs: tuple[str, ...]
    dropped_events: int


def _seq_of(path: Path) -> int:
    return int(path.name[:4])


def _committed_line(line: str, seq: int) -> bool:
    """An events.jsonl line that stays: whole, and not a record of a transition past ``seq``
    (a transition, its guards and its plan revision carry the transition's ``seq``)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return False
    if not isinstance(record, dict):
        return False
    return not isinstance(record.get("seq"), int) or record["seq"] <= seq


def _rename_durable(source: Path, target: Path) -> None:
    """Rename within one directory, then fsync the directory."""
    try:
        _replace_durably(source, target)
    except OSError as exc:
        raise _storage_error(exc, target) from exc


def _replace_durably(source: Path, target: Path) -> None:
    """``os.replace``, then fsync of the directory, so the new name survives a power cut."""
    os.replace(source, target)
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
