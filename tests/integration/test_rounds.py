"""Compact rounds (issue 41): one model reply answers the transitions it can foresee.

Through the model's path: the real CLI and litellm over HTTP to ``tests.fakellm.FakeLLM`` on
127.0.0.1, ``bcc`` in this process with scripted kernels (``tests/inprocess.py``) and the
verification on; the kill is a real SIGKILL of a ``bcc`` process of its own
(``tests.scripted_bcc``). The scripted model answers a one-question problem with combined
replies: the stage planner's ``<stage>`` carries its ``<steps>``, the arranger's ``<behavior>``
its ``<actions>``, the behavior reflector's ``<reflection>`` the ``<stage_reflection>``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from lxml import etree

from tests.fakellm import FakeLLM, Request, scripted_reply
from tests.integration.test_llm import AGENT_EVENTS, _env
from tests.integration.test_llm import bcc_scripted as bcc
from tests.scripted_bcc import COMMAND, ROOT

pytestmark = [pytest.mark.check, pytest.mark.timeout(300)]

PROBLEM = "# Rows\n\n1. How many rows does the table have? Answer format: @rows[n]\n"
CODE = (
    "import pandas as pd\n"
    "table = pd.read_csv(user_submit_files[0])\n"
    'final_answers = {"1": {"value": len(table), "values": {"rows": len(table)}, '
    '"text": f"{len(table)} rows"}}\n'
    "print(final_answers)"
)
COMPACT_CALLS = ["START_WORKFLOW", "START_BEHAVIOR", "COMPLETE_STEP"]
ALL = [*AGENT_EVENTS, "NEXT_STAGE"]  # every transition of a one-stage run


def _reply(transition: str, code: str = CODE) -> str:
    return scripted_reply(transition, code, artifact="final_answers")


def _inside(outer: str, close: str, part: str) -> str:
    head, _, tail = outer.rpartition(close)
    return head + part + close + tail


def combined(actions_code: str = CODE) -> Callable[[Request], str]:
    """A policy whose replies carry the next transition's payload where compact rounds allow."""

    def answer(req: Request) -> str:
        t = req.transition
        if t in ("START_WORKFLOW", "FOLLOW_UP"):  # a follow-up's plan is a <stages> too
            return _inside(_reply("START_WORKFLOW"), "</stage>", _reply("START_STEP"))
        if t == "START_BEHAVIOR":
            return _inside(_reply(t), "</behavior>", _reply("COMPLETE_ACTION", actions_code))
        if t == "COMPLETE_STEP":
            return _inside(_reply(t), "</reflection>", _reply("COMPLETE_STAGE"))
        return _reply(t)

    return answer


def _inputs(tmp: Path) -> tuple[Path, Path]:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "problem.md").write_text(PROBLEM)
    (tmp / "table.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
    return tmp / "problem.md", tmp / "table.csv"


def _run(fake: FakeLLM, tmp: Path, *extra: str) -> tuple[Path, subprocess.CompletedProcess]:
    problem, data = _inputs(tmp)
    run = tmp / "run"
    proc, _, _ = bcc(
        "run", str(problem), str(data), "--model", "openai/m", "--api-base", fake.url,
        "--out", str(run), "--quiet", "--max-alternatives", "1", *extra,
    )  # fmt: skip
    return run, proc


def _completed(policy: Callable[[Request], str], tmp: Path, *extra: str) -> tuple[Path, list]:
    """A run that exits 0 against a scripted model; its directory and the requests it sent."""
    with FakeLLM(policy=policy) as fake:
        run, proc = _run(fake, tmp, *extra)
        assert proc.returncode == 0, proc.stderr
        return run, list(fake.requests)


def _calls(requests: list[Request]) -> list[str]:
    return [r.transition for r in requests]


def _logs(run: Path) -> list[etree._Element]:
    return [etree.parse(str(p)).getroot() for p in sorted((run / "logs").glob("[0-9]*.xml"))]


def _code(run: Path) -> list[str]:
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


@pytest.fixture(scope="module")
def compact(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Request]]:
    return _completed(combined(), tmp_path_factory.mktemp("compact"))


def test_a_question_only_problem_runs_in_three_calls(compact) -> None:
    run, requests = compact
    assert [r.transition for r in requests] == COMPACT_CALLS
    summary = _summary(run)
    assert summary["final_state"] == "WORKFLOW_COMPLETED"
    assert summary["counts"]["llm_calls"] == 3
    assert summary["verification"]["status"] == "passed"
    assert summary["answers"][0]["values"] == {"rows": 3}
    assert summary["rounds"] == {
        "mode": "compact",
        "agent_transitions": 6,
        "answered_without_a_call": 3,
        "replies_that_answered_more": [
            {"seq": 1, "also_answered": [2]},
            {"seq": 3, "also_answered": [4]},
            {"seq": 5, "also_answered": [6]},
        ],
    }
    said = "model calls: 3 for 6 agent transitions (3 answered by an earlier reply, compact rounds)"
    assert said in (run / "summary.md").read_text()
    said = "3 model calls for 6 agent transitions (3 answered by an earlier reply, compact rounds)"
    assert said in (run / "report.html").read_text()


