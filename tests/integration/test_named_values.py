"""Benchmark-style questions with named values (issue 23), through the real CLI and the real
litellm path against ``tests.fakellm.FakeLLM`` on 127.0.0.1, with real kernels.

The problem has six imperative items (no question mark), several naming two or three values,
one name (``p_value``) named by two questions. The scripted model plans one answering stage
with one step and builds ``final_answers`` with ``values`` in the kernel; one value depends on
the kernel's working directory, so the verification kernel (which works in ``.verify``)
computes another one, and the run must say which question and which name differ.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from notebook_bcc.contract.prompts import ANCHOR_WORDS
from tests.fakellm import FakeLLM, Request
from tests.integration.test_llm import bcc_scripted as bcc
from tests.integration.test_llm import model_run

pytestmark = [pytest.mark.check, pytest.mark.timeout(240)]

ITEMS = (
    "Calculate the mean and standard deviation of the income column.\n"
    "   Answer format: @mean_income[value] @std_income[value], rounded to two decimals.",
    "Check if the age column follows a normal distribution using the Shapiro-Wilk test.\n"
    "   Answer format: @is_normal[yes or no] @p_value[value]",
    "Determine the Pearson correlation between income and age.\n"
    "   Answer format: @r[value] @p_value[value] @strength[weak, moderate or strong]",
    "Identify the region with the most rows. Answer format: @top_region[name]",
    "Create a new feature ratio = income / age and report its median. "
    "Answer format: @median_ratio[value]",
    "Count the rows whose income is above 50. Answer format: @rows_above[count]",
)
PROBLEM = "# Benchmark-style questions on people.csv\n\n" + "\n\n".join(
    f"{i}. {item}" for i, item in enumerate(ITEMS, 1)
)
KEYS = (
    "Calculate the mean and standard deviation of the income column.",
    "Check if the age column follows a normal distribution using the Shapiro-Wilk test.",
    "Determine the Pearson correlation between income and age.",
    "Identify the region with the most rows.",
    "Create a new feature ratio = income / age and report its median.",
    "Count the rows whose income is above 50.",
)

CODE = f"""
import os
import pandas as pd
from scipy import stats

