"""Plans adapt (issue 26), through the real CLI and litellm against ``tests.fakellm.FakeLLM``
with a real kernel: after a failed attempt the behavior reflector revises the step's goal,
which the next arranger sees, the transition log and events.jsonl record, and the notebook
notes; a stage reflector's revision of the completed step is refused and repaired; the run
replays."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from lxml import etree

from tests.fakellm import FakeLLM, Request
from tests.integration.test_llm import bcc_scripted as bcc

pytestmark = [pytest.mark.check, pytest.mark.timeout(240)]

MODEL = "openai/fake-model"
REVISED = "REVISED-GOAL-42: count the rows with pandas; statsmodels is not needed."
OLD_FINDING = "FINDING-OLD-7: the duplicates are not yet counted"


def _reflection(complete: bool, revision: str = "") -> str:
    flag, nxt = ("true", "STEP_COMPLETED") if complete else ("false", "STEP_RUNNING")
    return (
        f'<reflection current_step_is_complete="{flag}"><evaluation><goal_achievement>'
        "<status>achieved</status><reasoning>r</reasoning></goal_achievement></evaluation>"
        f"<decision><next_state>{nxt}</next_state><reasoning>FEEDBACK</reasoning></decision>"
        f"{revision}</reflection>"
    )


def _stage_reflection(step: str, nxt: str, revision: str = "", finding: str = "") -> str:
    flag = "true" if nxt == "STAGE_COMPLETED" else "false"
    found = f'<key_findings><finding priority="high">{finding}</finding></key_findings>'
    return (
        f'<stage_reflection stage_is_complete="{flag}"><step_evaluation><step_id>{step}'
        "</step_id><completion_status>complete</completion_status>"
        f"{found if finding else ''}</step_evaluation>"
        f"<decision><next_state>{nxt}</next_state><reasoning>r</reasoning></decision>"
        f"<variable_management/>{revision}</stage_reflection>"
    )


class Policy:
    """Two steps; the first attempt of the first fails and its reflector revises the goal."""

    def __init__(self) -> None:
        self.reflections = 0
        self.stage_reflections = 0

    def __call__(self, req: Request) -> str:
        event = req.transition
        step = "second" if "/second" in req.headers.get("x-bcc-location", "") else "first"
        if event == "START_WORKFLOW":
            return (
                '<stages><stage id="work" title="Work"><goal>g</goal><verified_artifacts>'
                '<variable name="n_rows">x</variable></verified_artifacts></stage></stages>'
            )
        if event == "START_STEP":
            return (
                '<steps><step id="first" title="First"><goal>Fit OLS with statsmodels.</goal>'
                '<verified_artifacts><variable name="n_rows">x</variable></verified_artifacts>'
                '</step><step id="second" title="Second"><goal>g</goal><verified_artifacts>'
                '<variable name="doubled">x</variable></verified_artifacts></step></steps>'
            )
        if event == "START_BEHAVIOR":
            return (
                f'<behavior id="{step}_b{self.reflections + 1}" step_id="{step}"><agent>A</agent>'
                f'<task>t</task><outputs><artifact name="{"doubled" if step == "second" else "n_rows"}">'
                "x</artifact></outputs></behavior>"
            )
        if event == "COMPLETE_ACTION":
            if step == "second":
                code = "doubled = 2 * n_rows"
            elif self.reflections == 0:
                code = "import statsmodels_is_not_here"
            else:
                code = "import pandas as pd\nn_rows = len(pd.read_csv(user_submit_files[0]))"
            return f"<actions><add-code2run><![CDATA[{code}]]></add-code2run></actions>"
        if event == "COMPLETE_STEP":
            self.reflections += 1
            if self.reflections == 1:
                return _reflection(
                    False,
                    "<plan_revision><reason>statsmodels is not installed</reason>"
                    f'<revise_step id="first"><goal>{REVISED}</goal></revise_step>'
                    "</plan_revision>",
                )
            if self.reflections == 3:  # the second step's first attempt: a finding is stale
                return _reflection(
                    False,
                    "<plan_revision><reason>SUPERSEDED-BECAUSE the rows are counted now"
                    '</reason><supersede step="work/first">not yet counted</supersede>'
                    "</plan_revision>",
                )
            return _reflection(True)
        if event == "COMPLETE_STAGE":
            self.stage_reflections += 1
            if step == "first" and self.stage_reflections == 1:  # revises the completed step
                return _stage_reflection(
                    "first",
                    "STEP_RUNNING",
                    "<plan_revision><reason>r</reason>"
                    '<revise_step id="first"><goal>x</goal></revise_step></plan_revision>',
                )
            if step == "first":
                return _stage_reflection("first", "STEP_RUNNING", finding=OLD_FINDING)
            return _stage_reflection("second", "STAGE_COMPLETED")
        raise AssertionError(event)


@dataclass
class Revised:
    run: Path
    requests: list[Request]
    returncode: int
    stderr: str
    replay: tuple[int, str]


@pytest.fixture(scope="module")
def revised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Revised]:
    tmp = tmp_path_factory.mktemp("revised")
    problem, data = tmp / "problem.md", tmp / "rows.csv"
    problem.write_text("# Rows\n\nCount the rows of the table.\n")
    data.write_text("a,b\n1,2\n3,4\n5,6\n")
    with FakeLLM(policy=Policy()) as fake:
        proc, _, _ = bcc(
            "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
            "--out", str(tmp / "run"), "--quiet",
        )  # fmt: skip
        requests = list(fake.requests)
    again, _, _ = bcc("replay", str(tmp / "run"), "--out", str(tmp / "again"), "--quiet")
    yield Revised(
        tmp / "run", requests, proc.returncode, proc.stderr, (again.returncode, again.stderr)
    )


def _users(revised: Revised, event: str) -> list[str]:
    return [r.last_user for r in revised.requests if r.transition == event]


def test_the_run_completes_and_replays(revised: Revised) -> None:
    assert revised.returncode == 0, revised.stderr
    assert revised.replay[0] == 0, revised.replay[1]


def test_the_next_arranger_sees_the_revised_goal(revised: Revised) -> None:
    arrangers = _users(revised, "START_BEHAVIOR")
    assert REVISED not in arrangers[0] and "Fit OLS with statsmodels." in arrangers[0]
    assert REVISED in arrangers[1] and "Fit OLS with statsmodels." not in arrangers[1]


def test_a_superseded_finding_is_no_longer_shown_as_current(revised: Revised) -> None:
    arrangers = _users(revised, "START_BEHAVIOR")
    assert len(arrangers) == 4
    assert OLD_FINDING in arrangers[2]  # the second step's first arranger: still current
    assert OLD_FINDING not in arrangers[3]
    assert (
        "superseded since: 1 finding naming 'not yet counted' "
        "(SUPERSEDED-BECAUSE the rows are counted now)" in arrangers[3]
    )


def test_the_revision_is_logged_in_the_transition_log_events_and_notebook(
    revised: Revised,
) -> None:
    logged = [
        (p, etree.parse(str(p)).getroot())
        for p in sorted((revised.run / "logs").glob("[0-9][0-9][0-9][0-9]_COMPLETE_STEP.xml"))
    ]
    with_revision = [(p, t) for p, t in logged if t.find("plan_revised") is not None]
    assert len(with_revision) == 2  # the goal, then the superseded finding
    path, root = with_revision[0]
    assert root.findtext("plan_revised/reason") == "statsmodels is not installed"
    assert [c.text for c in root.iterfind("plan_revised/change")] == ["step first: goal revised"]
    events = [json.loads(x) for x in (revised.run / "events.jsonl").read_text().splitlines()]
    revised_events = [e for e in events if e["type"] == "plan_revised"]
    assert [(e["seq"], e["changes"]) for e in revised_events] == [
        (int(path.name[:4]), ["step first: goal revised"]),
        (
            int(with_revision[1][0].name[:4]),
            ["findings of work/first superseded ('not yet counted')"],
        ),
    ]
    nb = nbformat.read(revised.run / "notebook.ipynb", as_version=4)
    notes = [c.source for c in nb.cells if c.metadata.get("bcc", {}).get("role") == "revision"]
    assert notes[0] == "*Plan revised: step first: goal revised. Why: statsmodels is not installed*"
    assert len(notes) == 2


def test_a_revision_of_the_completed_step_is_refused_and_repaired(revised: Revised) -> None:
    stage = [r for r in revised.requests if r.transition == "COMPLETE_STAGE"]
    assert len(stage) == 3  # the refused reply, its repair, and the second step's
    assert "Your previous reply was rejected" in stage[1].last_user
    assert "step 'first' is complete" in stage[1].last_user
    state = json.loads((revised.run / "state.json").read_text())
    first = state["stages"][0]["steps"][0]
    assert first["goal"] == REVISED  # the refused revision changed nothing
