"""A batch's results: ``results.jsonl`` (one record a run), ``results.csv`` (the same, flat)
and ``index.html`` (a table linking every run's report). Written whole after each finished
run, so a killed batch leaves what it finished."""

from __future__ import annotations

import csv
import html
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from notebook_bcc.batch.attempt import RunRecord
from notebook_bcc.rundir.store import write_durable

__all__ = ["CSV_COLUMNS", "write_results"]

CSV_COLUMNS = (
    "id", "status", "exit_code", "outcome", "answers", "named_values", "key_results",
    "llm_calls", "prompt_tokens", "completion_tokens", "cost_usd", "wall_s", "run_dir",
    "action", "message",
)  # fmt: skip


def write_results(out: Path, records: Sequence[RunRecord]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(r.to_json(), default=str) + "\n" for r in records)
    write_durable(out / "results.jsonl", lines.encode())
    write_durable(out / "results.csv", _csv(records).encode())
    write_durable(out / "index.html", _index(out, records).encode())


def _csv(records: Sequence[RunRecord]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in records:
        row: dict[str, Any] = {k: v for k, v in r.to_json().items() if k in CSV_COLUMNS}
        row["answers"] = " | ".join(_answer(a) for a in r.answers)
        row["named_values"] = json.dumps(_named(r), default=str) if _named(r) else ""
        row["key_results"] = json.dumps(r.key_results, default=str) if r.key_results else ""
        writer.writerow(row)
    return buffer.getvalue()


def _answer(answer: dict[str, Any]) -> str:
    said = answer.get("value") if answer.get("answered", True) else "not answered"
    return f"{answer.get('question', '')} -> {said}"


def _named(record: RunRecord) -> dict[str, Any]:
    named: dict[str, Any] = {}
    for answer in record.answers:
        named.update(answer.get("values") or {})
    return named


def _index(out: Path, records: Sequence[RunRecord]) -> str:
    rows = []
    for r in records:
        report = Path(r.run_dir) / "report.html"
        link = os.path.relpath(report, out) if report.is_file() else ""
        name = f'<a href="{html.escape(link)}">{html.escape(r.id)}</a>' if link else r.id
        answers = "<br>".join(html.escape(_answer(a)) for a in r.answers)
        rows.append(
            f"<tr class='{html.escape(r.status)}'><td>{name}</td><td>{html.escape(r.status)}"
            f"</td><td>{html.escape(r.outcome)}</td><td>{answers}</td><td>{r.llm_calls}</td>"
            f"<td>{r.cost_usd:.4f}</td><td>{r.wall_s:.1f}</td></tr>"
        )
    counts: dict[str, int] = {}
    for r in records:
        counts[r.status] = counts.get(r.status, 0) + 1
    said = ", ".join(f"{n} {status}" for status, n in counts.items())
    return (
        "<!doctype html><meta charset='utf-8'><title>bcc batch</title><style>"
        "body{font-family:sans-serif;margin:2em}td,th{padding:.3em .6em;border-bottom:1px solid "
        "#ddd;vertical-align:top;text-align:left}.failed td,.aborted td{background:#fee}"
        ".completed_with_failed_steps td{background:#ffd}</style>"
        f"<h1>bcc batch: {len(records)} runs</h1><p>{html.escape(said)}</p>"
        "<table><tr><th>run</th><th>status</th><th>outcome</th><th>answers</th>"
        "<th>model calls</th><th>cost (USD)</th><th>wall (s)</th></tr>"
        + "".join(rows)
        + "</table>\n"
    )
