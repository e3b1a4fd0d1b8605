"""The one table reader, shared by the offline analyst's loading cell and the data preview the
planners see (so both read a file the same way).

``read_table(path, info, nrows=None, sheet=None)`` picks the reader from the file name: text
tables (``.csv .tsv .txt .dat .tab``, also compressed with ``.gz .bz2 .xz .zip .zst``), Excel
(``.xlsx .xlsm .xls``), Parquet (``.parquet .pq``), Feather / Arrow IPC (``.feather .arrow``),
JSON (``.json``) and JSON Lines (``.jsonl .ndjson``). Any other name is read as a text table.

The reader functions are plain Python with no import of the package (and other imports inside
their bodies): the offline analyst puts their source (``READER_SOURCE``, or with every name
prefixed, ``reader_source("_bcc_")``) into the notebook, where ``pd``, ``io``, ``csv`` and
``os`` are imported by the set-up cell, so the notebook stays self-contained.
"""

from __future__ import annotations

import csv
import inspect
import io
import os
import re

import pandas as pd

__all__ = [
    "READER_SOURCE",
    "TABLE_EXTENSIONS",
    "TEXT_FORMATS",
    "is_table_file",
    "open_decompressed",
    "read_delimited",
    "read_table",
    "reader_source",
    "table_format",
]

#: the formats ``read_delimited`` reads (the others have readers of their own)
TEXT_FORMATS = ("CSV", "TSV", "text table")
#: the extensions ``table_format`` names (any other is read as a text table)
TABLE_EXTENSIONS = (
    *(".csv", ".tsv", ".txt", ".dat", ".tab"),
    *(".xlsx", ".xlsm", ".xls", ".parquet", ".pq", ".feather", ".arrow"),
    *(".json", ".jsonl", ".ndjson"),
)


def table_format(path):
    """The format a file name says ("CSV", "TSV", "text table", "Excel", "Parquet", "Feather",
    "JSON", "JSON Lines") and its compression ("gzip", "bz2", "xz", "zip", "zstd" or None).
    A name without a known extension is a text table."""
    name = os.path.basename(str(path)).lower()
    compression = None
    for suffix, method in (
        (".gz", "gzip"),
        (".bz2", "bz2"),
        (".xz", "xz"),
        (".zip", "zip"),
        (".zst", "zstd"),
    ):
        if name.endswith(suffix):
            name, compression = name[: -len(suffix)], method
            break
    formats = {
        ".csv": "CSV",
        ".tsv": "TSV",
        ".txt": "text table",
        ".dat": "text table",
        ".tab": "text table",
        ".xlsx": "Excel",
        ".xlsm": "Excel",
        ".xls": "Excel",
        ".parquet": "Parquet",
        ".pq": "Parquet",
        ".feather": "Feather",
        ".arrow": "Feather",
        ".json": "JSON",
        ".jsonl": "JSON Lines",
        ".ndjson": "JSON Lines",
    }
    return formats.get(os.path.splitext(name)[1], "text table"), compression


def is_table_file(path: object) -> bool:
    """Whether the file name has an extension ``read_table`` knows (perhaps compressed)."""
    name = os.path.basename(str(path)).lower()
    name = re.sub(r"\.(gz|bz2|xz|zip|zst)$", "", name)
    return os.path.splitext(name)[1] in TABLE_EXTENSIONS


def open_decompressed(path, compression):
    """A binary file object of the (decompressed) bytes of a file: gzip, bz2, xz and zip (one
    member) from the standard library; zstd with the zstandard package, else pyarrow's codec."""
    if compression == "gzip":
        import gzip

        return gzip.open(path, "rb")
    if compression == "bz2":
        import bz2

        return bz2.open(path, "rb")
    if compression == "xz":
        import lzma

        return lzma.open(path, "rb")
    if compression == "zip":
        import zipfile

        archive = zipfile.ZipFile(path)
        members = [m for m in archive.namelist() if not m.endswith("/")]
        if len(members) != 1:
            raise ValueError(f"{path} holds {len(members)} files; a zipped table holds one")
        return archive.open(members[0])
    if compression == "zstd":
        try:
            import zstandard

            return zstandard.open(path, "rb")
        except ImportError:
            import pyarrow

            return pyarrow.input_stream(str(path), compression="zstd")
    return open(path, "rb")


