"""Another commit's bcc beside this checkout's: a ``git worktree`` of it, run with this
checkout's environment (``prompt_sizes.py --baseline``, ``behaviour_unchanged.py``)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["PYTHON", "ROOT", "bcc_of", "checkout"]

ROOT = Path(__file__).resolve().parents[1]
PYTHON = Path(sys.executable)


@contextlib.contextmanager
def checkout(rev: str, tmp: Path) -> Iterator[Path]:
    """A detached worktree of ``rev`` under ``tmp``, removed after."""
    path = tmp / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(path), rev],
                   check=True)  # fmt: skip
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                       check=False)  # fmt: skip


def bcc_of(code: Path, args: list[str], timeout: float = 1800) -> subprocess.CompletedProcess:
    """``bcc ARGS`` as the package in ``code`` (a checkout) runs it."""
    return subprocess.run(
        [str(PYTHON), "-m", "notebook_bcc", *args],
        env={**os.environ, "PYTHONPATH": str(code)},
        cwd=code,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
