"""A bounded preview of each data file, for the planners: columns, dtypes, missing counts and
a few rows, read with the same reader as the notebook's loading cell (:mod:`tables`).

At most ``MAX_ROWS`` rows of a table are read, so a large file costs the ``bcc`` process
little memory; the preview says so. A text table (compressed or not) shows its first lines as
they are; Excel, Parquet, Feather and JSON show their first rows as read. Other files show
their size and first lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from notebook_bcc.inputs.as_written import (
    RAW_LINE_CHARS,
    as_written,
    clock_times,
    raw_columns,
    raw_lines,
)
from notebook_bcc.inputs.tables import (
    TEXT_FORMATS,
    is_table_file,
    open_decompressed,
    read_table,
    table_format,
)

__all__ = ["preview_columns", "preview_files", "preview_file"]

MAX_ROWS = 5_000  # rows read for the dtypes and missing counts of a file too big to read whole
#: a file up to this size (on disk; a compressed or binary one up to a quarter of it) is read whole, so
#: its counts (rows, missing, distinct) are the file's own: about a second of reading
FULL_READ_BYTES = 32 << 20
SHOW_ROWS = 3
MAX_COLUMNS = 80  # columns described one per line; the rest are named on one line
CELL_CHARS = 40
MAX_LEVELS = 12  # a text column with at most this many values has them listed, with counts


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _lines(path: Path, compression: str | None, cap: int = 200_000_000) -> tuple[int, bool]:
    """Lines in the first ``cap`` (decompressed) bytes (a last line without a line break
    counts), and whether there are more."""
    count, read, last = 0, 0, b"\n"
    with open_decompressed(str(path), compression) as handle:
        while read < cap:
            block = handle.read(1 << 20)
            if not block:
                return count + (last not in b"\r\n"), False
            count += block.count(b"\n") or (block.count(b"\r") if count == 0 else 0)
            read, last = read + len(block), block[-1:]
    return count, True


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""  # a missing value, as the file has it
    text = " ".join(str(value).split())
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def _table(
    path: Path, name: str, sheet: str | None, info: dict[str, object], frame: pd.DataFrame
) -> str:
    bounded = len(frame) >= MAX_ROWS and _row_limit(path) is not None
    if info["format"] in TEXT_FORMATS:
        head = _text_table_head(path, name, info, frame, bounded)
        rows = [f"lines 2-{SHOW_ROWS + 1} of the file as they are:"]
        rows += raw_lines(path, info, SHOW_ROWS + 1)[1:]
    else:
        head = _read_table_head(path, name, info, frame, bounded, sheet)
        shown = min(SHOW_ROWS, len(frame))
        rows = [f"the header and first {shown} rows as read:", *_frame_rows(frame)]
    order = _row_order(frame, bounded)
    raw = raw_columns(path, info, frame) if info["format"] in TEXT_FORMATS else {}
    return "\n".join([*head, *order, *_column_lines(frame, bounded, raw), *rows])


def _row_order(frame: pd.DataFrame, bounded: bool) -> list[str]:
    """How the rows run in time, by the first column of dates (a daily change computed in
    file order has the opposite sign when the newest rows come first)."""
    import warnings

    for col in list(frame.columns)[:MAX_COLUMNS]:
        column = frame[col]
        if pd.api.types.is_datetime64_any_dtype(column):
            dates = column.dropna()
        elif pd.api.types.is_string_dtype(column) and column.nunique() > 2:
            if clock_times(column.head(200)):
                continue  # times of day, not dates: they say nothing of the rows' order
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                head = pd.to_datetime(column.head(200), errors="coerce", format="mixed")
                if head.notna().mean() < 0.95:  # a sample first: most text is not dates
                    continue
                dates = pd.to_datetime(column, errors="coerce", format="mixed").dropna()
        else:
            continue
        if dates.nunique() < 2:
            continue
        if dates.is_monotonic_decreasing:
            how = "newest first: sort by it before computing changes over time"
        elif dates.is_monotonic_increasing:
            how = "oldest first"
        else:
            how = "not in date order: sort by it before computing changes over time"
        first, last = dates.iloc[0], dates.iloc[-1]
        rows = "in the rows read" if bounded else "in the file"
        return [f"row order: by {col} {how} ({first:%Y-%m-%d} first, {last:%Y-%m-%d} last {rows})"]
    return []


def _shape(frame: pd.DataFrame, bounded: bool, total_rows: object = None) -> str:
    """Rows x columns (of the file when known), and whether only the first rows were read."""
    if not bounded:
        return f"{len(frame):,} rows x {frame.shape[1]} columns"
    read_part = f"the first {MAX_ROWS:,} rows were read for this preview"
    if isinstance(total_rows, int):
        return f"{total_rows:,} rows x {frame.shape[1]} columns; {read_part}"
    return read_part


def _text_table_head(
    path: Path, name: str, info: dict[str, object], frame: pd.DataFrame, bounded: bool
) -> list[str]:
    compression = info.get("compression")
    lines_in_file, more = _lines(path, compression)  # type: ignore[arg-type]
    packed = f"{compression}-compressed, " if compression else ""
    return [
        f"### {name} ({_size(path.stat().st_size)}, {packed}"
        f"{'over ' if more else ''}{lines_in_file:,} lines, the first a header)",
        f"read as a table: encoding {info.get('encoding')}, separator {info.get('separator')!r}; "
        + _shape(frame, bounded),
    ]


def _read_table_head(
    path: Path,
    name: str,
    info: dict[str, object],
    frame: pd.DataFrame,
    bounded: bool,
    sheet: str | None,
) -> list[str]:
    packed = f", {info['compression']}-compressed" if info.get("compression") else ""
    head = [f"### {name} ({_size(path.stat().st_size)}, {info['format']}{packed})"]
    if info["format"] == "Excel":
        head.append(_sheets_line(info, sheet))
    head.append("read as a table: " + _shape(frame, bounded, info.get("total_rows")))
    return head


def _sheets_line(info: dict[str, object], sheet: str | None) -> str:
    sheets: list[dict[str, object]] = info["sheets"]  # type: ignore[assignment]
    listing = ", ".join(f"{s['name']} (empty)" if s["empty"] else str(s["name"]) for s in sheets)
    why = (
        "named by `sheet:` in the problem's front matter"
        if sheet is not None
        else "the first sheet with data rows"
    )
    return f"sheets: {listing}; reading {info['sheet']!r}, {why}"


def _column_lines(
    frame: pd.DataFrame, bounded: bool, raw: dict[str, tuple[str, list[str]]]
) -> list[str]:
    lines = [
        f"columns ({frame.shape[1]}): name: dtype, missing values"
        + (f" in the first {MAX_ROWS:,} rows" if bounded else "")
    ]
    if any(h != c and h.strip() == c for c, (h, _) in raw.items()):
        lines[0] += (
            " (the file's header has spaces around some names, shown where it does: this "
            "reader strips them, pd.read_csv keeps them unless skipinitialspace=True)"
        )
    cols = list(frame.columns)
    missing = frame.isna().sum()
    for col in cols[:MAX_COLUMNS]:
        # a line break inside a header, or spaces around it (" WINDSPEED"): quoted, so the
        # name a model reads is the name the code must use
        text = str(col)
        name = col if text.isprintable() and text == text.strip() else repr(col)
        lines.append(
            f"- {name}: {frame[col].dtype}, {int(missing[col])} missing"
            + _levels(frame[col])
            + as_written(frame[col], *raw.get(str(col), (str(col), [])))
        )
    if len(cols) > MAX_COLUMNS:
        rest = ", ".join(str(c) for c in cols[MAX_COLUMNS:])
        lines.append(f"- {len(cols) - MAX_COLUMNS} more columns: {rest}")
    return lines


_COLUMN_LINE = re.compile(r"^- (.+): [\w\[\], ]+?, \d+ missing")


def preview_columns(previews: tuple[str, ...]) -> list[str]:
    """The column names the previews list (``_column_lines``), every file's, in order."""
    names: list[str] = []
    for text in previews:
        for line in text.splitlines():
            match = _COLUMN_LINE.match(line)
            if match:
                names.append(match.group(1))
            elif line.startswith("- ") and " more columns: " in line:
                names += line.split(" more columns: ", 1)[1].split(", ")
    return names


