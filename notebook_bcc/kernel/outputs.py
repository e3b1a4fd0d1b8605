"""What bcc keeps of a cell's outputs, and the plain-text excerpt agents get.

``StreamSink`` receives one cell's stream messages (stdout and stderr, in arrival order) while
the cell runs and keeps at most ``cap`` chars of them in the cell's outputs: the head, with
carriage returns applied as it grows, so a progress bar costs the length of its last state.
What does not fit is counted and its last ``tail_chars`` are kept for the excerpt; once the cell
has printed more than ``cap`` chars, all its stream text is also appended to a spill file. This
process holds O(cap + tail_chars) of the text however much the cell prints (plus the message in
flight: ipykernel sends what a cell printed in the last 0.2 s as one message).
"""

from __future__ import annotations

import json
import re
from collections import deque
from pathlib import Path
from typing import Any

import nbformat

from notebook_bcc.kernel.spill import SpillFile

__all__ = [
    "RICH_OUTPUT_MAX_BYTES",
    "StreamSink",
    "drop_oversized",
    "excerpt",
    "merge_streams",
]

RICH_OUTPUT_MAX_BYTES = 5 * 1024 * 1024
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_TRACEBACK_TAIL_LINES = 8


class StreamSink:
    """One cell's stream text, bounded while it arrives.

    ``spill``: the file that gets all the text once it passes ``cap`` (``label`` names it in the
    truncation marker), secrets redacted. It is written under a temp name made anew (no link
    below ``root`` is followed) and renamed at the end; removed if nothing was cut after all.
    """

    def __init__(
        self,
        cap: int,
        tail_chars: int,
        spill: Path | None = None,
        label: str | None = None,
        root: Path | None = None,
    ) -> None:
        self.cap = max(0, cap)
        self.tail_chars = max(0, tail_chars)
        self.total = 0  # stream chars received
        self.dropped = 0  # chars left out of the outputs since the last clear_output
        self.spilled: str | None = None  # ``label`` once the spill file holds all the text
        self.marker = ""  # the truncation marker appended to the outputs by finish()
        self._spill = SpillFile(spill, root) if spill is not None else None
        self._label = label or str(spill)
        self._pending: list[str] | None = [] if spill is not None else None  # text not yet spilled
        self._runs: list[Any] = []  # stream outputs appended since the last clear_output
        self._base = 0  # index of _runs[0] in the outputs
        self._kept = 0  # chars in _runs
        self._cut: Any = None  # the run where the outputs were cut
        self._tail: deque[str] = deque()  # the last tail_chars (or a little more) dropped
        self._tail_len = 0

    @property
    def tail(self) -> str:
        return "".join(self._tail)[-self.tail_chars :] if self.tail_chars else ""

    def write(self, outs: list, name: str, text: str) -> None:
        """Take one stream message; ``outs`` is the cell's output list, appended to in place."""
        self.total += len(text)
        self._to_file(text)
        self._sync(outs)
        pos = 0
        while pos < len(text) and self._cut is None:
            piece = text[pos : pos + 2 * self.cap + 1 - self._kept]
            self._append(outs, name, piece)
            pos += len(piece)
            if self._kept > 2 * self.cap:  # apply carriage returns; cut if still over the cap
                self._trim()
        self._drop(text, pos)

    def finish(self, outs: list) -> None:
        """Cut the outputs to the cap, mark the cut, close the spill file (idempotent)."""
        self._sync(outs)
        if self._cut is None and self._kept > self.cap:
            self._trim()
        self._pending = None
        if self._spill is not None and self._spill.started:
            try:
                if not self.dropped:  # the outputs hold it all after all
                    raise OSError("nothing was cut")
                self._spill.publish()
                self.spilled = self._label
            except OSError:
                self._discard_spill()
        if self.dropped and not self.marker:
            where = f"; full text in {self.spilled}" if self.spilled else ""
            self.marker = f"\n... [output truncated by bcc: {self.dropped} chars omitted{where}]\n"
            self._cut["text"].append(self.marker)

    def _sync(self, outs: list) -> None:
        """Forget the runs if clear_output emptied the outputs (it always clears them all)."""
        if self._runs and not (len(outs) > self._base and outs[self._base] is self._runs[0]):
            self._runs, self._kept, self._cut, self.dropped = [], 0, None, 0
            self._tail.clear()
            self._tail_len = 0

    def _append(self, outs: list, name: str, piece: str) -> None:
        run = self._runs[-1] if self._runs else None
        if run is None or outs[-1] is not run or run["name"] != name:
            run = nbformat.NotebookNode(output_type="stream", name=name, text=[])
            if not self._runs:
                self._base = len(outs)
            outs.append(run)
            self._runs.append(run)
        run["text"].append(piece)
        self._kept += len(piece)

    def _trim(self) -> None:
        """Apply carriage returns to the runs; past the cap, keep the first ``cap`` chars."""
        texts = [_collapse("".join(run["text"]), final=False) for run in self._runs]
        self._kept = sum(map(len, texts))
        budget = self.cap if self._kept > self.cap else None
        for run, text in zip(self._runs, texts, strict=True):
            if budget is not None:
                if len(text) > budget and self._cut is None:
                    self._cut = run
                self._drop(text, budget)
                text, budget = text[:budget], max(0, budget - len(text))
            run["text"] = [text]
        if budget is not None:
            self._kept = self.cap

    def _drop(self, text: str, start: int) -> None:
        if start >= len(text):
            return
        self.dropped += len(text) - start
        if self.tail_chars:
            piece = text[max(start, len(text) - self.tail_chars) :]
            self._tail.append(piece)
            self._tail_len += len(piece)
            while self._tail_len - len(self._tail[0]) >= self.tail_chars:
                self._tail_len -= len(self._tail.popleft())

    def _to_file(self, text: str) -> None:
        if self._spill is None or self._pending is None and not self._spill.started:
            return
        if not self._spill.started:
            self._pending.append(text)
            if self.total <= self.cap:
                return
            chunks, self._pending = self._pending, None
        else:
            chunks = [text]
        try:
            self._spill.write(chunks)
        except OSError:  # no spill (disk full, ...): the marker then names no file
            self._discard_spill()

    def _discard_spill(self) -> None:
        self._pending, self.spilled = None, None
        if self._spill is not None:
            self._spill.discard()
            self._spill = None


