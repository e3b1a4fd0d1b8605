"""The planners' data preview: read with the notebook's reader, bounded, faithful to the file."""

from __future__ import annotations

from pathlib import Path

from notebook_bcc.inputs.preview import MAX_ROWS, preview_file


def test_a_table_preview_has_columns_levels_and_raw_lines(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("name;hand;size\nann;Left;1.5\nbob;;2\ncid;Right;\n", encoding="latin-1")
    text = preview_file(data, "assets/t.csv")
    assert "separator ';'" in text and "3 rows x 3 columns" in text
    assert "- hand: " in text and "1 missing, values: Left (1), Right (1)" in text
    assert "- size: float64, 1 missing" in text
    assert text.endswith("lines 2-4 of the file as they are:\nann;Left;1.5\nbob;;2\ncid;Right;")


def test_a_big_table_is_read_only_in_part_and_says_so(tmp_path: Path) -> None:
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
