"""The Python modules a problem names, so the kernel can say whether it has them before anyone
plans with them (the environment line every planner and the generator see).

A name is reported only when it is one: from code (an ``import x`` or ``from x import`` line),
or, for a name in prose or in backticks (``the scipy.stats library``, ``pmdarima's auto_arima``,
`` `statsmodels.api.OLS` ``), when it is a module or distribution known here: installed, in the
standard library, or one of the analysis packages below. English words (``for each
individual``), parts of a hyphenated name (``learn`` of scikit-learn) and data file names
(`` `caschool.csv` ``) are never reported, so the environment line never says a module "NOT
importable" that nobody asked for. A dotted name is kept whole (``scipy.stats``).
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from importlib import metadata

__all__ = ["KNOWN_ANALYSIS_PACKAGES", "is_known_module", "named_modules"]

#: Analysis packages a problem may name that need not be installed here: naming one is a fact
#: worth reporting ("pmdarima NOT importable") even where it is absent.
KNOWN_ANALYSIS_PACKAGES = frozenset(
    [
        "numpy",
        "pandas",
        "scipy",
        "statsmodels",
        "sklearn",
        "scikit-learn",
        "matplotlib",
        "seaborn",
        "plotly",
        "bokeh",
        "altair",
        "xgboost",
        "lightgbm",
        "catboost",
        "pmdarima",
        "prophet",
        "sktime",
        "darts",
        "tsfresh",
        "lifelines",
        "pingouin",
        "linearmodels",
        "arch",
        "networkx",
        "shap",
        "lime",
        "optuna",
        "hyperopt",
        "imblearn",
        "imbalanced-learn",
        "category_encoders",
        "polars",
        "pyarrow",
        "openpyxl",
        "xlrd",
        "duckdb",
        "sqlalchemy",
        "dask",
        "numba",
        "sympy",
        "patsy",
        "tensorflow",
        "keras",
        "torch",
        "pytorch",
        "jax",
        "transformers",
        "nltk",
        "spacy",
        "gensim",
        "textblob",
        "wordcloud",
        "geopandas",
        "shapely",
        "folium",
        "pymc",
        "arviz",
        "emcee",
        "umap",
        "hdbscan",
        "missingno",
        "yellowbrick",
        "mlxtend",
        "kmodes",
        "scikit-posthocs",
        "factor_analyzer",
        "semopy",
        "pygam",
        "ruptures",
        "statsforecast",
        "neuralprophet",
    ]
)

_DATA_SUFFIX = re.compile(
    r"\.(?:csv|tsv|txt|json|jsonl|xlsx?|parquet|feather|pkl|pickle|gz|zip|h5|sav|dta|sas7bdat)\b",
    re.I,
)

#: how code names a module (always reported, present or not)
_CODE_CUES = (
    r"(?:^|;|`)\s*import\s+([A-Za-z_][\w.]*)",
    r"\bfrom\s+([A-Za-z_][\w.]*)\s+import\b",
)
#: how prose names one (reported only when the name is known here)
_PROSE_CUES = (
    r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.[A-Za-z_]\w*(?:\(\))?`",
    r"(?<![\w.-])([a-z][a-z0-9_]*(?:[.-][a-z0-9_]+)*)'s\s",
    r"(?<![\w.-])([A-Za-z][A-Za-z0-9_]*(?:[.-][A-Za-z0-9_]+)*)\s+(?:library|package|module)\b",
)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


@functools.cache
def _installed(name: str) -> bool:
    """Whether ``name`` is a top-level module importable here (found, not imported), or the
    name of an installed distribution."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return True
    try:
        if name.isidentifier() and importlib.util.find_spec(name) is not None:
            return True
    except (ImportError, ValueError):
        pass
    try:
        metadata.distribution(name)
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return True


def is_known_module(name: str) -> bool:
    """Whether ``name`` (its top-level part for a dotted name) is a module or distribution
    installed here, in the standard library, or a known analysis package."""
    top = name.split(".")[0]
    known = {_norm(n) for n in KNOWN_ANALYSIS_PACKAGES}
    return _norm(top) in known or _norm(name) in known or _installed(top)


def named_modules(text: str, limit: int = 10) -> tuple[str, ...]:
    """The Python modules the problem names, in the order it names them (at most ``limit``)."""
    found: dict[str, int] = {}
    for cue in _CODE_CUES:
        for m in re.finditer(cue, text, flags=re.M):
            found.setdefault(m.group(1).rstrip("."), m.start())
    for cue in _PROSE_CUES:
        for m in re.finditer(cue, text, flags=re.M):
            name = m.group(1).rstrip(".")
            if _DATA_SUFFIX.search(m.group(0)) or not is_known_module(name):
                continue
            if any(_norm(n) == _norm(name) or n.startswith(name + ".") for n in found):
                continue  # named already, maybe spelt otherwise ("Scikit-learn", "Scikit-Learn")
            found.setdefault(name, m.start())
    # a module named whole and by a dotted part (scipy, scipy.stats): the dotted one says more
    names = [n for n in found if not any(o.startswith(n + ".") for o in found)]
    return tuple(sorted(names, key=found.__getitem__))[:limit]
