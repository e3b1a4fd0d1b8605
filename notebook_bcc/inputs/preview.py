"""A bounded preview of each data file, for the planners: columns, dtypes, missing counts and
a few rows, read with the same reader as the notebook's loading cell (:mod:`tables`).

At most ``MAX_ROWS`` rows of a table are read, so a large file costs the ``bcc`` process
little memory; the preview says so. Other files show their size and first lines.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from notebook_bcc.inputs.tables import read_delimited

__all__ = ["preview_files", "preview_file"]

MAX_ROWS = 5_000  # rows read for the dtypes and missing counts
SHOW_ROWS = 3
MAX_COLUMNS = 80  # columns described one per line; the rest are named on one line
CELL_CHARS = 40
MAX_LEVELS = 12  # a text column with at most this many values has them listed, with counts
RAW_LINE_CHARS = 300
TEXT_TABLES = (".csv", ".tsv", ".txt", ".dat", ".tab")


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _lines(path: Path, cap: int = 200_000_000) -> tuple[int, bool]:
    """Newlines in the first ``cap`` bytes, and whether the file is longer than that."""
    count, read = 0, 0
    with path.open("rb") as handle:
        while read < cap:
            block = handle.read(1 << 20)
            if not block:
                return count, False
            count += block.count(b"\n") or (block.count(b"\r") if count == 0 else 0)
            read += len(block)
    return count, True


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""  # a missing value, as the file has it
    text = " ".join(str(value).split())
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def _table(path: Path, name: str) -> str:
    info: dict[str, object] = {}
    frame = read_delimited(str(path), info, nrows=MAX_ROWS)
    lines_in_file, more = _lines(path)
    bounded = len(frame) >= MAX_ROWS
    head = [
        f"### {name} ({_size(path.stat().st_size)}, "
        f"{'over ' if more else ''}{lines_in_file:,} lines)",
        f"read as a table: encoding {info.get('encoding')}, separator {info.get('separator')!r}; "
        + (
            f"the first {MAX_ROWS:,} rows were read for this preview"
            if bounded
            else f"{len(frame):,} rows x {frame.shape[1]} columns"
        ),
        f"columns ({frame.shape[1]}): name: dtype, missing values"
        + (f" in the first {MAX_ROWS:,} rows" if bounded else ""),
    ]
    cols = list(frame.columns)
    missing = frame.isna().sum()
    for col in cols[:MAX_COLUMNS]:
        name = col if str(col).isprintable() else repr(col)  # a line break inside a header
        head.append(
            f"- {name}: {frame[col].dtype}, {int(missing[col])} missing{_levels(frame[col])}"
        )
    if len(cols) > MAX_COLUMNS:
        rest = ", ".join(str(c) for c in cols[MAX_COLUMNS:])
        head.append(f"- {len(cols) - MAX_COLUMNS} more columns: {rest}")
    head.append(f"lines 2-{SHOW_ROWS + 1} of the file as they are:")
    head += _raw_lines(path, info, SHOW_ROWS + 1)[1:]
    return "\n".join(head)


def _levels(column: pd.Series) -> str:
    """The values of a text column with few of them (as read: 'None', 'NA' become missing)."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_datetime64_any_dtype(column):
        return ""
    values = column.dropna().astype(str).value_counts()
    if len(values) > MAX_LEVELS:
        return f", {len(values):,} distinct values"
    return ", values: " + ", ".join(f"{_cell(v)} ({n})" for v, n in values.items())


def _raw_lines(path: Path, info: dict[str, object], n: int) -> list[str]:
    encoding = str(info.get("encoding") or "utf-8")
    lines = []
    with path.open(encoding=encoding, errors="replace", newline="") as handle:
        for line in handle:
            lines.append(line.rstrip("\r\n")[:RAW_LINE_CHARS])
            if len(lines) >= n:
                break
    return lines


def _text(path: Path, name: str) -> str:
    with path.open("rb") as handle:
        first = handle.read(2_000)
    if b"\x00" in first:
        return f"### {name} ({_size(path.stat().st_size)}, binary: no text preview)"
    text = first.decode("utf-8", "replace").splitlines()[:8]
    return "\n".join(
        [f"### {name} ({_size(path.stat().st_size)}); first lines:", *(t[:200] for t in text)]
    )


def preview_file(path: Path, name: str) -> str:
    """The preview of one file; never raises (a file that will not read says why)."""
    try:
        if path.suffix.lower() in TEXT_TABLES:
            return _table(path, name)
        return _text(path, name)
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        return f"### {name}: could not be previewed ({type(exc).__name__}: {_cell(exc)})"


def preview_files(root: Path, files: tuple[str, ...]) -> tuple[str, ...]:
    """Previews of ``files`` (paths relative to the run directory ``root``)."""
    return tuple(preview_file(root / f, f) for f in files)
