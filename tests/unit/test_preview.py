"""The planners' data preview: read with the notebook's reader, bounded, faithful to the file."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from notebook_bcc.inputs import preview
from notebook_bcc.inputs.preview import MAX_ROWS, preview_file


def test_a_table_preview_has_columns_levels_and_raw_lines(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("name;hand;size\nann;Left;1.5\nbob;;2\ncid;Right;\n", encoding="latin-1")
    text = preview_file(data, "assets/t.csv")
    assert "separator ';'" in text and "3 rows x 3 columns" in text
    assert "- hand: " in text and "1 missing, values: Left (1), Right (1)" in text
    assert "- size: float64, 1 missing" in text
    assert text.endswith("lines 2-4 of the file as they are:\nann;Left;1.5\nbob;;2\ncid;Right;")


def test_a_big_table_is_read_only_in_part_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(preview, "FULL_READ_BYTES", 1_000)  # a file over a second's reading
    data = tmp_path / "big.csv"
    data.write_text("a,b\n" + "".join(f"{i},{i % 3}\n" for i in range(MAX_ROWS * 3)))
    text = preview_file(data, "assets/big.csv")
    assert f"{MAX_ROWS * 3 + 1:,} lines" in text
    assert f"the first {MAX_ROWS:,} rows were read for this preview" in text


def test_other_files_show_their_first_lines_and_never_raise(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\nThe units are mm.\n")
    assert preview_file(notes, "assets/notes.md").endswith(
        "first lines:\n# Notes\nThe units are mm."
    )
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"\x00\x01\x02")
    assert "binary: no text preview" in preview_file(binary, "assets/x.bin")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert "could not be previewed" in preview_file(empty, "assets/empty.csv")


TABLE = pd.DataFrame({"size": [1.5, 2.0, None, 4.0], "hand": ["Left", "Right", "Left", None]})
AS_READ = "the header and first 3 rows as read:\nsize | hand\n1.5 | Left\n2.0 | Right\n | Left"
COLUMNS = (
    "- size: float64, 1 missing, 1.5 to 4.0, 3 distinct\n"
    "- hand: str, 1 missing, values: Left (2), Right (1)"
)


def _workbook(path: Path, first: pd.DataFrame) -> None:
    with pd.ExcelWriter(path) as writer:
        first.to_excel(writer, sheet_name="notes", index=False)
        TABLE.to_excel(writer, sheet_name="data", index=False)


def test_an_excel_preview_says_which_sheet_and_why(tmp_path: Path) -> None:
    data = tmp_path / "t.xlsx"
    _workbook(data, pd.DataFrame())
    text = preview_file(data, "assets/t.xlsx")
    assert text.startswith("### assets/t.xlsx (") and ", Excel)\n" in text
    assert "sheets: notes (empty), data; reading 'data', the first sheet with data rows" in text
    assert "read as a table: 4 rows x 2 columns" in text
    assert COLUMNS in text and text.endswith(AS_READ)
    _workbook(data, pd.DataFrame({"note": ["by hand"]}))
    named = preview_file(data, "assets/t.xlsx", sheet="data")
    assert "sheets: notes, data; reading 'data', named by `sheet:` in the problem's" in named
    assert "could not be previewed (ValueError: t.xlsx has no sheet 'x'" in preview_file(
        data, "assets/t.xlsx", sheet="x"
    )


@pytest.mark.parametrize(
    ("name", "write", "heading"),
    [
        ("t.parquet", lambda f, p: f.to_parquet(p), "Parquet"),
        ("t.feather", lambda f, p: f.to_feather(p), "Feather"),
        ("t.json", lambda f, p: f.to_json(p, orient="records"), "JSON"),
        ("t.jsonl", lambda f, p: f.to_json(p, orient="records", lines=True), "JSON Lines"),
        ("t.json.gz", lambda f, p: f.to_json(p, orient="records"), "JSON, gzip-compressed"),
    ],
)
def test_binary_and_json_previews_show_rows_as_read(
    tmp_path: Path, name: str, write: Callable[[pd.DataFrame, Path], None], heading: str
) -> None:
    write(TABLE, tmp_path / name)
    text = preview_file(tmp_path / name, f"assets/{name}")
    assert text.startswith(f"### assets/{name} (") and f", {heading})\n" in text
    assert "read as a table: 4 rows x 2 columns" in text
    assert COLUMNS in text and text.endswith(AS_READ)


def test_a_big_parquet_file_says_its_rows_from_the_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(preview, "FULL_READ_BYTES", 1_000)  # a file over a second's reading
    data = tmp_path / "big.parquet"
    pd.DataFrame({"a": range(MAX_ROWS * 3)}).to_parquet(data)
    text = preview_file(data, "assets/big.parquet")
    assert f"{MAX_ROWS * 3:,} rows x 1 columns; the first {MAX_ROWS:,} rows were read" in text


def test_a_compressed_text_table_shows_its_decompressed_lines(tmp_path: Path) -> None:
    data = tmp_path / "t.csv.gz"
    with gzip.open(data, "wt") as handle:
        handle.write("name;hand\nann;Left\nbob;\ncid;Right\ndan;Left\n")
    text = preview_file(data, "assets/t.csv.gz")
    assert (
        ", gzip-compressed, 5 lines, the first a header)\n" in text
        and "separator ';'; 4 rows x 2 columns" in text
    )
    assert text.endswith("lines 2-4 of the file as they are:\nann;Left\nbob;\ncid;Right")


def test_a_corrupt_parquet_file_is_not_previewed_and_says_why(tmp_path: Path) -> None:
    data = tmp_path / "bad.parquet"
    data.write_bytes(b"PAR1 not really parquet")
    assert "could not be previewed (ArrowInvalid: " in preview_file(data, "assets/bad.parquet")


def test_several_tables_have_their_shared_columns_checked_as_join_keys(tmp_path: Path) -> None:
    from notebook_bcc.inputs.preview import preview_files

    (tmp_path / "orders.csv").write_text("order,customer_id,amount\n1,1,5\n2,1,6\n3,9,7\n")
    (tmp_path / "customers.csv").write_text("customer_id,segment\n1.0,A\n2.0,B\n")
    (tmp_path / "notes.txt").write_text("free text\n")
    *_, shared = preview_files(tmp_path, ("orders.csv", "customers.csv", "notes.txt"))
    assert shared == (
        "### Columns shared between files (checked as join keys on the rows read above)\n"
        "- `customer_id`: orders.csv: not unique, 2 of 3 rows match customers.csv; "
        "customers.csv: unique, 1 of 2 rows match orders.csv"
    )
    assert len(preview_files(tmp_path, ("orders.csv", "notes.txt"))) == 2  # nothing shared


def test_lines_count_a_last_line_without_a_break_and_the_row_order_is_said(
    tmp_path: Path,
) -> None:
    """A file whose newest dates come first says so (a daily change in file order would have
    the opposite sign); 2,176 rows and a header are 2,177 lines, with or without a last break."""
    import pandas as pd

    days = pd.date_range("2015-01-01", periods=2_176)[::-1]
    body = "Date,Close\n" + "\n".join(f"{d:%Y-%m-%d},{i}" for i, d in enumerate(days))
    for ending in ("", "\n"):
        path = tmp_path / "prices.csv"
        path.write_text(body + ending)
        text = preview_file(path, "assets/prices.csv")
        assert "2,177 lines, the first a header)" in text and "2,176 rows x 2 columns" in text
        assert "row order: by Date newest first: sort by it before computing changes" in text
    path.write_text("Date,Close\n" + "\n".join(f"{d:%Y-%m-%d},1" for d in days[::-1]))
    oldest = preview_file(path, "assets/prices.csv")
    # the whole column, not a sample of its first rows (the last date is the file's last)
    assert "row order: by Date oldest first (2015-01-01 first, 2020-12-15 last in the file)" in (
        oldest
    )


def test_counts_are_the_whole_files_when_it_reads_in_a_second(tmp_path: Path) -> None:
    """Issue 39: missing and distinct counts came from the first 5,000 rows (1,593 missing
    where the file had 1,713)."""
    rows = [f"{i},{'' if i >= 5_000 and i % 2 else i % 7}" for i in range(6_000)]
    data = tmp_path / "t.csv"
    data.write_text("id,x\n" + "\n".join(rows) + "\n")
    text = preview_file(data, "assets/t.csv")
    assert "6,000 rows x 2 columns" in text and "were read for this preview" not in text
    assert "- x: float64, 500 missing" in text
    assert "- id: int64, 0 missing, 0 to 5999, 6,000 distinct" in text


def test_clock_times_are_times_not_todays_dates_and_give_no_order_advice(tmp_path: Path) -> None:
    """Issue 39: "09:15:59" and "7:13 PM" were described as "dates <today> to <today>", with
    advice to sort by them."""
    hours = [f"{h:02d}:{m:02d}:59" for h in range(9, 12) for m in range(0, 60, 7)]
    pm = [f"{h}:{m:02d} PM" for h in range(1, 12) for m in (3, 13, 43)]
    n = min(len(hours), len(pm))
    data = tmp_path / "t.csv"
    data.write_text(
        "start,end\n" + "\n".join(f"{a},{b}" for a, b in zip(hours, pm, strict=False)) + "\n"
    )
    text = preview_file(data, "assets/t.csv")
    assert "- start: " in text and "clock times (no date) 09:00:59 to " in text
    assert "- end: " in text and "clock times (no date) 13:03:00 to " in text
    assert "dates" not in text.replace("(no date)", "") and "row order" not in text
    assert n > 12


def test_a_date_column_shows_how_the_file_writes_it(tmp_path: Path) -> None:
    days = pd.date_range("2018-01-19", periods=40)
    data = tmp_path / "t.csv"
    data.write_text("day,v\n" + "\n".join(f"{d:%d-%b-%y},{i}" for i, d in enumerate(days)))
    text = preview_file(data, "assets/t.csv")
    assert "dates 2018-01-19 to 2018-02-27 (written like " in text
    assert "-Jan-18)" in text or "-Feb-18)" in text


def test_leading_zeros_that_reading_drops_are_said(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("id,v\n0020200722,1\n0020200723,2\n0120200724,3\n")
    text = preview_file(data, "assets/t.csv")
    assert "- id: int64, 0 missing" in text
    assert "written with leading zeros in the file (0020200722)" in text
    assert "leading zeros" not in text.split("- v: ")[1].splitlines()[0]


def test_names_with_spaces_are_quoted_and_text_read_as_missing_is_said(tmp_path: Path) -> None:
    """Relay trials (issue 39): the preview listed `` WINDSPEED`` as ``WINDSPEED`` (code
    following it failed), and did not say that the text "None" is read as missing."""
    data = tmp_path / "t.csv"
    data.write_text(
        "DATE TIME, WINDSPEED,area\n1/1/2015,2.5,None\n1/2/2015,3.5,Gulf\n1/3/2015,,NA\n"
    )
    text = preview_file(data, "assets/t.csv")
    wind = next(line for line in text.splitlines() if "WINDSPEED" in line)
    assert wind.startswith("- WINDSPEED: float64, 1 missing")  # as bcc's reader reads it
    assert wind.endswith("; in the file's header ' WINDSPEED'")
    assert "pd.read_csv keeps them unless skipinitialspace=True" in text
    assert "- DATE TIME: " in text
    area = next(line for line in text.splitlines() if line.startswith("- area:"))
    assert "2 missing" in area
    assert "written in the file as 'None' (1), 'NA' (1), which reading counts as missing" in area


def test_a_no_break_space_that_prints_as_a_space_is_said(tmp_path: Path) -> None:
    """Two cost-table players' date parsers failed on "April\\xa019 – 21", which the preview's
    lines showed as "April 19 – 21"; a header note and text read as missing are both kept."""
    data = tmp_path / "t.csv"
    data.write_text(
        "name, dates,n\nA,April\xa019 – 21,1\nB,May 2 – 3,2\nC,June\xa01\u200b,3\nD,None,4\n",
        encoding="utf-8",
    )
    text = preview_file(data, "assets/t.csv")
    dates = next(line for line in text.splitlines() if line.startswith("- dates:"))
    assert dates.endswith(
        "; in the file's header ' dates'; 2 values contain U+00A0 (no-break space), 1 value "
        "contains U+200B (zero-width space), which prints like a space (or nothing) but is not "
        "' '; written in the file as 'None' (1), which reading counts as missing"
    )
    assert "U+" not in next(line for line in text.splitlines() if line.startswith("- name:"))
