"""Questions and named values (issue 23): what the detector lists, and how final_answers
entries are matched to the questions and compared with the re-execution's."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import pytest

from notebook_bcc.inputs.problem import read_problem
from notebook_bcc.inputs.questions import Question, questions_in
from notebook_bcc.rundir.results import answers, compare

ROOT = Path(__file__).resolve().parents[2]
DABENCH = ROOT.parent / "shared" / "dabench"


def texts(body: str) -> list[str]:
    return [q.text for q in questions_in(body)]


IMPERATIVES = [
    "Calculate the mean and standard deviation of the fare.",
    "Compute the median age per class.",
    "Determine whether the two groups differ in income.",
    "Identify the three most expensive items.",
    "Check if the weights follow a normal distribution.",
    "Test whether the means differ at the 5% level.",
    "Create a new feature that divides price by area, then report its mean.",
    "Perform a chi-square test of independence between sex and survival.",
    "Apply a log transform to the income and give its skewness.",
    "Report the number of duplicate rows.",
    "Find the month with the highest sales.",
    "Estimate the slope of price on area with ordinary least squares.",
    "Compare the mean fares of the three classes.",
    "Count the passengers older than 60.",
    "List the columns that have missing values.",
    "Using a z-score threshold of 3, count the outliers in the fare.",
    "Use the IQR rule to find the outliers in the age column.",
    "Question 2: Build a logistic regression and report its accuracy.",
    "Then, train a decision tree on the same split.",
]


@pytest.mark.parametrize("item", IMPERATIVES)
def test_an_imperative_item_is_a_question(item: str) -> None:
    expected = re.sub(r"^Question 2: ", "", item)
    assert texts(f"# Questions\n\n1. {item}\n") == [expected]
    assert texts(f"- {item}\n") == [expected]


def test_a_prose_sentence_asks_when_it_asks_and_an_introduction_does_not() -> None:
    body = (
        "The table lists 200 houses. Answer these questions:\n\n"
        "Calculate the mean price. Which town has the most houses? Tell me which agent sold "
        "the most. Predict the `price` of a house from its area. Describe the data.\n"
    )
    assert texts(body) == [
        "Calculate the mean price.",
        "Which town has the most houses?",
        "Tell me which agent sold the most.",
    ]


def test_an_ask_after_a_colon_is_a_question_and_a_label_is_not() -> None:
    """Relay trial G's problem: the third request stood after a colon, with "decide"."""
    body = (
        "Report the score. The charges are strongly skewed: decide whether modelling them on "
        "a log scale helps. Columns: count of visits per day.\n"
    )
    assert texts(body) == [
        "Report the score.",
        "The charges are strongly skewed: decide whether modelling them on a log scale helps.",
    ]


def test_in_a_list_modelling_and_description_requests_ask_too() -> None:
    body = "1. Predict the price from the area.\n2. Describe the distribution of the age.\n"
    assert texts(body) == [
        "Predict the price from the area.",
        "Describe the distribution of the age.",
    ]


def test_a_list_that_describes_columns_asks_nothing() -> None:
    body = "Columns:\n\n- `age`: years\n- `fare`: price paid, in pounds\n"
    assert questions_in(body) == ()


def test_an_item_keeps_its_nested_parts_and_its_details_name_its_values() -> None:
    body = (
        "1. Clean the data by:\n"
        "   1. removing duplicates;\n"
        "   2. filling missing ages with the median.\n"
        "   Constraints: keep the first of each duplicate.\n"
        "   Answer format: @rows_left[count] @median_age[value]\n\n"
        "2. 1. Which column has the most missing values? Answer format: @column[name]\n"
    )
    assert questions_in(body) == (
        Question(
            "Clean the data by: 1. removing duplicates; 2. filling missing ages with the median.",
            ("rows_left", "median_age"),
        ),
        Question("Which column has the most missing values?", ("column",)),
    )


