"""The run directory (docs/run-directory.md, "A run directory"): creation, run lock, durable writes, events, logs, checkpoint.

Every write goes through ``write_durable``: temp file, fsync, rename, fsync of the directory,
never through a link (:mod:`notebook_bcc.own_files`), and with the secrets of bcc's environment
redacted (:mod:`notebook_bcc.redaction`, the last line: what reaches a write is redacted already).
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
from notebook_bcc.errors import InputError, RunLocked, UsageError
from notebook_bcc.own_files import (
    create_new,
    open_dir,
    open_own,
    read_own,
    replace_in,
)
from notebook_bcc.redaction import StreamRedactor, redact_bytes, secret_values
from notebook_bcc.rundir.files import (
    DAMAGED,
    read_run_json,
    rename_durable,
    storage_error,
    write_durable,
)

__all__ = [
    "SPILL_DIR",
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

#: where the full text of a cell's cut outputs goes (``cell-SEQ-N.txt``): bcc's, not ``outputs/``
SPILL_DIR = "logs/cells"


def slugify(text: str, limit: int = 40) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].strip("-") or "run"


def utc_now() -> str:
    """The timestamp written into events and logs: ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


#: an OSError that says the run directory may not be written (not that the disk is full)
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
            for sub in ("assets", "logs", SPILL_DIR, "outputs"):
                (root / sub).mkdir(exist_ok=True)
        except OSError as exc:
            raise storage_error(exc, root) from exc
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
            os.close(open_own(root / "events.jsonl", os.O_WRONLY | os.O_APPEND, root)[0])
        except OSError as exc:
            raise storage_error(exc, root) from exc
        return store

    @classmethod
    def open(cls, root: Path) -> RunStore:
        if (root / "config.json").is_file() and not (root / "state.json").exists():
            raise InputError(
                f"{root}/state.json, the run's checkpoint, is missing: the run directory is damaged",
                remedy=DAMAGED.format(root=root),
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
        try:  # a link there is replaced (the pid is written into the lock file)
            fd, _ = open_own(path, os.O_RDWR, self.root)
        except OSError as exc:  # a read-only run directory: bcc cannot carry it on
            raise storage_error(exc, path) from None
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
        write_durable(self.root / relpath, data, self.root)

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
            write_durable(pending[-1], xml, self.root)
        self.append_events(records)
        self.write_checkpoint(checkpoint)
        for path in pending:
            rename_durable(path, path.with_name(path.name.replace(PENDING, ".xml")), self.root)

    def append_event(self, record: dict[str, Any]) -> None:
        """Append one line to events.jsonl and fsync; stamped with ``at`` (UTC) unless given."""
        self.append_events([record])

    def append_events(self, records: Sequence[dict[str, Any]]) -> None:
        """Append lines to events.jsonl in one write, then fsync. A link there (the run's code
        put it) is replaced by a new file that says so first; it is never written through."""
        now = utc_now()
        data = "".join(json.dumps({"at": now, **r}, default=str) + "\n" for r in records)
        path = self.root / "events.jsonl"
        try:
            fd, replaced = open_own(path, os.O_WRONLY | os.O_APPEND, self.root)
            with os.fdopen(fd, "ab") as fh:
                if replaced:
                    note = {"at": now, "type": "link_replaced", "path": "events.jsonl"}
                    fh.write(json.dumps(note).encode() + b"\n")
                failpoints.hit("write", path)
                fh.write(redact_bytes(data.encode("utf-8")))
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise storage_error(exc, path) from exc

    def recover(self, seq: int) -> Recovery:
        """Bring the history back to the checkpoint at ``seq`` (after a crash, or before an
        abort is committed): a pending log at or before ``seq`` is published, a log past it
        becomes ``NNNN_EVENT.abandoned.xml``, and the transition and guard lines past it
        (and a torn line) leave events.jsonl."""
        logs = self.root / "logs"
        for path in sorted(logs.glob(f"[0-9][0-9][0-9][0-9]_*{PENDING}")):
            if _seq_of(path) <= seq:
                rename_durable(path, path.with_name(path.name.replace(PENDING, ".xml")), self.root)
        abandoned = []
        for path in sorted(logs.glob(f"[0-9][0-9][0-9][0-9]_*{PENDING}")) + self.log_files():
            if _seq_of(path) > seq:
                stem = path.name.split(".")[0]
                target, n = logs / f"{stem}.abandoned.xml", 2
                while target.exists():
                    target, n = logs / f"{stem}.abandoned-{n}.xml", n + 1
                rename_durable(path, target, self.root)
                abandoned.append(target.name)
        for leftover in [*self.root.glob(".*.tmp"), *logs.glob(".*.tmp")]:
            leftover.unlink(missing_ok=True)
        path = self.root / "events.jsonl"
        lines = self.read_text("events.jsonl", "").splitlines()
        kept = [line for line in lines if _committed_line(line, seq)]
        if len(kept) != len(lines):
            write_durable(path, "".join(f"{line}\n" for line in kept), self.root)
        return Recovery(tuple(abandoned), len(lines) - len(kept))

    def redact_file(self, relpath: str) -> None:
        """Rewrite a file another process wrote (``kernel.log``: a cell's writes to its file
        descriptors land there) with the secrets redacted, read and written in pieces."""
        path = self.root / relpath
        if not secret_values():
            return
        try:
            dir_fd = open_dir(path.parent, self.root)
        except OSError as exc:
            raise storage_error(exc, path) from exc
        temp, stream = f".{path.name}.tmp", StreamRedactor()
        try:
            source = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
            with os.fdopen(source, "rb") as src, os.fdopen(create_new(dir_fd, temp), "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(
                        stream.feed(chunk.decode("utf-8", "surrogateescape")).encode(
                            "utf-8", "surrogateescape"
                        )
                    )
                dst.write(stream.flush().encode("utf-8", "surrogateescape"))
                dst.flush()
                os.fsync(dst.fileno())
            replace_in(dir_fd, temp, path.name)
        except FileNotFoundError:
            pass
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            if exc.errno != errno.ELOOP:  # a link there is not bcc's to rewrite
                raise storage_error(exc, path) from exc
        finally:
            os.close(dir_fd)

    # -- reads ----------------------------------------------------------------------------
    def summarised(self) -> bool:
        """Both summaries are written: the last thing a completed run does."""
        return all((self.root / name).exists() for name in ("summary.json", "summary.md"))

    def read_json(self, relpath: str) -> Any:
        """A JSON file of the run (``read_run_json``: never through a link; a damaged one
        says so)."""
        return read_run_json(self.root, relpath)

    def read_text(self, relpath: str, missing: str | None = None) -> str:
        """A file of the run, never read through a link (a link reads as ``missing``, and
        with ``missing`` None, as a file that is not there: FileNotFoundError)."""
        path = self.root / relpath
        try:
            return read_own(path, self.root).decode("utf-8")
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                raise
            if missing is None:
                raise FileNotFoundError(errno.ENOENT, "not there, or a link", str(path)) from exc
            return missing

    def events(self) -> Iterator[dict[str, Any]]:
        """Events in order; a torn line (a crash mid-append, before ``recover``) is skipped."""
        for line in self.read_text("events.jsonl", "").splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue

    def log_files(self) -> list[Path]:
        """The committed transitions' logs, ``logs/NNNN_EVENT.xml``, in order: not the
        ``.attempts.xml`` of a transition whose agent never answered validly, nor the
        ``.abandoned.xml`` of one a crash or an abort undid, nor a ``.pending.xml``."""
        logs = (self.root / "logs").glob("[0-9][0-9][0-9][0-9]_*.xml")
        return sorted(p for p in logs if p.name.count(".") == 1 and not p.is_symlink())

    def logs(self) -> Iterator[etree._Element]:
        """The committed transitions' logs, parsed, in order."""
        for path in self.log_files():
            yield read_log(path)


def read_log(path: Path) -> etree._Element:
    """A transition log's root element, parsed without entities, network or size limits (and
    never read through a link)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
    return etree.fromstring(read_own(path), parser)


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
