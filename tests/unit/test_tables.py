"""The one table reader: every format it names reads the same table, ``nrows`` bounds the rows,
``info`` says how the file was read, and its source runs on its own with the ``_bcc_`` names."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow
import pytest

from notebook_bcc.inputs.tables import read_table, reader_source, table_format

TABLE = pd.DataFrame(
    {"size": [1.5, 2.25, 3.0, 4.5, 5.75], "count": [3, 1, 4, 1, 5], "kind": list("abcab")}
)


def _zstd(frame: pd.DataFrame, path: Path) -> None:
    with pyarrow.output_stream(str(path), compression="zstd") as out:
        out.write(frame.to_csv(index=False).encode())


def _excel(frame: pd.DataFrame, path: Path) -> None:
    with pd.ExcelWriter(path) as writer:
        pd.DataFrame().to_excel(writer, sheet_name="notes", index=False)
        frame.to_excel(writer, sheet_name="data", index=False)


WRITERS: dict[str, tuple[Callable[[pd.DataFrame, Path], None], dict[str, object]]] = {
    "t.tsv": (lambda f, p: f.to_csv(p, sep="\t", index=False), {"format": "TSV"}),
    "t.txt": (lambda f, p: f.to_csv(p, sep="|", index=False), {"separator": "|"}),
    "t.csv.gz": (lambda f, p: f.to_csv(p, index=False), {"compression": "gzip"}),
    "t.csv.bz2": (lambda f, p: f.to_csv(p, index=False), {"compression": "bz2"}),
    "t.csv.xz": (lambda f, p: f.to_csv(p, index=False), {"compression": "xz"}),
    "t.csv.zip": (lambda f, p: f.to_csv(p, index=False), {"compression": "zip"}),
    "t.csv.zst": (_zstd, {"format": "CSV", "compression": "zstd"}),
    "t.json": (lambda f, p: f.to_json(p, orient="records"), {"format": "JSON"}),
    "columns.json": (lambda f, p: f.to_json(p, orient="columns"), {"format": "JSON"}),
    "lines.json": (
        lambda f, p: f.to_json(p, orient="records", lines=True),
        {"format": "JSON Lines"},
    ),
    "t.jsonl": (lambda f, p: f.to_json(p, orient="records", lines=True), {"format": "JSON Lines"}),
    "t.json.gz": (lambda f, p: f.to_json(p, orient="records"), {"compression": "gzip"}),
    "t.xlsx": (
        _excel,
        {
            "format": "Excel",
            "sheet": "data",
            "sheets": [{"name": "notes", "empty": True}, {"name": "data", "empty": False}],
        },
    ),
    "t.parquet": (lambda f, p: f.to_parquet(p), {"format": "Parquet", "total_rows": 5}),
    "t.feather": (lambda f, p: f.to_feather(p), {"format": "Feather", "total_rows": 5}),
}


@pytest.mark.parametrize("nrows", [None, 2])
@pytest.mark.parametrize("name", list(WRITERS))
def test_every_format_reads_the_same_table(tmp_path: Path, name: str, nrows: int | None) -> None:
    write, expected_info = WRITERS[name]
    write(TABLE, tmp_path / name)
    info: dict[str, object] = {}
    frame = read_table(str(tmp_path / name), info, nrows=nrows)
    expected = TABLE if nrows is None else TABLE.head(nrows)
    pd.testing.assert_frame_equal(frame.reset_index(drop=True), expected)
    assert info.items() >= expected_info.items()


def test_a_named_sheet_is_read_and_a_missing_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "book.xlsx"
    with pd.ExcelWriter(path) as writer:
        pd.DataFrame({"note": ["x"]}).to_excel(writer, sheet_name="notes", index=False)
        TABLE.to_excel(writer, sheet_name="data", index=False)
    info: dict[str, object] = {}
    assert list(read_table(path, info)) == ["note"]  # the first sheet with a data row
    pd.testing.assert_frame_equal(read_table(path, info, sheet="data"), TABLE)
    assert info["sheet"] == "data"
    with pytest.raises(ValueError, match=r"has no sheet 'wines'; its sheets are: notes, data"):
        read_table(path, {}, sheet="wines")


def test_a_file_name_says_its_format_and_compression() -> None:
    assert table_format("a/b/Wine.CSV.GZ") == ("CSV", "gzip")
    assert table_format("wine.xls") == ("Excel", None)
    assert table_format("wine.ndjson") == ("JSON Lines", None)
    assert table_format("wine.data") == ("text table", None)  # read as text, as before


def test_the_prefixed_source_runs_on_its_own(tmp_path: Path) -> None:
    TABLE.to_csv(tmp_path / "t.csv.gz", index=False)
    source = reader_source("_bcc_")
    assert "def read_" not in source and "def _bcc_read_table(" in source
    namespace: dict[str, object] = {"pd": pd, "io": io, "csv": csv, "os": os}
    exec(source, namespace)  # what the notebook's loading cell defines
    info: dict[str, object] = {}
    frame = namespace["_bcc_read_table"](str(tmp_path / "t.csv.gz"), info)  # type: ignore[operator]
    pd.testing.assert_frame_equal(frame, TABLE)
    assert info == {
        "format": "CSV",
        "compression": "gzip",
        "encoding": "utf-8-sig",
        "separator": ",",
    }
