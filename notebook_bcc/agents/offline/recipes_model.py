"""Modelling code recipes: feature preparation, model selection, hold-out, stability.

Builders return ``(markdown, code template)`` pairs; :mod:`recipes` fills the placeholders and
wraps them into cells. Pure text: nothing here imports pandas or scikit-learn.
"""

from __future__ import annotations

from notebook_bcc.agents.offline.context import RecipeContext
from notebook_bcc.agents.offline.recipes_data import TARGET_SNIPPET
from notebook_bcc.agents.offline.templates.loader import template

Pairs = list[tuple[str, str]]

_NO_TARGET = template("model__no_target.py")

# Rebuilds the CV splitter used in model selection for a given seed.
CV_SNIPPET = template("model_cv_snippet.py")


# Closing result line of the model comparison cell (both variants).
COMPARE_RESULT = template("model_compare_result.py")

PREPARE_V0 = template("model_prepare_v0.py")

COMPARE_V0 = (
    template("model_compare_v0_2.py")
    + CV_SNIPPET
    + template("model_compare_v0_1.py")
    + COMPARE_RESULT
)

#: a fork's branch (``RecipeContext.family``): the comparison keeps the baseline and one family
COMPARE_FAMILY = (
    template("model_compare_v0_2.py")
    + template("model_compare_family.py")
    + CV_SNIPPET
    + template("model_compare_v0_1.py")
    + COMPARE_RESULT
)

#: the families a fork of the model comparison runs, one branch each: (family, its models)
FAMILIES = (
    ("linear", "a regularised linear model (median imputation, scaling, one-hot categories)"),
    ("boosting", "histogram gradient boosting (native missing values, ordinal categories)"),
)

PREPARE_V1 = (
    r"""
import re
import warnings

from sklearn.model_selection import train_test_split
"""
    + TARGET_SNIPPET.replace("FRAME", "clean_dataset")
    + template("model_prepare_v1.py")
)

COMPARE_V1 = template("model_compare_v1.py") + COMPARE_RESULT


def model_selection(ctx: RecipeContext) -> Pairs:
    """Feature preparation with leakage guards, hold-out split, and CV model comparison."""
    if not ctx.target:
        return [("There is no target column, so no model is selected.", _NO_TARGET)]
    metric = "accuracy" if ctx.task == "classification" else "R²"
    if ctx.variant:
        return [
            (
                f"Prepare a defensive feature set for predicting `{ctx.target}`: numeric columns "
                "only (ID-like and constant ones removed), then a seeded 80/20 split.",
                PREPARE_V1,
            ),
            (
                "Compare a baseline, a linear model and gradient boosting, each behind a median "
                f"imputer, with shuffled 5-fold cross-validation ({metric}) on the training part.",
                COMPARE_V1,
            ),
        ]
    compare = (
        "Compare three models with seeded 5-fold cross-validation on the training part "
        f"(metric: {metric}): a baseline that ignores the features, a regularised linear "
        "model (median imputation, scaling, one-hot categories) and histogram gradient "
        "boosting (native missing values, ordinal categories). Stratified folds are used "
        "when every class has at least five training rows. Results go to "
        "`model_comparison`; the best mean score names `best_model_name`.",
        COMPARE_V0,
    )
    if ctx.family:
        models = dict(FAMILIES)[ctx.family]
        compare = (
            f"This branch compares {models} with a baseline that ignores the features, by "
            f"seeded 5-fold cross-validation on the training part (metric: {metric}; "
            "stratified when every class has at least five training rows). Results go to "
            "`model_comparison`; the better mean score names `best_model_name`.",
            COMPARE_FAMILY.replace("__FAMILY__", repr(ctx.family)),
        )
    return [
        (
            f"Prepare the features for predicting `{ctx.target}` ({ctx.task}). Leakage guards "
            "exclude ID-like columns, columns almost perfectly correlated with the target "
            "(|r| > 0.98), categories that map one-to-one onto it, and free-text columns; dates "
            "become numeric year/month/day-of-year parts. 20% of the rows are held out first "
            "(seeded; stratified when every class has at least two rows) as "
            "`X_test`/`y_test` and stay untouched until the final evaluation.",
            PREPARE_V0,
        ),
        compare,
    ]


# Closing result line of the hold-out cell (both variants); ``_bcc_extra`` adds the variant's
# own measurements.
HOLDOUT_RESULT = template("model_holdout_result.py")

HOLDOUT_V0 = template("model_holdout_v0.py") + HOLDOUT_RESULT

HOLDOUT_V1 = template("model_holdout_v1.py") + HOLDOUT_RESULT


def holdout_evaluation(ctx: RecipeContext) -> Pairs:
    """Refit the chosen model and score it once on the untouched hold-out set."""
    if not ctx.target:
        return [("There is no target column, so there is nothing to evaluate.", _NO_TARGET)]
    if ctx.variant:
        return [
            (
                "Refit the selected model on the training part and score it once on the hold-out "
                "set, next to the baseline that ignores the features.",
                HOLDOUT_V1,
            )
        ]
    return [
        (
            "Refit the best cross-validated model on the whole training part as `final_model` "
            "and score it once on the untouched 20% hold-out set, next to the baseline. "
            "`final_metrics` records the CV and test scores; a confusion matrix or an "
            "actual-vs-predicted plot goes to `outputs/holdout.png`, and permutation importance "
            "on the hold-out set shows which features the model relies on "
            "(`feature_importance`).",
            HOLDOUT_V0,
        )
    ]


# Closing result line of the stability cell (both variants), read off ``stability_report``.
STABILITY_RESULT = template("model_stability_result.py")

STABILITY_V0 = template("model_stability_v0.py") + STABILITY_RESULT

STABILITY_V1 = template("model_stability_v1.py") + STABILITY_RESULT


def stability_check(ctx: RecipeContext) -> Pairs:
    """Bootstrap the hold-out score and repeat CV under other seeds."""
    if not ctx.target:
        return [("There is no target column, so there is no model to stress-test.", _NO_TARGET)]
    if ctx.variant:
        return [
            (
                "Check stability with plain loops: 20 bootstrap resamples of the hold-out "
                "predictions and shuffled 5-fold CV under three seeds, each guarded.",
                STABILITY_V1,
            )
        ]
    return [
        (
            "Check how stable the result is (PCS: stability). The hold-out score is recomputed "
            "on 20 bootstrap resamples of the test set (mean, spread, 5th/95th percentiles), and "
            "cross-validation of the chosen model is repeated with two more seeds (new folds and "
            "model randomness). Results go to `stability_report`.",
            STABILITY_V0,
        )
    ]