def table_source(path, compression):
    """What pandas reads: the path itself (pandas decompresses gzip, bz2, xz and zip), or for
    zstd the decompressed bytes (pandas would need the zstandard package)."""
    if compression != "zstd":
        return path
    with open_decompressed(path, compression) as handle:
        return io.BytesIO(handle.read())


def read_delimited(path, info, nrows=None):
    """Read a text table, perhaps compressed: UTF-8 (with BOM) then latin-1; the delimiter among
    , tab ; | that yields the most columns in the first 200,000 characters (tab only for .tsv).
    Malformed lines are skipped with the python engine, and said so. ``info`` receives the
    encoding and separator used; ``nrows`` bounds the rows read."""
    problems = []
    text_format, compression = table_format(path)
    tab_only = text_format == "TSV"
    for encoding in ("utf-8-sig", "latin-1"):
        try:
            with io.TextIOWrapper(
                open_decompressed(path, compression), encoding=encoding, newline=""
            ) as handle:
                sample = handle.read(200_000)
            if len(sample) == 200_000:
                sample = sample[: max(sample.rfind("\n"), sample.rfind("\r")) + 1] or sample
            scores = {}
            for sep in ["\t"] if tab_only else [",", "\t", ";", "|"]:
                if sep in sample:
                    try:
                        probe = pd.read_csv(
                            io.StringIO(sample),
                            sep=sep,
                            nrows=200,
                            skipinitialspace=True,
                        )
                        scores[sep] = probe.shape[1]
                    except (pd.errors.ParserError, ValueError, csv.Error):
                        continue
            sep = max(scores, key=scores.get) if scores else ","
            try:
                frame = pd.read_csv(
                    table_source(path, compression),
                    sep=sep,
                    encoding=encoding,
                    skipinitialspace=True,
                    low_memory=False,
                    nrows=nrows,
                )
            except pd.errors.ParserError as exc:
                print(
                    f"Malformed lines ({exc}); re-reading with the python engine, skipping bad lines."
                )
                info["skipped_bad_lines"] = True
                frame = pd.read_csv(
                    table_source(path, compression),
                    sep=sep,
                    encoding=encoding,
                    skipinitialspace=True,
                    engine="python",
                    on_bad_lines="skip",
                    nrows=nrows,
                )
            info.update(encoding=encoding, separator=sep)
            return frame
        except UnicodeDecodeError as exc:
            problems.append(f"{encoding}: {exc}")
    raise ValueError(f"Could not decode {path}: {problems}")


def read_excel_sheet(path, info, nrows=None, sheet=None):
    """Read one sheet of a workbook: ``sheet`` if given (a ValueError names the sheets there
    are when it is missing), else the first sheet with at least one data row. ``info``
    receives the sheet read and ``sheets``: every sheet's name, in order, and whether it is
    empty."""
    with pd.ExcelFile(path) as workbook:
        names = [str(name) for name in workbook.sheet_names]
        empty = {
            str(name): pd.read_excel(workbook, sheet_name=name, nrows=1).shape[0] == 0
            for name in workbook.sheet_names
        }
        info["sheets"] = [{"name": name, "empty": empty[name]} for name in names]
        listing = ", ".join(f"{n} (empty)" if empty[n] else n for n in names)
        if sheet is not None:
            if str(sheet) not in names:
                raise ValueError(
                    f"{os.path.basename(str(path))} has no sheet {str(sheet)!r}; "
                    f"its sheets are: {listing}"
                )
            chosen = str(sheet)
        else:
            with_rows = [name for name in names if not empty[name]]
            if not with_rows:
                raise ValueError(
                    f"{os.path.basename(str(path))} has no sheet with a data row ({listing})"
                )
            chosen = with_rows[0]
        info["sheet"] = chosen
        return pd.read_excel(
            workbook, sheet_name=workbook.sheet_names[names.index(chosen)], nrows=nrows
        )


