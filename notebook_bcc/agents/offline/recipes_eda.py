"""EDA code recipes (univariate and relationship views) and the final summary.

Builders return ``(markdown, code template)`` pairs; :mod:`recipes` fills the ``__TARGET__``,
``__TASK__`` and ``__SEED__`` placeholders and wraps them into cells. Pure text: nothing here
touches the data.
"""

from __future__ import annotations

from notebook_bcc.agents.offline.context import RecipeContext
from notebook_bcc.agents.offline.recipes_data import TARGET_SNIPPET
from notebook_bcc.agents.offline.templates.loader import template

Pairs = list[tuple[str, str]]

# Column groups used by the EDA cells (variant 0); the helper is defined in the setup cell.
COLUMN_GROUPS = r"""
numeric_cols, date_cols, category_cols = _bcc_column_groups(clean_dataset)
_id_cols = set((globals().get("integrity_report") or {}).get("id_like_columns", []))
"""

# --------------------------------------------------------------------------- univariate


# Closing result line of the univariate cell (both variants), computed from ``clean_dataset``.
UNIVARIATE_RESULT = template("eda_univariate_result.py")

UNIVARIATE_V0 = (
    r"""
import math
"""
    + COLUMN_GROUPS
    + template("eda_univariate_v0.py")
    + UNIVARIATE_RESULT
)

UNIVARIATE_V1 = template("eda_univariate_v1.py") + UNIVARIATE_RESULT


def univariate_eda(ctx: RecipeContext) -> Pairs:
    """Summary statistics, histograms and category counts."""
    if ctx.variant:
        return [
            (
                "Summarise each numeric column and draw histograms with a simple, guarded "
                "plotting loop (the figure file is written even if plotting fails).",
                UNIVARIATE_V1,
            )
        ]
    return [
        (
            "Look at each variable on its own: `numeric_summary` holds `describe()` statistics "
            "plus missing counts and skewness; histograms of up to 12 numeric columns are saved "
            "to `outputs/distributions.png`; categorical columns with at most 30 levels show "
            "their most frequent values.",
            UNIVARIATE_V0,
        )
    ]


# ------------------------------------------------------------------------- relationships


# Closing result line of the relationship cell (both variants). Each variant defines
# ``_bcc_labels`` (association measure per feature) and ``_bcc_extra`` (its own findings).
RELATIONSHIP_RESULT = template("eda_relationship_result.py")

RELATIONSHIP_CORR_V0 = COLUMN_GROUPS + template("eda_relationship_corr_v0.py")

RELATIONSHIP_TARGET_V0 = template("eda_relationship_target_v0.py")

RELATIONSHIP_TIME_V0 = template("eda_relationship_time_v0.py") + RELATIONSHIP_RESULT

RELATIONSHIP_V1 = (
    r"""
import re
"""
    + TARGET_SNIPPET.replace("FRAME", "clean_dataset")
    + template("eda_relationship_v1.py")
    + RELATIONSHIP_RESULT
)


def relationship_eda(ctx: RecipeContext) -> Pairs:
    """Correlations, target associations and time-series views."""
    if ctx.variant:
        return [
            (
                "Relationships with a simpler, guarded approach: numeric correlations, a target "
                "plot and a time plot, each wrapped so one failure does not stop the others.",
                RELATIONSHIP_V1,
            )
        ]
    target = (
        f"For the target `{ctx.target}`, plot the "
        + ("class counts" if ctx.task == "classification" else "distribution")
        + " (`outputs/target.png`) and rank the features by their association with it "
        "(`target_associations`: |r| or the correlation ratio for numbers, Cramér's V for "
        "categories)."
        if ctx.target
        else "Without a target, look for associations between categorical columns and for "
        "the numeric columns that differ most between category levels (`group_differences`)."
    )
    return [
        (
            "Study how variables relate, starting with the Pearson `correlation_matrix` of the "
            "numeric columns (heatmap in `outputs/correlations.png`) and its strongest pairs "
            "(`strongest_correlations`).",
            RELATIONSHIP_CORR_V0,
        ),
        (target.strip(), RELATIONSHIP_TARGET_V0),
        (
            "If the table has a date column, numeric series are plotted over time "
            "(`outputs/timeseries.png`) with their yearly trend and seasonal amplitude "
            "(`timeseries_summary`). The step's findings close with one summary line.",
            RELATIONSHIP_TIME_V0,
        ),
    ]


