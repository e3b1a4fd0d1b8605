"""A batch manifest: one run a row, read from CSV or JSON Lines.

Columns (CSV header or JSON keys): ``problem`` (a path), ``data`` (one path, or several: a JSON
list, or in CSV separated by ``;``), optional ``id`` (the run directory's name; default
``row-N``, N counted from 1) and any option of ``bcc run`` by its long name (``model``,
``seed``, ``max_llm_calls`` or ``max-llm-calls``, ``no_verify``, …), which overrides the value
given on the batch's command line for that row. Relative paths are read from the manifest's
directory. An empty cell means "not set here".
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notebook_bcc.errors import InputError

__all__ = ["BatchRow", "read_manifest"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_OWN = {"id", "problem", "data"}


@dataclass(frozen=True)
class BatchRow:
    """One run of a batch, as the manifest gives it."""

    id: str
    problem: Path
    data: tuple[Path, ...]
    #: ``bcc run`` options of this row: (option name with dashes, value as text) pairs
    options: tuple[tuple[str, str], ...] = ()


def read_manifest(path: Path, run_options: Mapping[str, bool]) -> tuple[BatchRow, ...]:
    """The rows of ``path``; ``run_options`` maps each ``bcc run`` option name (dashes) to
    whether it is a flag. Raises InputError naming the row and what to fix."""
    if not path.is_file():
        raise InputError(f"manifest {path} not found", remedy="pass a .csv or .jsonl file")
    records = _records(path)
    if not records:
        raise InputError(f"manifest {path} has no rows", remedy="add one row per run")
    rows = [_row(path.parent, n, r, run_options) for n, r in enumerate(records, 1)]
    seen: dict[str, int] = {}
    for n, row in enumerate(rows, 1):
        if row.id in seen:
            raise InputError(
                f"manifest row {n}: id '{row.id}' is also row {seen[row.id]}'s",
                remedy="give every row its own id",
            )
        seen[row.id] = n
    return tuple(rows)


def _records(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() in {".jsonl", ".ndjson", ".json"}:
        records = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"manifest {path.name} line {n} is not JSON: {exc.msg}",
                    remedy="write one JSON object per line",
                ) from None
            if not isinstance(record, dict):
                raise InputError(
                    f"manifest {path.name} line {n} is not a JSON object",
                    remedy='write {"problem": …, "data": …} per line',
                )
            records.append(record)
        return records
    if path.suffix.lower() != ".csv":
        raise InputError(
            f"manifest {path.name}: unknown format '{path.suffix}'",
            remedy="use a .csv file (with a header) or a .jsonl file",
        )
    return [dict(r) for r in csv.DictReader(text.splitlines())]


def _row(base: Path, n: int, record: dict[str, Any], run_options: Mapping[str, bool]) -> BatchRow:
    where = f"manifest row {n}"
    fields = {str(k).strip(): v for k, v in record.items() if k is not None}
    problem = _text(fields.get("problem"))
    if not problem:
        raise InputError(f"{where} has no problem", remedy="give each row a `problem` path")
    data = _paths(fields.get("data"))
    if not data:
        raise InputError(f"{where} has no data", remedy="give each row one or more `data` paths")
    row_id = _text(fields.get("id")) or f"row-{n}"
    if not _ID.match(row_id):
        raise InputError(
            f"{where}: id '{row_id}' cannot name a run directory",
            remedy="use letters, digits, '.', '_' and '-' (at most 100)",
        )
    options = []
    for key, value in fields.items():
        if key in _OWN or _text(value) == "":
            continue
        name = key.replace("_", "-")
        if name not in run_options:
            raise InputError(
                f"{where}: '{key}' is not an option of `bcc run`",
                remedy="see `bcc run --help` for the option names",
            )
        options.append((name, _flag(value, where, key) if run_options[name] else _text(value)))
    return BatchRow(
        row_id,
        _resolve(base, problem),
        tuple(_resolve(base, p) for p in data),
        tuple(options),
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def _paths(value: Any) -> list[str]:
    if isinstance(value, list):
        return [_text(v) for v in value if _text(v)]
    return [p.strip() for p in _text(value).split(";") if p.strip()]


def _flag(value: Any, where: str, key: str) -> str:
    word = _text(value).lower()
    if word in {"true", "1", "yes", "on"}:
        return "true"
    if word in {"false", "0", "no", "off"}:
        return "false"
    raise InputError(f"{where}: '{key}' is '{value}'", remedy="write true or false")


def _resolve(base: Path, text: str) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else (base / path).resolve()
