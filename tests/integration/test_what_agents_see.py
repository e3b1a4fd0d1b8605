"""What each agent is shown (issue 11), through the real CLI and the real litellm path against
``tests.fakellm.FakeLLM`` on 127.0.0.1, with a real kernel.

One scripted two-stage run (module fixture) drives every check: a 6,000-character behavior
task, a cell that prints a marker and draws a figure, a ``safe="false"`` deprecation, and
``final_answers`` computed in the kernel for the problem's two questions. The model is named
``openai/gpt-4o`` so that litellm's model map says it takes images.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.fakellm import FakeLLM, Request
from tests.integration.test_llm import bcc_scripted as bcc

pytestmark = [pytest.mark.check, pytest.mark.timeout(240)]

MODEL = "openai/gpt-4o"
QUESTIONS = ("How many widgets are there?", "What is the largest width?")
PROBLEM = (
    "# Widgets\n\nSome widgets were measured. Answer these questions:\n\n"
    + "\n".join(f"{i}. {q}" for i, q in enumerate(QUESTIONS, 1))
    + "\n"
)
#: a task far longer than any earlier per-field bound, with a distinct end
LONG_TASK = ("Measure the widgets carefully, column by column. " * 130)[:5_988] + " END-OF-TASK"
MARKER = "MARKER-OUTPUT-7731"

STAGES = """<stages><title>Widgets</title>
<stage id="measure" title="Measure"><goal>Measure. Artifacts: widths.</goal>
<verified_artifacts><variable name="widths">Series</variable></verified_artifacts></stage>
<stage id="answer" title="Answer"><goal>Answer. Artifacts: final_answers.</goal>
<verified_artifacts><variable name="final_answers">dict</variable></verified_artifacts></stage>
<focus>FOCUS-OF-THE-PLAN</focus></stages>"""
CODE_MEASURE = f"""
import pandas as pd
import matplotlib.pyplot as plt
frame = pd.read_csv(user_submit_files[0])
widths = frame["width"]
tmp = 1
wide = pd.DataFrame({{f"wide_col_{{i:02d}}": [i] for i in range(40)}})
print("{MARKER}", len(frame))
fig, ax = plt.subplots(figsize=(4, 3))
ax.hist(widths)
ax.set_title("Widths")
plt.show()
"""
CODE_ANSWER = f"""
final_summary = f"There are {{len(frame)}} widgets; the widest is {{widths.max()}}."
final_answers = {{
    {QUESTIONS[0]!r}: {{"value": int(len(frame)), "text": "rows in the table"}},
    {QUESTIONS[1]!r}: {{"value": float(widths.max()), "text": "largest width"}},
}}
"""


def _stage_no(req: Request) -> int:
    return 2 if "answer" in req.headers.get("x-bcc-location", "").split("/")[0] else 1


def policy(req: Request) -> str:
    event, second = req.transition, _stage_no(req) == 2
    step = "respond" if second else "read"
    art = "final_answers" if second else "widths"
    if event == "START_WORKFLOW":
        return STAGES
    if event == "START_STEP":
        return (
            f'<steps><step id="{step}" title="T"><goal>g</goal><verified_artifacts>'
            f'<variable name="{art}">x</variable></verified_artifacts></step>'
            "<focus>FOCUS-OF-THE-STAGE</focus></steps>"
        )
    if event == "START_BEHAVIOR":
        task = "Answer from the kernel." if second else LONG_TASK
        return (
            f'<behavior id="{step}_b1" step_id="{step}"><agent>Explore-Agent</agent>'
            f'<task>{task}</task><outputs><artifact name="{art}">x</artifact></outputs>'
            f"<acceptance><criterion>{art} is not None</criterion></acceptance></behavior>"
        )
    if event == "COMPLETE_ACTION":
        code = CODE_ANSWER if second else CODE_MEASURE
        return f"<actions><add-text>Do it.</add-text><add-code2run><![CDATA[{code}]]></add-code2run></actions>"
    if event == "COMPLETE_STEP":
        return (
            '<reflection current_step_is_complete="true"><evaluation><goal_achievement>'
            "<status>achieved</status><reasoning>REFLECTOR-REASONING</reasoning></goal_achievement>"
            "</evaluation><decision><next_state>STEP_COMPLETED</next_state><reasoning>done</reasoning>"
            "</decision><comment>REFLECTOR-COMMENT</comment></reflection>"
        )
    if event == "COMPLETE_STAGE":
        deprecate = (
            ""
            if second
            else '<deprecate><variable name="tmp" safe="false">not needed</variable></deprecate>'
        )
        return (
            f'<stage_reflection stage_is_complete="true"><step_evaluation><step_id>{step}</step_id>'
            "<completion_status>complete</completion_status><key_findings>"
            '<finding priority="high">FINDING-WITH-NUMBERS 4 widgets</finding></key_findings>'
            "</step_evaluation><decision><next_state>STAGE_COMPLETED</next_state>"
            f"<reasoning>r</reasoning></decision><variable_management>{deprecate}"
            "</variable_management><stage_experience>LESSON-ONE\nLESSON-TWO</stage_experience>"
            "</stage_reflection>"
        )
    raise AssertionError(event)


@dataclass
class Seen:
    run: Path
    requests: list[Request]
    returncode: int
    stderr: str

    def systems(self, event: str) -> list[str]:
        return [r.messages[0]["content"] for r in self.requests if r.transition == event]

    def users(self, event: str) -> list[str]:
        out = []
        for r in self.requests:
            if r.transition != event:
                continue
            content = r.messages[-1]["content"]
            out.append(content if isinstance(content, str) else content[0]["text"])
        return out


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seen]:
    tmp = tmp_path_factory.mktemp("seen")
    problem, data = tmp / "problem.md", tmp / "widgets.csv"
    problem.write_text(PROBLEM)
    data.write_text("id,width\n1,2.5\n2,3.5\n3,1.0\n4,7.25\n")
    with FakeLLM(policy=policy) as fake:
        proc, _, _ = bcc(
            "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
            "--out", str(tmp / "run"), "--quiet",
        )  # fmt: skip
        yield Seen(tmp / "run", list(fake.requests), proc.returncode, proc.stderr)


def test_run_completes(seen: Seen) -> None:
    assert seen.returncode == 0, seen.stderr


def test_a_long_task_reaches_the_action_generator_and_the_reflector_whole(seen: Seen) -> None:
    assert len(LONG_TASK) == 6_000
    for event in ("COMPLETE_ACTION", "COMPLETE_STEP"):
        first = seen.users(event)[0]
        assert LONG_TASK in first, event
        assert "chars omitted" not in first and "left out" not in first


def test_the_stage_reflector_sees_the_steps_output_and_the_reflectors_words(seen: Seen) -> None:
    prompt = seen.users("COMPLETE_STAGE")[0]
    assert MARKER in prompt
    assert "REFLECTOR-REASONING" in prompt
    # the reflector's comment for the notebook is not read again: its words say the same
    assert "REFLECTOR-COMMENT" not in prompt
    assert "figure 1:" in prompt and "axes 'Widths'" in prompt  # the figure's note, with title
    # and what is drawn: the histogram's range and its tallest bins
    assert "axes 1: histogram of 10 bars, x 1 to 7.25, y 0 to 1; largest: [1, 1.625) 1," in prompt


def test_the_first_step_planner_sees_the_parameters_and_the_data(seen: Seen) -> None:
    prompt = seen.users("START_STEP")[0]
    assert "- user_submit_files: list [len 1] = ['assets/widgets.csv']" in prompt
    assert "(no variables yet)" not in prompt
    assert "- width: float64, 0 missing" in seen.systems("START_STEP")[0]  # the run's block


def test_the_next_stage_sees_focus_findings_lessons_and_no_stale_behavior(seen: Seen) -> None:
    prompt = seen.users("START_STEP")[1]
    assert "FOCUS-OF-THE-PLAN" in prompt
    assert "FINDING-WITH-NUMBERS 4 widgets" in prompt
    assert "REFLECTOR-COMMENT" not in prompt  # the step's findings say it: said once
    assert "- [measure] LESSON-ONE\n  LESSON-TWO" in prompt  # a lesson stays one bullet
    assert "read_b1" not in prompt and "Behavior `" not in prompt
    arranger = seen.users("START_BEHAVIOR")[1]
    assert "FOCUS-OF-THE-PLAN" in arranger and "FOCUS-OF-THE-STAGE" in arranger


def test_a_deprecated_but_kept_variable_is_listed_as_such(seen: Seen) -> None:
    prompt = seen.users("START_STEP")[1]
    line = next(ln for ln in prompt.splitlines() if ln.startswith("- tmp:"))
    assert "DEPRECATED by measure, still in the kernel" in line


def test_an_image_part_reaches_a_vision_model(seen: Seen) -> None:
    reflect = [r for r in seen.requests if r.transition == "COMPLETE_STEP"]
    content = reflect[0].messages[-1]["content"]
    assert isinstance(content, list) and content[0]["type"] == "text"
    images = [p for p in content if p["type"] == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert isinstance(reflect[1].messages[-1]["content"], str)  # no figure, plain text


def test_answers_come_from_the_kernel_and_are_reproduced(seen: Seen) -> None:
    summary = json.loads((seen.run / "summary.json").read_text())
    got = {a["question"]: a["value"] for a in summary["answers"]}
    assert got == {QUESTIONS[0]: 4, QUESTIONS[1]: 7.25}
    assert summary["verification"]["status"] == "passed"
    assert summary["verification"]["results"] == "reproduced"
    md = (seen.run / "summary.md").read_text()
    assert "## Answers" in md and f"1. {QUESTIONS[0]} **4**" in md
    assert f"2. {QUESTIONS[1]} **7.25**" in md


def test_every_planner_and_the_action_generator_are_told_the_kernels_packages(
    seen: Seen,
) -> None:
    from importlib import metadata

    for event in ("START_WORKFLOW", "START_STEP", "START_BEHAVIOR", "COMPLETE_ACTION"):
        request = next(r for r in seen.requests if r.transition == event)
        system = request.messages[0]["content"]
        assert f"statsmodels {metadata.version('statsmodels')}" in system, event
        assert "xgboost" in system.split("; not installed: ")[1], event


def test_a_40_column_frame_reaches_the_action_generator_with_every_name(seen: Seen) -> None:
    prompt = seen.users("COMPLETE_ACTION")[1]
    line = next(ln for ln in prompt.splitlines() if ln.startswith("- wide: DataFrame"))
    assert all(f"wide_col_{i:02d}:int64" in line for i in range(40)) and "more)" not in line


def test_the_closing_summary_is_the_runs_findings(seen: Seen) -> None:
    summary = json.loads((seen.run / "summary.json").read_text())
    text = "There are 4 widgets; the widest is 7.25."
    assert summary["findings"] == {"source": "final_summary", "text": text}
    assert text in (seen.run / "summary.md").read_text().split("## Findings")[1]
    assert text in (seen.run / "report.html").read_text()


FOLLOW_UP = "Which widget is the widest, by id?"
FOLLOW_UP_CODE = """
final_answers = {**final_answers, "3": {"value": int(frame.loc[widths.idxmax(), "id"]), "text": "id"}}
print("widest id", final_answers["3"]["value"])
"""


def follow_up_policy(req: Request) -> str:
    """The follow-up's stage ``widest`` builds on ``frame`` and ``widths`` (no reading)."""
    if req.transition == "FOLLOW_UP":
        return (
            '<stages><stage id="widest" title="Widest"><goal>Find the widest widget from '
            "widths. Artifacts: final_answers.</goal><verified_artifacts><variable "
            'name="final_answers">dict</variable></verified_artifacts></stage></stages>'
        )
    where = req.headers.get("x-bcc-location", "")
    if not where.startswith("widest"):
        raise AssertionError(f"{req.transition} outside the follow-up")
    # the answer stage's replies, with the follow-up's step and code
    as_answer = replace(req, headers={**req.headers, "x-bcc-location": "answer"})
    reply = policy(as_answer)
    return reply.replace("respond", "widest_id").replace(CODE_ANSWER, FOLLOW_UP_CODE)