def _collapse(text: str, final: bool = True) -> str:
    """Apply carriage returns line by line; unless ``final``, a trailing one is kept."""
    if "\r" not in text:
        return text
    lines = text.split("\n")
    last = lines[-1]
    lines = [_last_segment(line) for line in lines]
    if not final and last.endswith("\r"):  # what comes next overwrites this line
        lines[-1] += "\r"
    return "\n".join(lines)


def merge_streams(outputs: list[dict]) -> list[dict]:
    """Join adjacent stream outputs of one name and apply carriage returns, in linear time."""
    merged: list[dict] = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if out.get("output_type") != "stream":
            merged.append(out)
        elif (
            prev is not None and prev.get("output_type") == "stream" and prev["name"] == out["name"]
        ):
            prev["text"].append(_plain_text(out.get("text", "")))
        else:
            merged.append({**out, "text": [_plain_text(out.get("text", ""))]})
    for out in merged:
        if out.get("output_type") == "stream":
            out["text"] = _collapse("".join(out["text"]))
    return merged


def _last_segment(line: str) -> str:
    """What a terminal shows for a line containing carriage returns."""
    parts = [p for p in line.split("\r") if p]
    return parts[-1] if parts else ""


def _plain_text(text: Any) -> str:
    return "".join(text) if isinstance(text, list) else str(text)


def _plain(text: Any) -> str:
    return _ANSI.sub("", _plain_text(text))


def drop_oversized(outputs: list[dict]) -> list[dict]:
    """Drop rich outputs over RICH_OUTPUT_MAX_BYTES and streams left empty by a cut."""
    kept = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream" and not out.get("text"):
            continue
        if kind in ("display_data", "execute_result"):
            data = out.get("data", {})
            size = sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())
            if size > RICH_OUTPUT_MAX_BYTES:
                continue
        kept.append(out)
    return kept


def excerpt(
    outputs: list[dict],
    status: str,
    ename: str | None,
    evalue: str | None,
    limit: int,
    sink: StreamSink | None = None,
) -> str:
    """Plain text of a cell's outputs for agents, bounded head + tail.

    When ``sink`` cut the stream text, the excerpt is its head, a truncation marker, then the
    tail of what was cut and the outputs after it.
    """
    parts: list[str] = []
    cut: int | None = None
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            text = _plain(out.get("text", ""))
            if sink is not None and sink.marker and cut is None and text.endswith(sink.marker):
                parts.append(text[: -len(sink.marker)])
                cut = len(parts)
                parts.append(_collapse(_plain(sink.tail)))
            else:
                parts.append(text)
        elif kind in ("display_data", "execute_result"):
            data = out.get("data", {})
            images = [m for m in data if m.startswith("image/")]
            if images:
                parts.append(" ".join(f"[{m}]" for m in images) + "\n")
            elif "text/markdown" in data:  # its text/plain is "<IPython...Markdown object>"
                parts.append(_plain(data["text/markdown"]).rstrip("\n") + "\n")
            elif "text/plain" in data:
                parts.append(_plain(data["text/plain"]).rstrip("\n") + "\n")
            elif data:
                parts.append(f"[{next(iter(data))}]\n")
        elif kind == "error" and status == "error":
            lines = _plain("\n".join(out.get("traceback", []))).splitlines()
            tail = [ln for ln in lines if ln.strip().strip("-")][-_TRACEBACK_TAIL_LINES:]
            last = f"{out.get('ename')}: {out.get('evalue')}"
            if not tail or tail[-1].strip() != last.strip():
                tail.append(last)
            parts.append("\n".join(tail) + "\n")
    if status in ("timeout", "dead"):
        parts.append(f"{ename}: {evalue}\n")
    if cut is None or sink is None:
        return _bound("".join(parts), limit)
    before, after = "".join(parts[:cut]), "".join(parts[cut:])
    head = min(len(before), (limit * 2) // 5)
    rest = limit - head
    shown = after[max(0, len(after) - rest) :] if rest > 0 else ""
    omitted = len(before) - head + sink.dropped - len(sink.tail) + len(after) - len(shown)
    where = f"; full text in {sink.spilled}" if sink.spilled else ""
    marker = f"\n... [output truncated by bcc: {omitted} chars omitted{where}] ...\n"
    return before[:head] + marker + shown


def _bound(text: str, limit: int) -> str:
    """Head and tail of ``text`` within ``limit``, cut at line ends where a line is not longer
    than half of its part (an agent reads whole lines of a table or a result)."""
    if len(text) <= limit:
        return text
    head_len = (limit * 2) // 5
    head = text[:head_len]
    if (end := head.rfind("\n")) >= head_len // 2:
        head = head[: end + 1]
    tail_len = limit - head_len
    tail = text[len(text) - tail_len :]
    if 0 <= (start := tail.find("\n")) < tail_len // 2:
        tail = tail[start + 1 :]
    omitted = len(text) - len(head) - len(tail)
    lead = "" if head.endswith("\n") else "\n"
    return f"{head}{lead}... [{omitted} chars omitted] ...\n{tail}"
