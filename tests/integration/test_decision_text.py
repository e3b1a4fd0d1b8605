"""Decision text is never cut (issue 39), through the real CLI and litellm path against the
loopback server: a retry prompt whose state is far over the prompt budget (hundreds of
variables with long values) still carries the current behavior's task, its criteria and the
reflector's feedback whole; the behavior reflector sees the code and the output of a cell that builds the results whole; what
the budget left out is logged."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from lxml import etree

from notebook_bcc.contract.prompts import PROMPT_BUDGET_CHARS
from tests.fakellm import FakeLLM, Request
from tests.integration.test_llm import MODEL
from tests.integration.test_llm import bcc_scripted as bcc
from tests.scripted import one_stage

pytestmark = [pytest.mark.check, pytest.mark.timeout(240)]

TASK = (
    "Build the wide table. "
    + " ".join(f"Detail {i} of the task." for i in range(300))
    + " TASK_END"
)
CRITERIA = [f"len(wide_{i}) == 40" for i in range(30)] + ["result is not None"]
FEEDBACK = "Redo it. " + " ".join(f"Point {i} to fix." for i in range(250)) + " FEEDBACK_END"
CODE = (
    "for _i in range(400):\n"
    "    globals()[f'wide_{_i}'] = [f'value {_i} {_j} ' * 3 for _j in range(40)]\n"
    "final_summary = 'OUTPUT_START ' + 'x' * 4000 + ' MIDDLE ' + 'x' * 4000 + ' OUTPUT_END'\n"
    "print(final_summary)\n"
    "result = 2081990.36"
)


def policy():
    seen = {"START_BEHAVIOR": 0, "COMPLETE_STEP": 0}

    def answer(req: Request) -> str:
        if req.transition in seen:
            seen[req.transition] += 1
        if req.transition == "START_BEHAVIOR":
            n = seen["START_BEHAVIOR"]
            criteria = "".join(f"<criterion><![CDATA[{c}]]></criterion>" for c in CRITERIA)
            return (
                f'<behavior id="compute_b{n}" step_id="compute"><agent>A</agent>'
                f'<task>{TASK}</task><outputs><artifact name="result">x</artifact></outputs>'
                f"<acceptance>{criteria}</acceptance></behavior>"
            )
        if req.transition == "COMPLETE_STEP" and seen["COMPLETE_STEP"] == 1:
            return (
                '<reflection current_step_is_complete="false"><evaluation><goal_achievement>'
                "<status>partial</status><reasoning>r</reasoning></goal_achievement></evaluation>"
                f"<decision><next_state>STEP_RUNNING</next_state><reasoning>{FEEDBACK}"
                "</reasoning></decision></reflection>"
            )
        obs = SimpleNamespace(
            event=req.transition, behaviors_in_step=seen["START_BEHAVIOR"] - 1, artifacts=()
        )
        return one_stage(obs, lambda o: CODE, complete_when=lambda o: True)

    return answer


def test_a_retry_far_over_budget_keeps_task_criteria_and_feedback_whole(tmp_path: Path) -> None:
    problem, data, run = tmp_path / "problem.md", tmp_path / "t.csv", tmp_path / "run"
    problem.write_text("Build the wide table.\n")
    data.write_text("a,b\n1,2\n")
    with FakeLLM(policy=policy()) as fake:
        proc, _, _ = bcc(
            "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
            "--out", str(run), "--quiet", "--no-verify",
        )  # fmt: skip
        generator = [r.last_user for r in fake.requests if r.transition == "COMPLETE_ACTION"]
        reflector = [r.last_user for r in fake.requests if r.transition == "COMPLETE_STEP"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(generator) == 2, "a first attempt and its retry"
    retry = generator[1]
    assert TASK in retry
    assert all(c in retry for c in CRITERIA)
    assert FEEDBACK in retry
    assert "variables' details" in retry and "left out" in retry  # the state was cut...
    logs = sorted((run / "logs").glob("*_COMPLETE_ACTION.xml"))
    omitted = etree.parse(str(logs[-1])).findtext(".//request/omitted")
    assert omitted and "ledger: " in omitted  # ... and the cut is logged
    for prompt in reflector:
        # a cell that builds the results shows its output whole, not head and tail
        assert "OUTPUT_START" in prompt and " MIDDLE " in prompt and "OUTPUT_END" in prompt
        assert "globals()[f'wide_{_i}']" in prompt  # the code it judges
    assert len(retry) > PROMPT_BUDGET_CHARS // 2
    # numbers are listed with every digit they have (not 2081990.0)
    listed = retry.split("## Variables in the kernel")[1].split("\n## ")[0]
    assert "- result: float = 2081990.36" in listed, listed[:300]
    assert all("result: float = 2081990.36" in prompt for prompt in reflector)


def test_a_retry_sees_the_cells_a_failure_left_unrun(tmp_path: Path) -> None:
    """Relay trial (Seattle weather): the retry's "earlier attempts" showed the failed cell
    only, not the cells after it that never ran, which the feedback asked to run as written."""
    seen = {"COMPLETE_ACTION": 0, "START_BEHAVIOR": 0}

    def answer(req: Request) -> str:
        if req.transition in seen:
            seen[req.transition] += 1
        if req.transition == "COMPLETE_ACTION" and seen["COMPLETE_ACTION"] == 1:
            return (
                "<actions><add-code2run><![CDATA[x = 1 / 0]]></add-code2run>"
                "<add-code2run><![CDATA[UNRUN_CELL = 2]]></add-code2run></actions>"
            )
        obs = SimpleNamespace(
            event=req.transition, behaviors_in_step=seen["START_BEHAVIOR"] - 1, artifacts=()
        )
        done = seen["START_BEHAVIOR"] >= 2  # the first attempt failed: retry it
        return one_stage(obs, lambda o: "result = 1", complete_when=lambda o: done)

    problem, data, run = tmp_path / "problem.md", tmp_path / "t.csv", tmp_path / "run"
    problem.write_text("Compute the result.\n")
    data.write_text("a,b\n1,2\n")
    with FakeLLM(policy=answer) as fake:
        proc, _, _ = bcc(
            "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
            "--out", str(run), "--quiet", "--no-verify",
        )  # fmt: skip
        generator = [r.last_user for r in fake.requests if r.transition == "COMPLETE_ACTION"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "# cell 1: error, not in the notebook\nx = 1 / 0" in generator[1]
    assert "# cell 2: skipped, not in the notebook\nUNRUN_CELL = 2" in generator[1]