def test_every_transition_is_logged_with_its_payload_and_who_answered_it(compact) -> None:
    run, _ = compact
    logs = _logs(run)
    assert [t.get("event") for t in logs] == ALL
    by_event = {t.get("event"): t for t in logs}
    for answered, asked in (("START_STEP", 1), ("COMPLETE_ACTION", 3), ("COMPLETE_STAGE", 5)):
        t = by_event[answered]
        assert t.get("answered_by") == str(asked)
        assert t.find("request") is None and t.find("response") is None  # no call of its own
        assert t.find("payload") is not None and len(t.find("payload")) == 1
        assert f"reply of transition {asked}" in t.findtext("note")
    # the reply's own payload is logged without the part it carried
    stages = by_event["START_WORKFLOW"].find("payload/stages")
    assert stages.find("stage/steps") is None
    assert by_event["START_STEP"].find("payload/steps/step").get("id") == "compute"
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    answered_by = {e["event"]: e.get("answered_by") for e in events if e["type"] == "transition"}
    assert answered_by["COMPLETE_ACTION"] == 3 and answered_by["START_BEHAVIOR"] is None
    state = json.loads((run / "state.json").read_text())
    assert state["foreseen"] == []  # each part used once


def test_the_prompts_offer_the_part_where_it_can_apply(compact) -> None:
    _, requests = compact
    system = {r.transition: r.system for r in requests}
    assert "put each stage's steps inside its" in system["START_WORKFLOW"]
    assert "<pcs_considerations>" in system["START_WORKFLOW"]  # the step planner's format
    assert "this is the step's first behavior" in system["START_BEHAVIOR"]
    assert "<add-code2run>" in system["START_BEHAVIOR"]
    assert "when you complete the step (`STEP_COMPLETED`)" in system["COMPLETE_STEP"]
    assert "<variable_management>" in system["COMPLETE_STEP"]
    assert "when you retry the step (`STEP_RUNNING`)" in system["COMPLETE_STEP"]
    assert "$alternatives" not in system["COMPLETE_STEP"]  # the arranger's format, filled


