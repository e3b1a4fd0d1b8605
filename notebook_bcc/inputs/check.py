"""Checks on the problem and data files, before any run directory, kernel or model exists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from notebook_bcc.errors import InputError
from notebook_bcc.inputs.problem import read_problem

__all__ = ["Inputs", "check_inputs"]

TABULAR = {".csv", ".tsv", ".txt", ".dat"}


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
    head = path.read_bytes()[:65_536]
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
        _check_sheet(f, sheet)
    return Inputs(problem, text, files)
