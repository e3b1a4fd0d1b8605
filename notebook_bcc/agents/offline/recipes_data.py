"""Data-stage code recipes: integrity checks and cleaning, plus shared code snippets.

Builders return ``(markdown, code template)`` pairs; :mod:`recipes` fills the ``__TARGET__``,
``__TASK__`` and ``__SEED__`` placeholders and wraps them into cells. Pure text: nothing here
touches the data.
"""

from __future__ import annotations

from notebook_bcc.agents.offline.context import RecipeContext
from notebook_bcc.agents.offline.templates.loader import template

Pairs = list[tuple[str, str]]

# Resolves TARGET against a frame's columns, tolerating case/space/punctuation differences.
TARGET_SNIPPET = template("data_target_snippet.py")


# Helpers for the closing line of every recipe's last cell: one plain-language sentence that
# starts with "Result: " and states the step's key numbers (the behavior reflector quotes it).
RESULT_HELPERS = template("data_result_helpers.py")


# Column-type helpers shared by the later cells, defined once in the setup cell.
HELPERS = template("data_helpers.py")


# Closing result line of the integrity cell (both variants): built from ``integrity_report``.
INTEGRITY_RESULT = template("data_integrity_result.py")


# ---------------------------------------------------------------------- integrity_checks

INTEGRITY_V0 = (
    "# Analysis parameters, set once for the notebook; the target name is matched to the columns."
    + TARGET_SNIPPET.replace("FRAME", "raw_dataset")
    + template("data_integrity_v0.py")
    + INTEGRITY_RESULT
)

INTEGRITY_V1 = (
    r"""
import re
"""
    + TARGET_SNIPPET.replace("FRAME", "raw_dataset")
    + template("data_integrity_v1.py")
    + INTEGRITY_RESULT
)


def integrity_checks(ctx: RecipeContext) -> Pairs:
    target = f" and the target `{ctx.target}`" if ctx.target else ""
    if ctx.variant:
        return [
            (
                "Check data integrity with simple, per-column guarded tests: missing values, "
                f"duplicates, constant and ID-like columns, numbers or dates stored as text{target}.",
                INTEGRITY_V1,
            )
        ]
    return [
        (
            "Check the integrity of `raw_dataset` before touching it: missing values per column, "
            "exact duplicate rows, constant columns, ID-like columns (unique keys that carry no "
            "signal), text columns that actually hold numbers (currency, percent, thousands "
            f"separators) or dates{target}. The findings go into `integrity_report`.",
            INTEGRITY_V0,
        )
    ]


# Closing result line of the cleaning cell (both variants): column changes are read off
# ``raw_dataset`` versus ``clean_dataset``; each variant lists its other actions in
# ``_bcc_notes``.
CLEAN_RESULT = template("data_clean_result.py")


# ---------------------------------------------------------------------------- clean_data

CLEAN_V0 = template("data_clean_v0.py") + CLEAN_RESULT

CLEAN_V1 = (
    TARGET_SNIPPET.replace("FRAME", "raw_dataset") + template("data_clean_v1.py") + CLEAN_RESULT
)


def clean_data(ctx: RecipeContext) -> Pairs:
    target = (
        f" Rows whose target `{ctx.target}` is missing are dropped; the target is never dropped."
        if ctx.target
        else ""
    )
    if ctx.variant:
        return [
            (
                "Clean the data with simple guarded conversions: numbers stored as text, dates, "
                "constant columns, and duplicate rows when they are the same records." + target,
                CLEAN_V1,
            )
        ]
    return [
        (
            "Clean `raw_dataset` into `clean_dataset`, acting on the integrity findings: strip "
            "stray whitespace, convert text columns holding numbers (currency and percent signs, "
            "thousands separators; a percentage keeps its number), parse date columns, drop empty "
            "or constant columns, and drop exact duplicate rows only when an ID column shows they "
            "are the same records or they are most of the table (otherwise they may be distinct "
            "records, and are kept)." + target + " Every action is recorded in `cleaning_log`.",
            CLEAN_V0,
        )
    ]
