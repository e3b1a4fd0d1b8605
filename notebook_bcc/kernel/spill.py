"""A spill file: the full stream text of a cell whose outputs were cut (docs/run-directory.md, "A run
directory": ``logs/cells/cell-SEQ-N.txt``), with the secrets of bcc's environment redacted.

It is written under a temp name made anew (``O_CREAT|O_EXCL|O_NOFOLLOW``, no link below the
run directory followed) and renamed over its name at the end, so a link the run's code put
there is replaced, never written through.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

from notebook_bcc.own_files import create_new, open_dir, replace_in
from notebook_bcc.redaction import StreamRedactor

__all__ = ["SpillFile", "spill_target"]


class SpillFile:
    def __init__(self, path: Path, root: Path | None = None) -> None:
        self.path, self.root = path, root
        self._temp = f".{path.name}.tmp"
        self._redactor = StreamRedactor()
        self._file: IO[str] | None = None

    def write(self, chunks: list[str]) -> None:
        """Append text (the file is created on the first call). Raises OSError."""
        if self._file is None:
            dir_fd = open_dir(self.path.parent, self.root, create=True)
            try:
                fd = create_new(dir_fd, self._temp)
            finally:
                os.close(dir_fd)
            self._file = open(  # noqa: SIM115 - appended to until publish()
                fd, "w", encoding="utf-8", errors="backslashreplace", newline=""
            )
        self._file.writelines(self._redactor.feed(chunk) for chunk in chunks)

    @property
    def started(self) -> bool:
        return self._file is not None

    def publish(self) -> None:
        """Close the file and give it its name. Raises OSError."""
        file, self._file = self._file, None
        if file is None:
            return
        file.write(self._redactor.flush())
        file.close()
        dir_fd = open_dir(self.path.parent, self.root)
        try:
            replace_in(dir_fd, self._temp, self.path.name)
        finally:
            os.close(dir_fd)

    def discard(self) -> None:
        """Close and remove the temp file (nothing raised)."""
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()
        with contextlib.suppress(OSError):
            dir_fd = open_dir(self.path.parent, self.root)
            try:
                os.unlink(self._temp, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)


def spill_target(
    spill_dir: Path | None, spill_name: str | None, cwd: Path
) -> tuple[Path | None, str | None]:
    """The spill file for ``spill_name`` in ``spill_dir`` and how the truncation marker names
    it (relative to ``cwd`` when inside it); Nones for no spill."""
    if spill_dir is None or spill_name is None:
        return None, None
    path = spill_dir / f"cell-{spill_name}.txt"
    if path.name != f"cell-{spill_name}.txt":
        raise ValueError(f"spill_name must be a plain file name part: {spill_name!r}")
    try:
        return path, str(path.resolve().relative_to(cwd.resolve()))
    except ValueError:
        return path, str(path.resolve())