def test_replay_reproduces_the_cells_without_a_model(compact, tmp_path: Path) -> None:
    run, _ = compact
    proc, _, _ = bcc("replay", str(run), "--out", str(tmp_path / "again"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert _code(tmp_path / "again") == _code(run)
    assert [t.get("answered_by") for t in _logs(tmp_path / "again")] == [
        t.get("answered_by") for t in _logs(run)
    ]


def test_full_rounds_ask_every_agent_and_offer_nothing(tmp_path: Path) -> None:
    run, requests = _completed(combined(), tmp_path, "--rounds", "full")
    assert [r.transition for r in requests] == ALL[:-1]
    assert not any("Compact:" in r.system for r in requests)
    assert all(t.get("answered_by") is None for t in _logs(run))
    summary = _summary(run)
    assert summary["verification"]["status"] == "passed"
    assert summary["rounds"]["mode"] == "full" and summary["counts"]["llm_calls"] == 6
    assert summary["rounds"]["answered_without_a_call"] == 0


def test_an_invalid_actions_part_is_asked_for_again_alone(tmp_path: Path) -> None:
    broken = "<![CDATA[ ]]>"  # an empty <add-code2run>: the part fails, the behavior stands

    def policy(req: Request) -> str:
        if req.transition == "START_BEHAVIOR":
            part = _reply("COMPLETE_ACTION").replace(f"<![CDATA[{CODE}]]>", broken)
            return _inside(_reply("START_BEHAVIOR"), "</behavior>", part)
        return combined()(req)

    run, requests = _completed(policy, tmp_path)
    assert _calls(requests) == [*COMPACT_CALLS[:2], "COMPLETE_ACTION", "COMPLETE_STEP"]
    repair = requests[2].last_user
    assert "The <actions> your previous reply carried for this step was rejected" in repair
    assert "<add-code2run> is empty" in repair
    action = next(t for t in _logs(run) if t.get("event") == "COMPLETE_ACTION")
    assert action.get("answered_by") is None
    assert "was rejected, and asked for again" in action.findtext("note")
    assert [r.get("status") for r in action.findall("response")] == ["ok"]
    assert _summary(run)["verification"]["status"] == "passed"


def test_the_call_budget_counts_calls_not_transitions(tmp_path: Path) -> None:
    """G6 is checked before each call: three calls answer the run's six agent transitions."""
    run, requests = _completed(combined(), tmp_path, "--max-llm-calls", "3")
    assert [r.transition for r in requests] == COMPACT_CALLS
    assert _summary(run)["final_state"] == "WORKFLOW_COMPLETED"


def test_a_retry_written_by_the_reflector_costs_no_other_call(tmp_path: Path) -> None:
    """The behavior reflector that retries may write the next behavior with its actions: the
    retry's arranger and generator are answered by its reply."""
    reflections = []

    def policy(req: Request) -> str:
        if req.transition == "START_BEHAVIOR":  # cells that leave the artifact missing
            return _inside(
                _reply("START_BEHAVIOR"), "</behavior>", _reply("COMPLETE_ACTION", "x = 1")
            )
        if req.transition == "COMPLETE_STEP":
            reflections.append(req)
            if len(reflections) == 1:
                retry = _reply("COMPLETE_STEP").replace('"true"', '"false"')
                retry = retry.replace("STEP_COMPLETED", "STEP_RUNNING")
                b2 = _reply("START_BEHAVIOR").replace("compute_b1", "compute_b2")
                return _inside(
                    retry, "</reflection>", _inside(b2, "</behavior>", _reply("COMPLETE_ACTION"))
                )
        return combined()(req)

    run, requests = _completed(policy, tmp_path)
    assert _calls(requests) == [*COMPACT_CALLS, "COMPLETE_STEP"]
    logs = _logs(run)
    events = [t.get("event") for t in logs]
    assert events == [*ALL[:5], "START_BEHAVIOR", "COMPLETE_ACTION", *ALL[4:]]
    assert [t.get("answered_by") for t in logs] == [
        None, "1", None, "3", None, "5", "5", None, "8", None
    ]  # fmt: skip
    assert logs[5].find("payload/behavior").get("id") == "compute_b2"
    assert logs[5].find("payload/behavior/actions") is None  # its actions: the next log's
    assert "final_answers" in logs[6].findtext("payload/actions/add-code2run")
    summary = _summary(run)
    assert summary["verification"]["status"] == "passed"
    assert summary["answers"][0]["values"] == {"rows": 3}
    assert summary["counts"]["llm_calls"] == 4
    assert {"seq": 5, "also_answered": [6, 7]} in summary["rounds"]["replies_that_answered_more"]
    assert _code(run)[-1] == CODE


def _step(step: str, artifact: str) -> str:
    return (
        f'<step id="{step}" title="{step}"><goal>g</goal><verified_artifacts>'
        f'<variable name="{artifact}">x</variable></verified_artifacts></step>'
    )


def _behavior_with_actions(step: str, artifact: str, code: str) -> str:
    behavior = _reply("START_BEHAVIOR").replace('"compute', f'"{step}')
    behavior = behavior.replace('"final_answers"', f'"{artifact}"').replace(
        "final_answers is not None", f"{artifact} is not None"
    )
    return _inside(behavior, "</behavior>", _reply("COMPLETE_ACTION", code))


def test_the_stage_reflection_carries_the_next_steps_behavior(tmp_path: Path) -> None:
    """A stage of two steps: the stage reflection that goes on to the second step carries
    its first behavior with its actions, so the second step costs one call (its reflection)."""
    load = "import pandas as pd\ntable = pd.read_csv(user_submit_files[0])"
    answer = CODE.split("\n", 2)[2]  # the answers, from the table the first step loaded

    reflections = []

    def policy(req: Request) -> str:
        t = req.transition
        if t == "START_WORKFLOW":
            steps = f"<steps>{_step('first', 'table')}{_step('compute', 'final_answers')}</steps>"
            return _inside(_reply(t), "</stage>", steps)
        if t == "START_BEHAVIOR":
            return _behavior_with_actions("first", "table", load)
        if t == "COMPLETE_STEP" and not reflections.append(req) and len(reflections) == 1:
            going_on = (
                _reply("COMPLETE_STAGE")
                .replace('"true"', '"false"')
                .replace("<step_id>compute", "<step_id>first")
                .replace("STAGE_COMPLETED", "STEP_RUNNING")
            )
            next_behavior = _behavior_with_actions("compute", "final_answers", answer)
            going_on = _inside(going_on, "</stage_reflection>", next_behavior)
            return _inside(_reply(t), "</reflection>", going_on)
        return combined()(req)

    run, requests = _completed(policy, tmp_path)
    assert _calls(requests) == [*COMPACT_CALLS, "COMPLETE_STEP"]
    first_reflection = requests[2].system
    assert "when the stage reflection goes on to a next step" in first_reflection
    assert "Step `compute` — compute" in first_reflection  # the step still to come, in full
    assert first_reflection.count("<add-code2run>") == 1  # the generator's format shown once
    logs = _logs(run)
    assert [t.get("event") for t in logs] == [
        *ALL[:6], "START_BEHAVIOR", "COMPLETE_ACTION", "COMPLETE_STEP", "COMPLETE_STAGE",
        "NEXT_STAGE",
    ]  # fmt: skip
    assert [t.get("answered_by") for t in logs] == [
        None, "1", None, "3", None, "5", "5", "5", None, "9", None
    ]  # fmt: skip
    assert logs[6].find("payload/behavior").get("step_id") == "compute"
    summary = _summary(run)
    assert summary["verification"]["status"] == "passed"
    assert summary["answers"][0]["values"] == {"rows": 3}


def test_a_kill_between_a_reply_and_the_transition_it_foresaw_costs_no_call(
    tmp_path: Path,
) -> None:
    problem, data = _inputs(tmp_path)
    run, mark = tmp_path / "run", tmp_path / "paused"
    with FakeLLM(policy=combined()) as fake:
        env = {
            **_env(),
            "BCC_FAILPOINTS": "write:0002_START_STEP.pending.xml@1=pause",
            "BCC_FAILPOINTS_MARK": str(mark),
        }
        proc = subprocess.Popen(
            [*COMMAND, "run", str(problem), str(data), "--model", "openai/m", "--api-base",
             fake.url, "--out", str(run), "--quiet", "--max-alternatives", "1"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not mark.exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert mark.exists(), "never reached START_STEP's commit"
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == -signal.SIGKILL
        assert [r.transition for r in fake.requests] == ["START_WORKFLOW"]
        state = json.loads((run / "state.json").read_text())
        assert state["fsm_state"] == "STAGE_RUNNING"
        assert [f["question"] for f in state["foreseen"]] == ["START_STEP work #0"]
        resumed, _, _ = bcc("resume", str(run), "--quiet")
        assert resumed.returncode == 0, resumed.stderr
        assert [r.transition for r in fake.requests] == COMPACT_CALLS  # START_STEP: no call
    step = next(t for t in _logs(run) if t.get("event") == "START_STEP")
    assert step.get("answered_by") == "1"
    assert _summary(run)["verification"]["status"] == "passed"


FOLLOW_UP_CODE = (
    'final_answers["2"] = {"value": table.shape[1], "values": {"columns": table.shape[1]}, '
    '"text": f"{table.shape[1]} columns"}\nprint(final_answers)'
)


def test_a_fork_and_a_follow_up_work_in_compact_rounds(tmp_path: Path) -> None:
    arranged = []

    def policy(req: Request) -> str:
        t = req.transition
        if t == "START_BEHAVIOR":
            arranged.append(req)
            if len(arranged) == 1:  # the run's step: a fork of two behaviors
                b1, b2 = (_reply(t).replace("compute_b1", f"compute_{k}") for k in "ab")
                return (
                    f'<alternatives step_id="compute">{b1}{b2}'
                    '<choose better="higher">len(table)</choose></alternatives>'
                )
            return combined(FOLLOW_UP_CODE)(req)  # the follow-up's: with its actions
        if t == "FOLLOW_UP":
            return combined()(req).replace('id="work"', 'id="more"')
        return combined()(req)

    problem, data = _inputs(tmp_path)
    run = tmp_path / "run"
    with FakeLLM(policy=policy) as fake:
        proc, _, _ = bcc(
            "run", str(problem), str(data), "--model", "openai/m", "--api-base", fake.url,
            "--out", str(run), "--quiet",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        calls = [r.transition for r in fake.requests]
        # each branch asks its generator and its reflector (no part is offered to a
        # branch); the stage reflector is asked after the join
        assert calls.count("COMPLETE_ACTION") == 2 and calls.count("COMPLETE_STEP") == 2
        assert "START_STEP" not in calls and calls[-1] == "COMPLETE_STAGE"
        reflections = [r for r in fake.requests if r.transition == "COMPLETE_STEP"]
        assert not any("Compact:" in r.system for r in reflections)
        events = [t.get("event") for t in _logs(run)]
        assert "FORK" in events and "JOIN" in events
        before = len(fake.requests)
        asked, _, _ = bcc("ask", str(run), "How many columns?", "--quiet")
        assert asked.returncode == 0, asked.stderr
        follow = [r.transition for r in fake.requests[before:]]
    assert follow == ["FOLLOW_UP", *COMPACT_CALLS[1:]]
    summary = _summary(run)
    assert summary["verification"]["status"] == "passed"
    assert [a["values"] for a in summary["answers"]] == [{"rows": 3}]
    assert summary["follow_ups"][0]["answers"][0]["values"] == {"columns": 2}
