"""Code recipes for the offline analyst: pure text generation, no data access.

Each recipe takes a :class:`RecipeContext` and returns notebook cells (markdown explaining
what follows, then the code). The code runs in the run's Jupyter kernel, where the parameters
cell has defined ``user_submit_files``. Recipes build on the variables of earlier recipes in
:func:`behavior_sequence` order. ``variant >= 1`` yields a simpler, more defensive version of
the same step (same output variables) for use after a failed attempt.

Integrity and cleaning live in :mod:`recipes_data`, EDA and the summary in :mod:`recipes_eda`,
modelling in :mod:`recipes_model`; they return (markdown, code template) pairs wrapped here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from notebook_bcc.agents.offline import recipes_data, recipes_eda, recipes_model
from notebook_bcc.agents.offline.context import Cell, RecipeContext
from notebook_bcc.agents.offline.recipes_data import HELPERS, RESULT_HELPERS
from notebook_bcc.inputs.tables import READER_SOURCE


def fill(template: str, ctx: RecipeContext) -> str:
    """Substitute the context placeholders of a code template (values as Python literals)."""
    return (
        template.replace("__TARGET__", repr(ctx.target))
        .replace("__TASK__", repr(ctx.task))
        .replace("__SEED__", str(int(ctx.seed)))
        .replace("__QUESTIONS__", repr(list(ctx.questions)))
        .strip()
        + "\n"
    )


def pair(text: str, code: str, ctx: RecipeContext) -> tuple[Cell, Cell]:
    return Cell("text", text.strip()), Cell("code", fill(code, ctx))


def _wrap(
    build: Callable[[RecipeContext], Sequence[tuple[str, str]]],
) -> Callable[[RecipeContext], tuple[Cell, ...]]:
    """Turn a (markdown, code template) builder from a helper module into a recipe."""

    def recipe(ctx: RecipeContext) -> tuple[Cell, ...]:
        cells: list[Cell] = []
        for text, code in build(ctx):
            cells.extend(pair(text, code, ctx))
        return tuple(cells)

    recipe.__name__ = build.__name__
    recipe.__doc__ = build.__doc__
    return recipe


# --------------------------------------------------------------------------- load_data


# Imports, display options and the helper functions that every later step uses: defined once
# here (both variants), since each later step runs after loading. TARGET/TASK/SEED are set by
# the integrity checks, the first step that knows the target.
SETUP = (
    r"""
import csv
import io
import json
import os
import re
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

warnings.simplefilter(__WARNINGS__)
pd.set_option("display.width", 120)
pd.set_option("display.max_columns", 30)
os.makedirs("outputs", exist_ok=True)
"""
    + HELPERS
    + RESULT_HELPERS
)

SETUP_TEXT = (
    "Set up the analysis: imports, display options and the small helper functions the later "
    "steps share (text-to-number and date parsing, column groups, and the one-line `Result:` "
    "summary each step ends with)."
)

LOAD_RESULT = r"""
try:
    _bcc_kind = {".parquet": "Parquet", ".pq": "Parquet", ".xlsx": "Excel", ".xlsm": "Excel", ".xls": "Excel"}
    _bcc_seps = {",": "comma-separated", "\t": "tab-separated", ";": "semicolon-separated", "|": "pipe-separated"}
    if data_ext in _bcc_kind:
        _bcc_how = f"{_bcc_kind[data_ext]} file"
    elif load_info.get("encoding") is None:
        _bcc_how = f"{data_ext.lstrip('.').upper() or 'text'} file"
    else:
        _bcc_enc = {"utf-8-sig": "UTF-8", "latin-1": "Latin-1"}.get(load_info["encoding"], load_info["encoding"])
        _bcc_sep = load_info.get("separator")
        _bcc_how = f"{_bcc_enc}, " + _bcc_seps.get(_bcc_sep, "delimiter sniffed" if _bcc_sep in (None, "sniffed") else f"separator {_bcc_sep!r}")
    _bcc_text = (
        f"read {raw_dataset.shape[0]} rows and {raw_dataset.shape[1]} columns from {data_path} ({_bcc_how}); "
    )
    _bcc_k = raw_dataset.select_dtypes(include="number").shape[1]
    _bcc_text += f"{_bcc_k or 'none'} of them {'are' if _bcc_k > 1 else 'is'} numeric"
    if load_info.get("skipped_bad_lines"):
        _bcc_text += "; malformed lines were skipped"
    if _bcc_dropped_unnamed:
        _bcc_text += f"; dropped {_bcc_count(len(_bcc_dropped_unnamed), 'empty unnamed column')}"
