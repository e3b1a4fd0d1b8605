"""``benchmarks/dabench.py`` scores an answer against its own question: by number first, then
by the question's whole text (issue 39: two questions of one table began with the same 60
characters, and the second was scored against the first's answer)."""

from __future__ import annotations

import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import dabench

SHARED_HEAD = "Calculate the mean of the fare column for the passengers who embarked at "
FIRST, SECOND = SHARED_HEAD + "Southampton.", SHARED_HEAD + "Cherbourg and survived."
ASKED = [
    {"id": 1, "question": FIRST, "file_name": "t.csv", "format": "@mean_fare[v]"},
    {"id": 2, "question": SECOND, "file_name": "t.csv", "format": "@mean_fare[v]"},
]
TRUTH = {1: [("mean_fare", "27.08")], 2: [("mean_fare", "79.72")]}


def _answer(question: str, value: str, **extra: object) -> dict:
    return {"question": question, "values": {"mean_fare": value}, "answered": True, **extra}


def test_two_questions_sharing_their_first_60_characters_are_scored_apart() -> None:
    assert len(SHARED_HEAD) > 60
    summary = {"answers": [_answer(FIRST, "27.08"), _answer(SECOND, "79.72")]}
    records = dabench.score_table(summary, ASKED, TRUTH)
    assert [r["correct"] for r in records] == [True, True]


def test_by_text_when_the_run_listed_another_number_of_questions() -> None:
    # the run split the problem into three questions: numbers no longer line up, texts do
    answers = [_answer("Preface.", "0"), _answer(SECOND, "79.72"), _answer(FIRST, "27.08")]
    records = dabench.score_table({"answers": answers}, ASKED, TRUTH)
    assert [r["correct"] for r in records] == [True, True]
    assert records[1]["got"] == {"mean_fare": "79.72"}


def test_an_added_answer_does_not_shift_the_numbers() -> None:
    answers = [
        _answer(FIRST, "27.08"),
        _answer(SECOND, "79.72"),
        _answer("extra", "1", added=True),
    ]
    records = dabench.score_table({"answers": answers}, ASKED, TRUTH)
    assert [r["correct"] for r in records] == [True, True]
