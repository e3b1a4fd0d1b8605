"""Compact rounds' parts (docs/agents.md, "Compact rounds"): taken out of a reply before it is
validated, checked on their own, and kept only for a transition that will come."""

from __future__ import annotations

from pathlib import Path

from notebook_bcc.contract.payloads import parse_payload
from notebook_bcc.fsm import State
from notebook_bcc.rundir.state import StageRecord, StepRecord, WorkflowState
from notebook_bcc.workflow.exchange import foreseen_parts

PAYLOADS = Path(__file__).parents[1] / "fixtures" / "payloads"


def _xml(kind: str) -> str:
    text = (PAYLOADS / f"{kind}.xml").read_text(encoding="utf-8")
    return text[text.index(f"<{kind}") :]


def _inside(outer: str, close: str, part: str) -> str:
    head, _, tail = outer.rpartition(close)
    return head + part + close + tail


def _state() -> WorkflowState:
    s = WorkflowState(run_id="r", problem_title="p", fsm_state="BEHAVIOR_COMPLETED")
    s.stages = [
        StageRecord("a", "A", "g", steps=[StepRecord("s1", "S1", "g", status="running")]),
        StageRecord("b", "B", "g"),
    ]
    s.stage_index, s.behavior_id, s.iteration = 0, "s1_b1", 1
    return s


def test_a_reply_is_validated_without_its_part_and_the_part_on_its_own() -> None:
    behavior = _inside(_xml("behavior"), "</behavior>", _xml("actions"))
    parsed = parse_payload(behavior, "behavior")
    assert "<actions" not in parsed.xml
    (part,) = parsed.parts
    assert (part.kind, part.error) == ("actions", "")
    assert parse_payload(part.text, "actions").value == parse_payload(_xml("actions")).value
    broken = _inside(_xml("behavior"), "</behavior>", "<actions><add-text>x</add-text></actions>")
    broken = broken.replace("<add-text>x</add-text>", "")
    (bad,) = parse_payload(broken, "behavior").parts  # the behavior itself stands
    assert "needs at least one" in bad.error


def test_a_stage_reflection_is_kept_only_when_the_step_completes_as_planned() -> None:
    reflection = _xml("reflection")
    combined = _inside(reflection, "</reflection>", _xml("stage_reflection"))
    parsed = parse_payload(combined, "reflection")
    s = _state()
    kept = foreseen_parts(parsed, s, State.STEP_COMPLETED, False, 5, "behavior-reflector")
    assert [f.question for f in kept] == ["COMPLETE_STAGE a/s1/s1_b1 #1"]
    assert foreseen_parts(parsed, s, State.STEP_RUNNING, False, 5, "r") == []  # a retry
    assert foreseen_parts(parsed, s, State.STEP_COMPLETED, True, 5, "r") == []  # G3 failed it
    revision = '<plan_revision><reason>r</reason><drop_step id="s9">x</drop_step></plan_revision>'
    revised = parse_payload(_inside(combined, "</reflection>", revision), "reflection")
    assert foreseen_parts(revised, s, State.STEP_COMPLETED, False, 5, "r") == []


def test_a_stage_s_steps_are_kept_for_a_stage_still_to_come() -> None:
    steps = _xml("steps")
    stages = (
        '<stages><stage id="b" title="B"><goal>g</goal><verified_artifacts>'
        f'<variable name="x">x</variable></verified_artifacts>{steps}</stage>'
        '<stage id="z" title="Z"><goal>g</goal><verified_artifacts>'
        f'<variable name="y">y</variable></verified_artifacts>{steps}</stage></stages>'
    )
    parsed = parse_payload(stages, "stages")
    assert [p.key for p in parsed.parts] == ["b", "z"]
    kept = foreseen_parts(parsed, _state(), State.STAGE_RUNNING, False, 1, "stage-planner")
    assert [f.question for f in kept] == ["START_STEP b #0"]  # z is not in the plan
    assert kept[0].seq == 1 and kept[0].agent == "stage-planner"


def test_a_revision_of_a_stage_s_goal_drops_the_steps_the_plan_gave_it() -> None:
    from notebook_bcc.contract.types import PlanChange, PlanRevision, VariableSpec
    from notebook_bcc.rundir.state import Foreseen
    from notebook_bcc.workflow import revisions

    def revise(**change: object) -> tuple[list[str], list[str]]:
        s = _state()
        s.foreseen = [Foreseen("START_STEP b #0", "steps", _xml("steps"), 1, "stage-planner")]
        fields = {"title": None, "goal": None, "verified_artifacts": None}
        fields |= {"required_variables": None, **change}
        done = revisions.apply(PlanRevision("r", (PlanChange("revise_stage", "b", **fields),)), s)
        return done, [f.question for f in s.foreseen]

    needs = (VariableSpec("clean", "a table"),)
    done, kept = revise(required_variables=needs)
    assert kept == ["START_STEP b #0"] and "dropped" not in done[0]
    done, kept = revise(goal="Another goal.")
    assert kept == [] and "the steps given with the plan are dropped" in done[0]