from notebook_bcc.contract.prompts import ANCHOR_WORDS
people = pd.read_csv(user_submit_files[0])
_sw = stats.shapiro(people["age"])
_r = stats.pearsonr(people["income"], people["age"])
_top = people["region"].value_counts().idxmax()
_median = float((people["income"] / people["age"]).median())
final_answers = {{
    {KEYS[0]!r}: {{"value": round(float(people["income"].mean()), 2), "text": "mean and sd",
        "values": {{"mean_income": round(float(people["income"].mean()), 2),
                    "std_income": round(float(people["income"].std()), 2)}}}},
    {KEYS[1]!r}: {{"value": "yes" if _sw.pvalue > 0.05 else "no", "text": "Shapiro-Wilk",
        "values": {{"is_normal": "yes" if _sw.pvalue > 0.05 else "no",
                    "p_value": round(float(_sw.pvalue), 4)}}}},
    {KEYS[2]!r}: {{"value": round(float(_r[0]), 2), "text": "Pearson",
        "values": {{"r": round(float(_r[0]), 2), "p_value": round(float(_r[1]), 4),
                    "strength": "strong" if abs(_r[0]) > 0.7 else "weak"}}}},
    {KEYS[3]!r}: {{"value": _top, "text": "most rows", "values": {{"top_region": _top}}}},
    {KEYS[4]!r}: {{"value": round(_median, 3), "text": "median ratio",
        "values": {{"median_ratio": round(_median, 3)}}}},
    # the run's kernel works in the run directory, the verification kernel in .verify
    {KEYS[5]!r}: {{"value": int((people["income"] > 50).sum()), "text": "count",
        "values": {{"rows_above": int((people["income"] > 50).sum())
                    + int(os.getcwd().endswith(".verify"))}}}},
}}
print(final_answers)
"""


def policy(req: Request) -> str:
    event = req.transition
    if event == "START_WORKFLOW":
        return (
            '<stages><stage id="answers" title="Answers"><goal>Answer every question in one '
            'step.</goal><verified_artifacts><variable name="final_answers">dict</variable>'
            "</verified_artifacts></stage></stages>"
        )
    if event == "START_STEP":
        return (
            '<steps><step id="answer_all" title="All answers"><goal>Compute them.</goal>'
            '<verified_artifacts><variable name="final_answers">dict</variable>'
            "</verified_artifacts></step></steps>"
        )
    if event == "START_BEHAVIOR":
        return (
            '<behavior id="answer_all_b1" step_id="answer_all"><agent>Explore-Agent</agent>'
            '<task>Answer all six.</task><outputs><artifact name="final_answers">dict'
            "</artifact></outputs><acceptance><criterion>len(final_answers) == 6</criterion>"
            "</acceptance></behavior>"
        )
    if event == "COMPLETE_ACTION":
        return f"<actions><add-text>All answers.</add-text><add-code2run><![CDATA[{CODE}]]></add-code2run></actions>"
    if event == "COMPLETE_STEP":
        return (
            '<reflection current_step_is_complete="true"><evaluation><goal_achievement>'
            "<status>achieved</status><reasoning>ok</reasoning></goal_achievement></evaluation>"
            "<decision><next_state>STEP_COMPLETED</next_state><reasoning>done</reasoning>"
            "</decision></reflection>"
        )
    if event == "COMPLETE_STAGE":
        return (
            '<stage_reflection stage_is_complete="true"><step_evaluation><step_id>answer_all'
            "</step_id><completion_status>complete</completion_status></step_evaluation>"
            "<decision><next_state>STAGE_COMPLETED</next_state><reasoning>r</reasoning>"
            "</decision><variable_management/></stage_reflection>"
        )
    raise AssertionError(event)


@dataclass
class Done:
    run: Path
    requests: list[Request]
    returncode: int
    stderr: str
    frame: pd.DataFrame


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Done]:
    tmp = tmp_path_factory.mktemp("named")
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "income": rng.normal(50, 12, 80).round(1),
            "age": rng.integers(20, 70, 80),
            "region": rng.choice(["north", "south", "east"], 80, p=[0.5, 0.3, 0.2]),
        }
    )
    frame.to_csv(tmp / "people.csv", index=False)
    (tmp / "problem.md").write_text(PROBLEM)
    with FakeLLM(policy=policy) as fake:
        proc = model_run(fake, tmp / "problem.md", tmp / "people.csv", tmp / "run")
        yield Done(tmp / "run", list(fake.requests), proc.returncode, proc.stderr, frame)


def expected(frame: pd.DataFrame) -> list[dict]:
    sw = stats.shapiro(frame["age"])
    r = stats.pearsonr(frame["income"], frame["age"])
    median = float((frame["income"] / frame["age"]).median())
    return [
        {"mean_income": round(frame["income"].mean(), 2), "std_income": round(frame["income"].std(), 2)},
        {"is_normal": "yes" if sw.pvalue > 0.05 else "no", "p_value": round(float(sw.pvalue), 4)},
        {"r": round(float(r[0]), 2), "p_value": round(float(r[1]), 4),
         "strength": "strong" if abs(r[0]) > 0.7 else "weak"},
        {"top_region": frame["region"].value_counts().idxmax()},
        {"median_ratio": round(median, 3)},
        {"rows_above": int((frame["income"] > 50).sum())},
    ]  # fmt: skip


def test_all_six_imperative_items_are_listed_with_their_names(done: Done) -> None:
    [planner] = [r for r in done.requests if r.transition == "START_WORKFLOW"]
    prompt = planner.system  # the run's block holds the problem and its questions
    section = prompt.split("## Questions the problem asks", 1)[1].split("\n## ", 1)[0]
    for i, key in enumerate(KEYS, 1):  # a question the problem lists whole: its first words
        words = key.split()
        shown = " ".join(words[:ANCHOR_WORDS]) + " …" if len(words) > ANCHOR_WORDS else key
        assert f"{i}. {shown}\n" in section
    assert "   values: mean_income, std_income\n" in section
    assert "   values: r, p_value, strength\n" in section
    assert section.count("p_value") == 2  # one name, two questions: each its own
    assert "no final_answers" not in prompt and "none found" not in section


def test_named_values_come_from_the_kernel(done: Done) -> None:
    summary = json.loads((done.run / "summary.json").read_text())
    answers = summary["answers"]
    assert [a["question"] for a in answers] == list(KEYS)
    assert [a["values"] for a in answers] == expected(done.frame)
    assert all(a["answered"] and "missing_values" not in a for a in answers)
    assert not any(a.get("added") for a in answers)


def test_summary_md_shows_each_named_value(done: Done) -> None:
    md = (done.run / "summary.md").read_text()
    for values in expected(done.frame):
        line = " ".join(f"@{n}[{v}]" for n, v in values.items())
        assert f"\n   {line}\n" in md, line
    status = done_status(done)
    assert f"@top_region[{done.frame['region'].value_counts().idxmax()}]" in status


def done_status(done: Done) -> str:
    proc, _, _ = bcc("status", str(done.run))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_named_value_the_verification_does_not_reproduce_is_named(done: Done) -> None:
    summary = json.loads((done.run / "summary.json").read_text())
    v = summary["verification"]
    assert v["status"] == "failed" and v["results"] == "differ", v
    rows = int((done.frame["income"] > 50).sum())
    assert v["mismatches"] == [
        f"final_answers[{KEYS[5]!r}]['values']['rows_above']: {rows} in the run, "
        f"{rows + 1} on re-execution"
    ]
    report = (done.run / "report.html").read_text()
    assert "@rows_above[" in report