except Exception as exc:
    _bcc_text = f"read {raw_dataset.shape[0]} rows and {raw_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
"""

READ_V0 = (
    r"""
data_path = str(user_submit_files[0])
data_ext = os.path.splitext(data_path)[1].lower()
load_info = {"path": data_path, "encoding": None, "separator": None}


"""
    + READER_SOURCE.replace("def read_delimited(", "def _bcc_read_delimited(")
    + r"""

if data_ext in (".parquet", ".pq"):
    raw_dataset = pd.read_parquet(data_path)
elif data_ext in (".xlsx", ".xlsm", ".xls"):
    raw_dataset = pd.read_excel(data_path)
elif data_ext == ".json":
    raw_dataset = pd.read_json(data_path)
else:
    raw_dataset = _bcc_read_delimited(data_path, load_info)
print(f"Read {data_path}: {raw_dataset.shape[0]} rows x {raw_dataset.shape[1]} columns "
      f"(encoding={load_info['encoding']}, separator={load_info['separator']!r})")
"""
)

PROFILE_V0 = (
    r"""
def _bcc_clean_headers(frame):
    # collapse whitespace/newlines, keep names unique, drop fully empty "Unnamed: N" columns,
    # and name a leading unnamed index column
    headers, seen = [], set()
    for position, name in enumerate(frame.columns):
        text = re.sub(r"\s+", " ", str(name).replace("\ufeff", "")).strip() or f"column_{position}"
        base, k = text, 1
        while text in seen:
            k += 1
            text = f"{base}_{k}"
        seen.add(text)
        headers.append(text)
    frame.columns = headers
    empty = [c for c in frame.columns if c.startswith("Unnamed:") and frame[c].isna().all()]
    frame = frame.drop(columns=empty)
    if len(frame.columns) and frame.columns[0].startswith("Unnamed:") and "index" not in frame.columns:
        frame = frame.rename(columns={frame.columns[0]: "index"})
    return frame, empty


raw_dataset, _bcc_dropped_unnamed = _bcc_clean_headers(raw_dataset)
data_profile = {
    "n_rows": int(raw_dataset.shape[0]),
    "n_cols": int(raw_dataset.shape[1]),
    "columns": {str(c): str(t) for c, t in list(raw_dataset.dtypes.items())[:200]},
}
if _bcc_dropped_unnamed:
    print(f"Dropped empty unnamed columns: {_bcc_dropped_unnamed}")
print("dtype counts:", raw_dataset.dtypes.astype(str).value_counts().to_dict())
display(raw_dataset.head())
"""
    + LOAD_RESULT
)

LOAD_V1 = (
    r"""
data_path = str(user_submit_files[0])
data_ext = os.path.splitext(data_path)[1].lower()
load_info = {"path": data_path, "encoding": "latin-1", "separator": "sniffed"}
if data_ext in (".parquet", ".pq"):
    raw_dataset = pd.read_parquet(data_path)
elif data_ext in (".xlsx", ".xlsm", ".xls"):
    raw_dataset = pd.read_excel(data_path)
else:
    # Several lenient readings (python engine, bad lines skipped); keep the widest table.
    _readings = {}
    for _sep in (None, ",", "\t", ";", "|"):
        try:
            _readings[_sep] = pd.read_csv(data_path, sep=_sep, engine="python", on_bad_lines="skip",
                                          encoding="latin-1", skipinitialspace=True)
        except Exception as exc:
            print(f"separator {_sep!r}: {exc}")
    _best = max(_readings, key=lambda k: (len(_readings[k]) > 0, _readings[k].shape[1], len(_readings[k])))
    raw_dataset = _readings[_best]
    load_info["separator"] = "sniffed" if _best is None else _best
    del _readings

