"""What ``bcc batch`` shows: one progress bar for the batch and one line per finished run (a
terminal), the lines alone (elsewhere), one JSON record per run (``--json``) or nothing
(``--quiet``); the final line is the command's."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["BatchProgress"]

_MARK = {"completed": "✓", "completed_with_failed_steps": "~", "not_run": "-"}


class BatchProgress:
    def __init__(self, total: int, *, quiet: bool = False, as_json: bool = False) -> None:
        self.quiet, self.as_json = quiet, as_json
        self.console = Console(file=sys.stderr, highlight=False)
        self.bar: Progress | None = None
        if not quiet and not as_json and self.console.is_terminal:
            self.bar = Progress(
                TextColumn("batch"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=self.console,
            )  # fmt: skip
            self._task = self.bar.add_task("batch", total=total)

    def __enter__(self) -> BatchProgress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, record: Any, done: int, total: int) -> None:
        if self.as_json:
            sys.stdout.write(json.dumps(record.to_json(), default=str) + "\n")
            sys.stdout.flush()
            return
        if self.quiet:
            return
        mark = _MARK.get(record.status, "✗")
        action = "" if record.action in ("run", "resume") else f" ({record.action})"
        line = (
            f"{mark} [{done}/{total}] {record.id}: {record.outcome}{action}, "
            f"{record.llm_calls} model calls, {record.wall_s:.1f} s -> {record.run_dir}"
        )
        if record.status not in ("completed", "completed_with_failed_steps") and record.message:
            line += f" ({record.message})"
        if self.bar is not None:
            self.bar.console.print(line, markup=False)
            self.bar.update(self._task, completed=done)
        else:
            self.console.print(line, markup=False, soft_wrap=True)
