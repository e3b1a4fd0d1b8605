"""Reading the problem's intent from its wording (docs/problems.md, "Writing a problem")."""

from __future__ import annotations

import pytest

from notebook_bcc.inputs.problem import read_problem, resolve_target

COLUMNS = ["price", "mileage", "age", "region"]
PHRASINGS = [
    "Predict the price of a used car.",
    "What determines the price of a used car?",
    "what drives price?",
    "WHAT AFFECTS PRICE in this market",
    "What influences `price`?",
    "What explains price?",
    "Which factors matter for price?",
    "How does price depend on mileage and age?",
    "Estimate the price from the other columns.",
]


@pytest.mark.parametrize("text", PHRASINGS)
def test_each_accepted_phrasing_asks_for_a_model_of_the_named_target(text: str) -> None:
    spec = read_problem(text)
    assert spec.supervised, spec.reason
    assert resolve_target(spec, COLUMNS) == "price"


def test_a_description_asks_for_no_model() -> None:
    spec = read_problem("Describe the used cars and how their mileage is spread.")
    assert not spec.supervised and resolve_target(spec, COLUMNS) is None


def test_drop_and_keep_are_read_from_front_matter() -> None:
    spec = read_problem("---\ntarget: y\ndrop: [x, 'z col']\nkeep: w\n---\nPredict y.\n")
    assert spec.drop == ("x", "z col") and spec.keep == ("w",)


def test_front_matter_sheet_names_the_excel_sheet() -> None:
    assert read_problem("---\nsheet: data\n---\nDescribe it.\n").sheet == "data"
    assert read_problem("---\nsheet: 2023\n---\nDescribe it.\n").sheet == "2023"  # a YAML number
    assert read_problem("Describe it.\n").sheet is None


def test_the_modules_a_problem_names_are_found_and_columns_are_not() -> None:
    from notebook_bcc.inputs.problem import named_modules

    text = (
        "Fit a seasonal ARIMA with pmdarima's `auto_arima`, then `statsmodels.api.OLS`; the\n"
        "scikit-learn library.\nimport seaborn as sns\nfrom scipy.stats import ttest_ind\n"
        "The model's accuracy on rows where `light` > 3."
    )
    assert named_modules(text) == (
        "pmdarima",
        "statsmodels.api",
        "scikit-learn",
        "seaborn",
        "scipy.stats",
    )
