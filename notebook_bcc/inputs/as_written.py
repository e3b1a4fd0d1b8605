"""What reading a text table changes, against how the file writes it: a header with spaces
around a name, text read as missing ("None", "NA"), numbers written with leading zeros,
times of day with no date; and characters a printed value hides (a no-break space). The
preview (``preview.py``) states these beside what the reader made of each column, so a model
never takes the reader's view for the file's.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd

from notebook_bcc.inputs.tables import open_decompressed

__all__ = [
    "RAW_LINE_CHARS",
    "as_written",
    "clock_times",
    "raw_columns",
    "raw_lines",
    "unseen_characters",
]

RAW_LINE_CHARS = 300

_LEADING_ZERO = re.compile(r"^[+-]?0\d")
RAW_SAMPLE_LINES = 2_000  # lines of a text table read as written, for what reading changes


def raw_columns(
    path: Path, info: dict[str, object], frame: pd.DataFrame
) -> dict[str, tuple[str, list[str]]]:
    """Each column's header and first values as the file writes them (by position, when the
    header has as many fields as the frame columns), for what reading changes."""
    sep = str(info.get("separator") or ",")
    try:
        lines = raw_lines(path, info, RAW_SAMPLE_LINES + 1)
        rows = list(csv.reader(lines, delimiter=sep)) if len(sep) == 1 else []
    except (OSError, csv.Error, UnicodeError, ValueError):
        return {}
    if not rows or len(rows[0]) != frame.shape[1]:
        return {}
    cols = [str(c) for c in frame.columns]
    return {
        c: (rows[0][i], [r[i].strip() for r in rows[1:] if i < len(r)]) for i, c in enumerate(cols)
    }


#: what pandas reads as missing by default, besides an empty field
_NA_TEXTS = frozenset(
    ["None", "NA", "N/A", "n/a", "NaN", "nan", "-NaN", "-nan", "NULL", "null", "<NA>", "#N/A",
     "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "1.#IND", "1.#QNAN"]
)  # fmt: skip


def as_written(column: pd.Series, header: str, raw: list[str]) -> str:
    """What reading changed: a header written with spaces around it, text read as missing
    ("None", "NA"), numbers written with leading zeros (an ID read as an integer loses them);
    and what a text value's printed form hides (``unseen_characters``)."""
    said = ""
    if header != str(column.name) and header.strip() == str(column.name):
        said = f"; in the file's header {header!r}"
    if not pd.api.types.is_numeric_dtype(column):
        said += unseen_characters(column)
    if not raw:
        return said
    tokens: dict[str, int] = {}
    for v in raw:
        if v in _NA_TEXTS:
            tokens[v] = tokens.get(v, 0) + 1
    if tokens:
        listed = ", ".join(f"{t!r} ({n:,})" for t, n in sorted(tokens.items(), key=lambda x: -x[1]))
        sample = f" in the first {len(raw):,} rows" if len(raw) >= RAW_SAMPLE_LINES else ""
        said += f"; written in the file as {listed}{sample}, which reading counts as missing"
    if not pd.api.types.is_numeric_dtype(column):
        return said
    zeros = [v for v in raw if _LEADING_ZERO.match(v)]
    if not zeros:
        return said
    return said + (
        f"; written with leading zeros in the file ({zeros[0]}), which reading it as numbers "
        "drops: read it as text (dtype=str) where they matter"
    )


#: characters that print as a space, or as nothing, and are not ' ' (two trials' date parsers
#: failed on "April\xa019 – 21", which every preview line showed as "April 19 – 21")
_UNSEEN = {
    "\xa0": "U+00A0 (no-break space)",
    "\u202f": "U+202F (narrow no-break space)",
    "\u2009": "U+2009 (thin space)",
    "\u200b": "U+200B (zero-width space)",
    "\ufeff": "U+FEFF (zero-width no-break space)",
    "\t": "a tab",
}
_ANY_UNSEEN = re.compile("[" + "".join(_UNSEEN) + "]")


def unseen_characters(column: pd.Series) -> str:
    """How many of a text column's values hold a character that prints as a space or as
    nothing and is not ' ' (``_UNSEEN``), each named: a value's printed form hides them."""
    values = column.dropna().astype(str)
    if values.empty or not values.str.contains(_ANY_UNSEEN).any():
        return ""
    counts = [(values.str.contains(ch, regex=False).sum(), name) for ch, name in _UNSEEN.items()]
    listed = ", ".join(
        f"{n:,} {'value contains' if n == 1 else 'values contain'} {name}"
        for n, name in counts
        if n
    )
    return f"; {listed}, which prints like a space (or nothing) but is not ' '"


_CLOCK_TIME = re.compile(r"^\s*\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:[AaPp]\.?[Mm]\.?)?\s*$")


def clock_times(texts: pd.Series | pd.Index) -> bool:
    """Nearly all values are times of day with no date ("09:15:59", "7:13 PM"): pandas would
    parse them as today's date."""
    values = pd.Series(texts).dropna().astype(str)
    return len(values) > 0 and values.str.match(_CLOCK_TIME).mean() >= 0.95


def raw_lines(path: Path, info: dict[str, object], n: int) -> list[str]:
    encoding = str(info.get("encoding") or "utf-8")
    compression = info.get("compression")
    lines = []
    with open_decompressed(str(path), compression) as binary:  # type: ignore[arg-type]
        handle = io.TextIOWrapper(binary, encoding=encoding, errors="replace", newline="")
        for line in handle:
            lines.append(line.rstrip("\r\n")[:RAW_LINE_CHARS])
            if len(lines) >= n:
                break
    return lines