def read_parquet_rows(path, info, nrows=None):
    """Read a Parquet file; with ``nrows``, only its first batch of that many rows. ``info``
    receives ``total_rows`` from the file's metadata."""
    import pyarrow
    import pyarrow.parquet

    with pyarrow.parquet.ParquetFile(path) as parquet:
        info["total_rows"] = parquet.metadata.num_rows
        if nrows is None:
            return pd.read_parquet(path)
        batch = next(parquet.iter_batches(batch_size=nrows), None)
        schema = parquet.schema_arrow
        table = pyarrow.Table.from_batches([] if batch is None else [batch], schema=schema)
    return table.to_pandas()


def read_feather_rows(path, info, nrows=None):
    """Read a Feather (Arrow IPC) file; with ``nrows``, only the record batches holding the
    first rows. ``info`` receives ``total_rows`` when pyarrow can count them cheaply."""
    import pyarrow
    import pyarrow.ipc

    if nrows is None:
        frame = pd.read_feather(path)
        info["total_rows"] = len(frame)
        return frame
    with pyarrow.memory_map(str(path)) as source:
        try:
            reader = pyarrow.ipc.open_file(source)
        except pyarrow.ArrowInvalid:  # Feather version 1 is not an IPC file
            return pd.read_feather(path).head(nrows)
        batches, rows = [], 0
        for index in range(reader.num_record_batches):
            if rows >= nrows:
                break
            batches.append(reader.get_batch(index))
            rows += batches[-1].num_rows
        if hasattr(reader, "count_rows"):  # pyarrow 26: from the batches' metadata only
            info["total_rows"] = reader.count_rows()
        table = pyarrow.Table.from_batches(batches, schema=reader.schema).slice(0, nrows)
        return table.to_pandas()


def read_json_table(path, info, nrows=None):
    """Read JSON (records or columns orientation) or JSON Lines, perhaps compressed, keeping the
    file's value types. A .json file that holds JSON Lines ("Trailing data") is read as such,
    and ``info["format"]`` says so."""
    compression = table_format(path)[1]
    if info.get("format") != "JSON Lines":
        try:
            frame = pd.read_json(table_source(path, compression), dtype=False)
            return frame if nrows is None else frame.head(nrows)
        except ValueError as exc:
            if "Trailing data" not in str(exc):
                raise
        info["format"] = "JSON Lines"
    return pd.read_json(
        table_source(path, compression),
        lines=True,
        nrows=nrows,
        dtype=False,
    )


def read_table(path, info, nrows=None, sheet=None):
    """Read a data file into a DataFrame with the reader its name calls for (see
    ``table_format``). ``info`` receives ``format``, ``compression`` when compressed, and what
    the reader adds (text: ``encoding``, ``separator``; Excel: ``sheet``, ``sheets``);
    ``nrows`` bounds the rows read; ``sheet`` names the Excel sheet to read."""
    data_format, compression = table_format(path)
    info["format"] = data_format
    if compression:
        info["compression"] = compression
    if data_format == "Excel":
        return read_excel_sheet(path, info, nrows=nrows, sheet=sheet)
    if data_format == "Parquet":
        return read_parquet_rows(path, info, nrows=nrows)
    if data_format == "Feather":
        return read_feather_rows(path, info, nrows=nrows)
    if data_format in ("JSON", "JSON Lines"):
        return read_json_table(path, info, nrows=nrows)
    return read_delimited(path, info, nrows=nrows)


#: every function ``read_table`` needs, in the order they are defined
READER_FUNCTIONS = (
    table_format,
    open_decompressed,
    table_source,
    read_delimited,
    read_excel_sheet,
    read_parquet_rows,
    read_feather_rows,
    read_json_table,
    read_table,
)


def reader_source(prefix: str = "") -> str:
    """The source of the reader functions, each name (definition and calls) given ``prefix``."""
    source = "\n\n".join(inspect.getsource(function) for function in READER_FUNCTIONS)
    if not prefix:
        return source
    names = "|".join(function.__name__ for function in READER_FUNCTIONS)
    return re.sub(rf"(?<![\w.])({names})\(", rf"{prefix}\1(", source)


READER_SOURCE: str = reader_source()