def test_front_matter_questions_replace_detection_and_answers_name_values() -> None:
    spec = read_problem(
        "---\nquestions:\n  - How big is it?\n  - Mean price @mean_price[v]\n"
        "answers:\n  1: [rows, columns]\n  'Mean price @mean_price[v]': median_price\n---\n"
        "Calculate everything.\n"
    )
    assert spec.questions == (
        Question("How big is it?", ("rows", "columns")),
        Question("Mean price @mean_price[v]", ("mean_price", "median_price")),
    )


def test_asking_for_statistics_asks_for_no_model() -> None:
    spec = read_problem(
        "The data is in `Credit.csv`.\n\n1. Determine the mean `Income`.\n"
        "2. Estimate the share of students.\n3. Explain the findings.\n"
    )
    assert not spec.supervised and spec.target is None


@pytest.mark.skipif(not DABENCH.is_dir(), reason="../shared/dabench is absent")
def test_every_dabench_question_is_found_with_the_names_of_its_format() -> None:
    """Text nobody here wrote: every question of every table, as a numbered list item with
    its constraints and format, and each question alone as prose."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from dabench import problem_text

    rows = [json.loads(line) for line in (DABENCH / "questions.jsonl").open()]
    for table in sorted({r["file_name"] for r in rows}):
        asked = [r for r in rows if r["file_name"] == table]
        found = questions_in(problem_text(table, asked))
        assert len(found) == len(asked), table
        for row, q in zip(asked, found, strict=True):
            names = tuple(dict.fromkeys(re.findall(r"@(\w+)\[", row["format"])))
            assert q.names == names, (row["id"], q)
    alone = [r["id"] for r in rows if not questions_in(r["question"])]
    assert alone == []


# -- final_answers: matching and comparing ----------------------------------------------------
QS = (
    Question("How many rows?", ("rows",)),
    Question("Which test? Give its p-value.", ("test", "p_value")),
)


def test_entries_match_by_text_number_or_unique_start_and_the_rest_are_added() -> None:
    got = answers(
        QS,
        {
            "1": {"value": 5, "text": "five", "values": {"rows": 5}},
            "Which test? Give its p": {
                "value": "t",
                "text": "",
                "values": {"p_value": 0.01, "test": "t"},
            },
            "Extra question": 3,
        },
    )
    assert [a.to_json() for a in got] == [
        {"question": "How many rows?", "value": 5, "text": "five", "answered": True,
         "values": {"rows": 5}},
        {"question": "Which test? Give its p-value.", "value": "t", "text": "", "answered": True,
         "values": {"test": "t", "p_value": 0.01}},
        {"question": "Extra question", "value": 3, "text": "", "answered": True, "values": {},
         "added": True},
    ]  # fmt: skip


def test_a_missing_entry_or_name_is_said() -> None:
    got = answers(QS, {"Which test? Give its p-value.": {"values": {"test": "t"}}})
    assert got[0].to_json()["values"] == {"rows": None} and not got[0].answered
    assert got[1].value == "t" and got[1].missing == ("p_value",)


def test_the_comparison_names_the_question_and_the_value() -> None:
    key = QS[1].text
    run = {"final_answers": {key: {"value": 1, "values": {"p_value": 0.01, "d": math.nan}}}}
    same = {"final_answers": {key: {"value": 1, "values": {"p_value": 0.01, "d": math.nan}}}}
    assert compare(run, same) == []  # NaN equals NaN
    other = {"final_answers": {key: {"value": 1, "values": {"p_value": 0.02, "d": math.nan}}}}
    assert compare(run, other) == [
        f"final_answers[{key!r}]['values']['p_value']: 0.01 in the run, 0.02 on re-execution"
    ]
    near = {
        "final_answers": {key: {"value": 1 + 1e-12, "values": {"p_value": 0.01, "d": math.nan}}}
    }
    assert compare(run, near) == []  # 1e-9 relative


def test_named_values_are_written_in_the_benchmarks_form() -> None:
    from notebook_bcc.rundir.results import named_text

    values = {"countries": ["Kuwait", "Saudi Arabia"], "r": 0.25, "top": "b", "missing": None}
    assert named_text(values, missing=("missing",)) == (
        "@countries[Kuwait, Saudi Arabia] @r[0.25] @top[b] @missing[]"
    )


def test_named_values_are_written_as_python_writes_them() -> None:
    """Issue 39: ``False`` became ``false`` (JSON), and a benchmark reading it scored it wrong."""
    from notebook_bcc.rundir.results import named_text, value_text

    values = {"is_normal": False, "n": None, "xs": [1, 2], "total": 2081990.36, "m": {"a": True}}
    assert named_text(values) == (
        "@is_normal[False] @n[None] @xs[1, 2] @total[2081990.36] @m[{'a': True}]"
    )
    assert named_text({"given": 1, "absent": None}, missing=("absent",)) == "@given[1] @absent[]"
    assert value_text(False) == "False" and value_text("Biscoe") == "Biscoe"


def test_a_preface_before_numbered_items_is_not_question_one() -> None:
    """Issue 39: "Answer each item from the data file." became question 1, so
    ``final_answers["1"]`` no longer meant the problem's item 1."""
    from notebook_bcc.rundir.results import answers

    body = (
        "Answer each item from the data file.\n\n"
        "1. What is the mean of a?\n2. Which b is most common?\n3. Count the rows.\n\n"
        "Report every value you compute.\n"
    )
    asked = questions_in(body)
    assert [q.text for q in asked[:3]] == [
        "What is the mean of a?",
        "Which b is most common?",
        "Count the rows.",
    ]
    found = answers(asked[:3], {"1": 2.5, "2": "x", "3": 10})
    assert [(a.question, a.value) for a in found] == [
        ("What is the mean of a?", 2.5),
        ("Which b is most common?", "x"),
        ("Count the rows.", 10),
    ]
    # a preface that asks in so many words stays a question, and so does prose after a bullet list
    assert questions_in("Which island is largest?\n\n1. Count the rows.\n")[0].text == (
        "Which island is largest?"
    )
    assert [q.text for q in questions_in("Compute the mean.\n\n- Plot it.\n")] == [
        "Compute the mean.",
        "Plot it.",
    ]


