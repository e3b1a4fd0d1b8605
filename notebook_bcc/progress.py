"""What the CLI shows while a run works: a live plan view on a terminal, plain lines elsewhere,
one JSON object per line with ``--json``, or nothing but the final line with ``--quiet``."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

__all__ = ["ProgressView"]

_MARK = {
    "pending": "·",
    "running": "▶",
    "complete": "✓",
    "partial": "~",
    "failed": "✗",
    "skipped": "-",
}


class ProgressView:
    """A callable hook for ``Runner(on_event=...)``; use as a context manager."""

    def __init__(self, *, quiet: bool = False, as_json: bool = False, stream: TextIO | None = None):
        self.quiet, self.as_json = quiet, as_json
        self.stream = stream or sys.stderr
        self.console = Console(file=self.stream, highlight=False)
        self.live: Live | None = None
        if not quiet and not as_json and self.console.is_terminal:
            self.live = Live(console=self.console, refresh_per_second=4, transient=False)

    def __enter__(self) -> ProgressView:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()

    def __call__(self, record: dict[str, Any]) -> None:
        if self.as_json:
            sys.stdout.write(json.dumps(record, default=str) + "\n")
            sys.stdout.flush()
        elif self.live is not None:
            self.live.update(self.render(record))
        elif not self.quiet:
            self.stream.write(self.line(record) + "\n")
            self.stream.flush()

    @staticmethod
    def line(record: dict[str, Any]) -> str:
        forced = " (forced)" if record.get("forced") else ""
        cell = f" cell:{record['last_cell']}" if record.get("event") == "COMPLETE_ACTION" else ""
        return (
            f"[{record['seq']:>4}] {record['event']:<15} {record['from']} -> {record['to']}{forced}"
            f"  {record.get('path') or ''}{cell}  {record['duration_ms'] / 1000:.1f}s"
        )

    @staticmethod
    def render(record: dict[str, Any]) -> Table:
        table = Table(show_header=False, box=None, padding=(0, 1))
        table.add_column(no_wrap=True)
        table.add_column()
        for stage in record.get("plan", []):
            mark = _MARK.get(stage["status"], "?")
            table.add_row(f"{mark} {stage['title']}", "")
            for step_id, status in stage["steps"]:
                table.add_row(f"    {_MARK.get(status, '?')} {step_id}", "")
        table.add_row("", "")
        table.add_row(
            "now",
            f"{record.get('path') or '-'} (iteration {record.get('iteration', 0)}) — {record['event']}",
        )
        table.add_row(
            "so far",
            f"{record.get('elapsed_s', 0):.0f} s, {record.get('cells', 0)} cells, "
            f"last cell: {record.get('last_cell') or '-'}, "
            f"{record.get('llm_calls', 0)} model calls, ${record.get('cost_usd', 0):.4f}",
        )
        return table