def test_a_follow_up_planner_sees_the_follow_up_the_findings_and_the_live_variables(
    seen: Seen, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(seen.run, run)
    with FakeLLM(policy=follow_up_policy) as fake:
        proc, _, _ = bcc("ask", str(run), FOLLOW_UP, "--api-base", fake.url, "--quiet")
        requests = list(fake.requests)
    assert proc.returncode == 0, proc.stderr
    asked = [r for r in requests if r.transition == "FOLLOW_UP"]
    assert len(asked) == 1 and requests[0] is asked[0]  # the first call of the follow-up
    user = asked[0].messages[-1]["content"]
    system = asked[0].messages[0]["content"]
    assert user.rstrip().endswith("Plan the follow-up's stages now.")
    assert f'## Follow-up question\n{FOLLOW_UP}\n(its question in the run\'s list: "3")' in user
    assert "FINDING-WITH-NUMBERS 4 widgets" in user and "LESSON-ONE" in user
    assert "- widths: Series" in user and "- frame: DataFrame" in user  # the live variables
    assert "do not load or clean the\ndata again" in system
    assert f"3. {FOLLOW_UP}" in system  # numbered after the problem's two questions
    summary = json.loads((run / "summary.json").read_text())
    (follow_up,) = summary["follow_ups"]
    assert follow_up["stages"] == ["widest"] and follow_up["answers"][0]["value"] == 4
    assert [a["value"] for a in summary["answers"]] == [4, 7.25]  # the problem's, as they were
    assert summary["verification"]["status"] == "passed"