def test_an_answer_carries_its_readings_and_they_are_verified() -> None:
    """Issue 42: an answer that depends on a convention the question leaves open records the
    other reading with its own values; the verification checks them like any other."""
    from notebook_bcc.rundir.results import answers, reading_lines

    entry = {
        "value": 1.2,
        "text": "population sd (ddof=0)",
        "values": {"sd": 1.2},
        "readings": [{"reading": "sample sd (ddof=1)", "values": {"sd": 1.3}}],
    }
    (found,) = answers([Question("What is the sd?", ("sd",))], {"1": entry})
    assert found.readings[0].reading == "sample sd (ddof=1)" and found.readings_differ
    data = found.to_json()
    assert data["readings"] == [{"reading": "sample sd (ddof=1)", "values": {"sd": 1.3}}]
    assert reading_lines(data) == [
        "other reading, sample sd (ddof=1): @sd[1.3] (gives other values: the answer depends "
        "on the reading)"
    ]
    # a reading that gives the headline's values is listed, not flagged
    same = {**data, "readings": [*data["readings"], {"reading": "rounded", "values": {"sd": 1.2}}]}
    assert reading_lines(same)[1] == "other reading, rounded: @sd[1.2]"
    assert reading_lines(same)[0].endswith(
        "(gives other values: the answer depends on the reading)"
    )
    changed = {"1": {**entry, "readings": [{"reading": "sample sd", "values": {"sd": 1.4}}]}}
    assert compare({"final_answers": {"1": entry}}, {"final_answers": changed}) == [
        "final_answers['1']['readings'][0]['values']['sd']: 1.3 in the run, 1.4 on re-execution"
    ]
    assert compare({"final_answers": {"1": entry}}, {"final_answers": {"1": entry}}) == []