# ------------------------------------------------------------------------------ summary


# Closing result line of the summary cell (both variants), read off ``analysis_summary``.
SUMMARY_RESULT = template("eda_summary_result.py")

SUMMARY_V0 = template("eda_summary_v0.py") + SUMMARY_RESULT

SUMMARY_V1 = template("eda_summary_v1.py") + SUMMARY_RESULT


def final_summary(ctx: RecipeContext) -> Pairs:
    """A markdown summary built from the variables that exist in the kernel."""
    answers = [(ANSWERS_TEXT, ANSWERS)] if ctx.questions else []
    if ctx.variant:
        return [("Write a plain summary of what was done and measured.", SUMMARY_V1), *answers]
    return [
        (
            "Summarise the analysis from the live results (not from memory): data size, "
            "cleaning actions, data-quality issues, the main findings and, when a model was "
            "fitted, its cross-validated and hold-out scores and their stability. The text is "
            "kept in `analysis_summary`.",
            SUMMARY_V0,
        ),
        *answers,
    ]


ANSWERS_TEXT = (
    "The problem asks specific questions. The offline analyst answers from `clean_dataset` "
    "those of the forms *which (group) has the most / least (number)* (the total when the "
    "question speaks of spending, sales or totals, else the mean, or the number of rows when "
    "no number is named; the top rows when each value of a name is one row), *which "
    "(measurement) differs most between (a) and (b)*, *the correlation of (a) and (b)*, "
    "*which column is most correlated with (a)*, *how many rows have (a) above (number)* and, "
    "from a fitted model, what determines the target and the model's scores. Every other "
    "question is listed in `final_answers` as **not answered**, with the reason, rather than "
    "guessed; a model (`--model`) can answer them."
)

#: the table's forms of question, then the model's and the loop that answers each one
ANSWERS = template("eda_answers_table.py") + template("eda_answers.py")


FOLLOW_UP_TEXT = (
    "A follow-up question, answered from `clean_dataset` as the problem's questions were "
    "(*which (group) has the most / least (number)*, the correlation of two columns, ...); "
    "any other is listed as **not answered**, with the reason. Its answer is added to "
    "`final_answers`; the earlier answers stay."
)

#: the answers cell, adding to ``final_answers`` instead of starting it
FOLLOW_UP_ANSWERS = ANSWERS.replace(
    "\nfinal_answers = {}\n",
    '\nfinal_answers = dict(globals().get("final_answers") or {})  # the earlier answers stay\n',
)


def follow_up_answers(ctx: RecipeContext) -> Pairs:
    """A follow-up's questions (``ctx.questions``), answered into ``final_answers``."""
    return [(FOLLOW_UP_TEXT, FOLLOW_UP_ANSWERS)]


FOLLOW_UP_MODEL = template("follow_up_model.py")


def follow_up_model(ctx: RecipeContext) -> Pairs:
    """A follow-up that asks for a model of another column (``ctx.target``): a cross-validated
    linear pipeline against a baseline, its score the follow-up's answer."""
    return [
        (
            f"A follow-up asks for a model of `{ctx.target}`. One cross-validated linear "
            "pipeline (imputation, scaling, one-hot encoding) on the cleaned table, against a "
            "baseline that ignores the features; the run's own model and `final_metrics` stay "
            "as they were. The score is added to `final_answers`.",
            FOLLOW_UP_MODEL,
        )
    ]