def _levels(column: pd.Series) -> str:
    """The values of a text column with few of them (as read: 'None', 'NA' become missing);
    the range and distinct count of a numeric or date column."""
    if pd.api.types.is_bool_dtype(column):
        return ""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_datetime64_any_dtype(column):
        values = column.dropna()
        if values.empty:
            return ""
        return f", {_cell(values.min())} to {_cell(values.max())}, {values.nunique():,} distinct"
    values = column.dropna().astype(str).value_counts()
    if len(values) > MAX_LEVELS:
        return f", {len(values):,} distinct values{_date_range(values.index)}"
    return ", values: " + ", ".join(f"{_cell(v)} ({n})" for v, n in values.items())


def _date_range(texts: pd.Index) -> str:
    """The range of text values that are dates (nearly all of them parse) with an example as
    the file writes them; of values that are clock times, their range as times; else ''."""
    import warnings

    if clock_times(texts):
        times = pd.to_datetime(pd.Series(texts), errors="coerce", format="mixed").dropna()
        if times.empty:
            return ""
        return f", clock times (no date) {times.min():%H:%M:%S} to {times.max():%H:%M:%S}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dates = pd.to_datetime(pd.Series(texts), errors="coerce", format="mixed")
    if dates.notna().mean() < 0.95:
        return ""
    written = _cell(texts[0])
    return f", dates {dates.min():%Y-%m-%d} to {dates.max():%Y-%m-%d} (written like {written})"


