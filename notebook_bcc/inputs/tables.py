"""The robust text-table reader, shared by the offline analyst's loading cell and the data
preview the planners see (so both read a file the same way).

``read_delimited`` is plain Python with no import of the package: the offline analyst puts its
source (``READER_SOURCE``) into the notebook, where ``pd``, ``io`` and ``csv`` are imported by
the set-up cell, so the notebook stays self-contained.
"""

from __future__ import annotations

import csv
import inspect
import io

import pandas as pd

__all__ = ["read_delimited", "READER_SOURCE"]


def read_delimited(path, info, nrows=None):  # noqa: ANN001, ANN201 - kept plain for the notebook
    """Read a text table: UTF-8 (with BOM) then latin-1; the delimiter among , tab ; | that
    yields the most columns in the first 200,000 characters (tab only for .tsv). Malformed
    lines are skipped with the python engine, and said so. ``info`` receives the encoding and
    separator used; ``nrows`` bounds the rows read."""
    problems = []
    tab_only = str(path).lower().endswith(".tsv")
    for encoding in ("utf-8-sig", "latin-1"):
        try:
            with open(path, encoding=encoding, newline="") as handle:
                sample = handle.read(200_000)
            if len(sample) == 200_000:
                sample = sample[: max(sample.rfind("\n"), sample.rfind("\r")) + 1] or sample
            scores = {}
            for sep in ["\t"] if tab_only else [",", "\t", ";", "|"]:
                if sep in sample:
                    try:
                        probe = pd.read_csv(
                            io.StringIO(sample), sep=sep, nrows=200, skipinitialspace=True
                        )
                        scores[sep] = probe.shape[1]
                    except (pd.errors.ParserError, ValueError, csv.Error):
                        continue
            sep = max(scores, key=scores.get) if scores else ","
            try:
                frame = pd.read_csv(
                    path,
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
                    path,
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


READER_SOURCE: str = inspect.getsource(read_delimited).replace(
    "  # noqa: ANN001, ANN201 - kept plain for the notebook", ""
)
