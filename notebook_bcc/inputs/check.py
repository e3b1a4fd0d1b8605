"""Checks on the problem and data files, before any run directory, kernel or model exists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from notebook_bcc.errors import InputError
from notebook_bcc.inputs.problem import read_problem

__all__ = ["Inputs", "check_inputs"]

TABULAR = {".csv", ".tsv", ".txt", ".dat"}
#: what bcc reads of a data file is bounded (docs/problems.md, "Data formats"): a line of a text table
#: (decompressed) and a compressed file's decompressed size; a plain file's lines are checked
#: in the part the data preview reads
MAX_LINE_BYTES = 16 * 2**20
MAX_DECOMPRESSED_BYTES = 4 * 2**30
PLAIN_SCAN_BYTES = 200_000_000
_BLOCK = 1 << 20
#: the files read a line at a time: text tables (any other extension is read as one) and
#: JSON Lines
LINES = (*TABULAR, ".tab", ".jsonl", ".ndjson")
_COMPRESSIONS = (
    (".gz", "gzip"),
    (".bz2", "bz2"),
    (".xz", "xz"),
    (".zip", "zip"),
    (".zst", "zstd"),
    ("", None),
)


@dataclass(frozen=True)
class Inputs:
    problem: Path
    problem_text: str
    data: tuple[Path, ...]


def _existing_file(path: Path, what: str) -> Path:
    if not path.exists():
        raise InputError(f"{what} {path} does not exist", remedy="check the path")
    if path.is_dir():
        raise InputError(f"{what} {path} is a directory", remedy=f"pass a file as the {what}")
    if path.stat().st_size == 0:
        raise InputError(f"{what} {path} is empty", remedy=f"pass a non-empty {what}")
    return path.resolve()


def _check_table(path: Path) -> None:
    if path.suffix.lower() not in TABULAR:
        return
    with path.open("rb") as handle:
        head = handle.read(65_536)
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            f"data file {path.name} is binary, not text",
            remedy="export the table as CSV, or name it with its real extension (.parquet, .xlsx)",
        )
    text = head.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if len(lines) < 2:
        raise InputError(
            f"data file {path.name} has a header but no rows",
            remedy="pass a table with at least one data row",
        )


def _check_bounded(path: Path) -> None:
    """Refuse (exit 3) a text table with a line over ``MAX_LINE_BYTES`` and a compressed file
    that decompresses to over ``MAX_DECOMPRESSED_BYTES``, read a block at a time (a 1 MB gzip
    holding one 1 GiB line took 8.5 GB when the preview read it)."""
    name = path.name.lower()
    packed, compression = next((s, c) for s, c in _COMPRESSIONS if name.endswith(s))
    lines = Path(name[: len(name) - len(packed)]).suffix in LINES
    if compression is None and not lines:
        return
    problem = _over_cap(path, compression, lines)
    if problem == "line":
        raise InputError(
            f"data file {path.name} has a line over {MAX_LINE_BYTES // 2**20} MiB"
            + (" (decompressed)" if compression else ""),
            remedy="pass a table with one record a line (bcc reads lines of up to "
            f"{MAX_LINE_BYTES // 2**20} MiB)",
        )
    if problem == "size":
        raise InputError(
            f"data file {path.name} decompresses to over {MAX_DECOMPRESSED_BYTES // 2**30} GiB",
            remedy="pass a sample of it, or the file decompressed (bcc decompresses up to "
            f"{MAX_DECOMPRESSED_BYTES // 2**30} GiB)",
        )


def _over_cap(path: Path, compression: str | None, lines: bool) -> str:
    """ "line", "size" or "" (within the caps, or unreadable: the run says why)."""
    limit = MAX_DECOMPRESSED_BYTES if compression else PLAIN_SCAN_BYTES
    total, line = 0, 0  # bytes read; bytes of the line not yet ended
    try:
        with _open(path, compression) as handle:
            while block := handle.read(_BLOCK):
                total += len(block)
                if lines:
                    ends = [i for i in (block.find(b"\n"), block.find(b"\r")) if i >= 0]
                    if line + (min(ends) if ends else len(block)) > MAX_LINE_BYTES:
                        return "line"
                    if ends:
                        line = len(block) - 1 - max(block.rfind(b"\n"), block.rfind(b"\r"))
                    else:
                        line += len(block)
                if total > limit:
                    return "size" if compression else ""
    except Exception:  # noqa: BLE001 - a corrupt archive: the run reports the reader's error
        return ""
    return ""


def _open(path: Path, compression: str | None) -> BinaryIO:
    """The decompressed bytes, as ``tables.open_decompressed`` reads them (not imported here:
    it imports pandas, which a run imports while its kernel boots)."""
    if compression in ("gzip", "bz2", "xz"):  # the standard library's, as tables' reads them
        import bz2
        import gzip
        import lzma

        return {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}[compression](path, "rb")  # type: ignore[no-any-return]
    if compression in ("zip", "zstd"):
        from notebook_bcc.inputs.tables import open_decompressed

        return open_decompressed(str(path), compression)  # type: ignore[no-any-return]
    return path.open("rb")


def _excel_sheets(path: Path) -> list[str] | None:
    """The sheet names of a workbook, or None when it does not open (the run says why)."""
    import pandas as pd  # only for workbooks: a run imports it while its kernel boots

    try:
        with pd.ExcelFile(path) as workbook:
            return [str(name) for name in workbook.sheet_names]
    except Exception:  # noqa: BLE001 - a corrupt workbook: openpyxl, xlrd, zipfile raise their own
        return None


def _check_sheet(path: Path, sheet: str | None) -> None:
    """An Excel input must have the sheet the problem names (front matter ``sheet:``). Other
    formats are not read here: their errors reach the run, which reports them."""
    if sheet is None:
        return
    from notebook_bcc.inputs.tables import table_format  # imports pandas

    if table_format(path)[0] != "Excel":
        return
    sheets = _excel_sheets(path)
    if sheets is not None and sheet not in sheets:
        raise InputError(
            f"data file {path.name} has no sheet {sheet!r}",
            remedy="name one of its sheets in the front matter (sheet: NAME): " + ", ".join(sheets),
        )


def check_inputs(problem: Path, data: Sequence[Path]) -> Inputs:
    """Validate the inputs; raise InputError (exit 3) with a remedy on the first problem."""
    if not data:
        raise InputError("no data file given", remedy="bcc run PROBLEM.md DATA.csv")
    problem = _existing_file(problem, "problem file")
    try:
        text = problem.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(
            f"problem file {problem} is not UTF-8 text", remedy="save it as UTF-8 markdown"
        ) from None
    if not text.strip():
        raise InputError(f"problem file {problem} is blank", remedy="write the question in it")
    files = tuple(_existing_file(Path(p), "data file") for p in data)
    names = [f.name for f in files]
    if len(set(names)) != len(names):
        raise InputError("two data files share a name", remedy="rename one of them")
    sheet = read_problem(text).sheet
    for f in files:
        _check_table(f)
        _check_bounded(f)
        _check_sheet(f, sheet)
    return Inputs(problem, text, files)