def _frame_rows(frame: pd.DataFrame) -> list[str]:
    """The header and first rows of a table as read, cells separated by ' | '."""
    rows = [[str(c) for c in frame.columns]]
    rows += [[_cell(v) for v in row] for row in frame.head(SHOW_ROWS).itertuples(index=False)]
    return [" | ".join(row)[:RAW_LINE_CHARS] for row in rows]


def _text(path: Path, name: str) -> str:
    with path.open("rb") as handle:
        first = handle.read(2_000)
    if b"\x00" in first:
        return f"### {name} ({_size(path.stat().st_size)}, binary: no text preview)"
    text = first.decode("utf-8", "replace").splitlines()[:8]
    return "\n".join(
        [
            f"### {name} ({_size(path.stat().st_size)}); first lines:",
            *(t[:200] for t in text),
        ]
    )


def _row_limit(path: Path) -> int | None:
    """None (the whole file) for a file that reads in about a second, else ``MAX_ROWS``."""
    data_format, compression = table_format(str(path))
    packed = compression is not None or data_format not in TEXT_FORMATS  # more rows a byte
    budget = FULL_READ_BYTES // 4 if packed else FULL_READ_BYTES
    return None if path.stat().st_size <= budget else MAX_ROWS


def _preview(path: Path, name: str, sheet: str | None) -> tuple[str, pd.DataFrame | None]:
    """The preview of one file, and the rows read when it is a table; never raises (a file
    that will not read says why)."""
    try:
        if is_table_file(path):
            info: dict[str, object] = {}
            frame = read_table(str(path), info, nrows=_row_limit(path), sheet=sheet)
            return _table(path, name, sheet, info, frame), frame
        return _text(path, name), None
    except Exception as exc:  # noqa: BLE001 - any reader's error: pandas, pyarrow, openpyxl, ...
        return f"### {name}: could not be previewed ({type(exc).__name__}: {_cell(exc)})", None


def preview_file(path: Path, name: str, sheet: str | None = None) -> str:
    """The preview of one file. ``sheet`` is the Excel sheet the problem names (front matter
    ``sheet:``)."""
    return _preview(path, name, sheet)[0]


def _key_text(column: pd.Series) -> pd.Series:
    """Keys compared as text, so that 7, 7.0 and "7" match (as the offline analyst's join)."""
    values = column.dropna()
    if pd.api.types.is_float_dtype(column) and len(values) and (values == values.round()).all():
        column = column.astype("Int64")
    return column.astype("string").str.strip()


def shared_columns(frames: dict[str, pd.DataFrame]) -> str:
    """Every column two tables share, checked as a join key: unique in which, and what share
    of each table's rows find a match in the other. Empty when no two tables share one."""
    names, lines = list(frames), []
    for i, left in enumerate(names):
        for right in names[i + 1 :]:
            for col in [c for c in frames[left].columns if c in set(frames[right].columns)]:
                keys = {n: _key_text(frames[n][col]) for n in (left, right)}
                sides = []
                for n, other in ((left, right), (right, left)):
                    k = keys[n]
                    unique = "unique" if k.notna().all() and k.is_unique else "not unique"
                    matched = int(k.dropna().isin(set(keys[other].dropna())).sum())
                    sides.append(f"{n}: {unique}, {matched:,} of {len(k):,} rows match {other}")
                lines.append(f"- `{col}`: " + "; ".join(sides))
    if not lines:
        return ""
    return "\n".join(
        [
            "### Columns shared between files (checked as join keys on the rows read above)",
            *lines,
        ]
    )


def preview_files(
    root: Path, files: tuple[str, ...], *, sheet: str | None = None
) -> tuple[str, ...]:
    """Previews of ``files`` (paths relative to the run directory ``root``); with several
    tables, one more item checks the columns they share as join keys."""
    previews, frames = [], {}
    for f in files:
        text, frame = _preview(root / f, f, sheet)
        previews.append(text)
        if frame is not None:
            frames[Path(f).name] = frame
    shared = shared_columns(frames) if len(frames) > 1 else ""
    return tuple(previews + ([shared] if shared else []))