_names = [re.sub(r"\s+", " ", str(c).replace("ï»¿", "").replace("\ufeff", "")).strip() for c in raw_dataset.columns]
_names = [n or f"column_{i}" for i, n in enumerate(_names)]
_names = [n if _names.index(n) == i else f"{n}_{i}" for i, n in enumerate(_names)]
raw_dataset.columns = _names
_bcc_dropped_unnamed = [c for c in _names if c.startswith("Unnamed:") and raw_dataset[c].isna().all()]
raw_dataset = raw_dataset.drop(columns=_bcc_dropped_unnamed)
if len(raw_dataset.columns) and raw_dataset.columns[0].startswith("Unnamed:") and "index" not in raw_dataset.columns:
    raw_dataset = raw_dataset.rename(columns={raw_dataset.columns[0]: "index"})
data_profile = {
    "n_rows": int(len(raw_dataset)),
    "n_cols": int(raw_dataset.shape[1]),
    "columns": {str(c): str(t) for c, t in list(raw_dataset.dtypes.items())[:200]},
}
print(f"Loaded {data_path}: {raw_dataset.shape[0]} rows x {raw_dataset.shape[1]} columns (latin-1, defensive read)")
print(raw_dataset.dtypes.astype(str).value_counts().to_dict())
display(raw_dataset.head())
"""
    + LOAD_RESULT
)


def load_data(ctx: RecipeContext) -> tuple[Cell, ...]:
    """Set up, read the first submitted file into ``raw_dataset`` and profile it."""
    if ctx.variant:
        return (
            *pair(SETUP_TEXT, SETUP.replace("__WARNINGS__", '"ignore"'), ctx),
            *pair(
                "Load the data file defensively: the Python parser sniffs the delimiter, decodes "
                "as latin-1 (which never fails), and skips malformed lines. Header names are "
                "cleaned.",
                LOAD_V1,
                ctx,
            ),
        )
    return (
        *pair(SETUP_TEXT, SETUP.replace("__WARNINGS__", '"ignore", FutureWarning'), ctx),
        *pair(
            "Read the first submitted data file into `raw_dataset`. The reader picks the format "
            "from the extension; for text tables it tries UTF-8 (with BOM) then latin-1 and "
            "chooses the delimiter (comma, tab, semicolon, pipe) that yields the most columns.",
            READ_V0,
            ctx,
        ),
        *pair(
            "Clean the header names (whitespace and line breaks, duplicates, empty `Unnamed` "
            "columns) and look at the first rows. `data_profile` keeps a small summary of the "
            "shape and column types.",
            PROFILE_V0,
            ctx,
        ),
    )


MODEL_BEHAVIORS = ("model_selection", "holdout_evaluation", "stability_check")
FULL_SEQUENCE = (
    "load_data",
    "integrity_checks",
    "clean_data",
    "univariate_eda",
    "relationship_eda",
    *MODEL_BEHAVIORS,
    "final_summary",
)

RECIPES: dict[str, Callable[[RecipeContext], tuple[Cell, ...]]] = {
    "load_data": load_data,
    "integrity_checks": _wrap(recipes_data.integrity_checks),
    "clean_data": _wrap(recipes_data.clean_data),
    "univariate_eda": _wrap(recipes_eda.univariate_eda),
    "relationship_eda": _wrap(recipes_eda.relationship_eda),
    "model_selection": _wrap(recipes_model.model_selection),
    "holdout_evaluation": _wrap(recipes_model.holdout_evaluation),
    "stability_check": _wrap(recipes_model.stability_check),
    "final_summary": _wrap(recipes_eda.final_summary),
}


def behavior_sequence(task: str) -> tuple[str, ...]:
    """Recipe keys in execution order; EDA-only problems skip the modelling behaviors."""
    if task in ("classification", "regression"):
        return FULL_SEQUENCE
    return tuple(k for k in FULL_SEQUENCE if k not in MODEL_BEHAVIORS)
