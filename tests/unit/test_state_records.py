"""WorkflowState holds typed records (a State, CellFacts, the parsed behavior) and changes
through its own methods; state.json stays the same text."""

from __future__ import annotations

import json
from typing import Any

from notebook_bcc.contract.payloads import parse_payload
from notebook_bcc.contract.types import BehaviorPayload
from notebook_bcc.fsm import Event, State
from notebook_bcc.rundir.state import CellFact, StageRecord, StepRecord, WorkflowState
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.handlers import Handlers

BEHAVIOR = (
    '<behavior id="fit_gbm" step_id="fit"><agent>Model-Agent</agent><task>Boosting.</task>'
    '<outputs><artifact name="rmse">float</artifact></outputs></behavior>'
)


def _running() -> WorkflowState:
    """A state in step ``m/fit``, as START_STEP leaves it."""
    st = WorkflowState(run_id="r", problem_title="p", fsm_state="STEP_RUNNING")
    st.stages = [StageRecord("m", "M", "g", steps=[StepRecord("fit", "Fit", "g")])]
    st.enter_stage(0)
    st.enter_step(0)
    return st


def _behavior() -> BehaviorPayload:
    value = parse_payload(BEHAVIOR, "behavior").value
    assert isinstance(value, BehaviorPayload)
    return value


def _text(state: WorkflowState) -> str:
    return json.dumps(state.to_json(), indent=1)


def _reloaded(state: WorkflowState) -> WorkflowState:
    return WorkflowState.from_json(json.loads(_text(state)))


def test_fsm_state_is_a_state_and_a_string_only_in_state_json() -> None:
    st = _running()
    assert st.fsm_state is State.STEP_RUNNING  # a name a caller gives becomes the State
    data = st.to_json()
    assert type(data["fsm_state"]) is str and data["fsm_state"] == "STEP_RUNNING"
    again = _reloaded(st)
    assert again.fsm_state is State.STEP_RUNNING
    assert _text(again) == _text(st)


def test_an_aborted_state_resumes_where_it_was_interrupted_and_only_then() -> None:
    st = _running()
    st.fsm_state, st.resume_from, st.error = State.WORKFLOW_ABORTED, "STEP_RUNNING", "budget"
    st.resume_aborted()
    assert (st.fsm_state, st.resume_from, st.error) == (State.STEP_RUNNING, "", "")
    st.fsm_state = State.WORKFLOW_ABORTED  # an abort that names no state stays aborted
    st.resume_aborted()
    assert st.fsm_state is State.WORKFLOW_ABORTED


def test_a_behavior_starts_and_is_forgotten_one_way_and_its_record_is_not_in_state_json() -> None:
    st = _running()
    behavior = _behavior()
    st.next_behavior()
    st.start_behavior(behavior, BEHAVIOR)
    assert (st.step.behaviors, st.iteration, st.behavior_id) == (1, 1, "fit_gbm")
    assert st.behavior is behavior and st.behavior_xml == BEHAVIOR
    assert st.step_log == [{"behavior": "fit_gbm", "iteration": 1, "task": "Boosting."}]
    assert "behavior" not in st.to_json() and st.to_json()["behavior_xml"] == BEHAVIOR
    # a state read back holds the XML; the run's handlers read it once, when first asked
    again = _reloaded(st)
    assert again.behavior is None and again.behavior_xml == BEHAVIOR
    handlers = Handlers(RunContext(None, None, None, again), None)  # type: ignore[arg-type]
    assert handlers.current_behavior() == behavior and again.behavior == behavior
    # a second behavior of the step: counted, and no behavior current until it starts
    st.last_execution = [CellFact("ok", "1")]
    st.next_behavior()
    assert (st.step.behaviors, st.iteration) == (2, 2)
    assert (st.behavior_id, st.behavior_xml, st.behavior, st.last_execution) == ("", "", None, [])
    assert len(st.step_log) == 1  # the step's attempts stay for the retry
    st.start_behavior(behavior, BEHAVIOR)
    st.feedback = "try again"
    st.enter_step(0)  # a new step forgets every attempt and the feedback
    assert (st.behavior, st.behavior_xml, st.iteration, st.feedback) == (None, "", 0, "")
    assert (
        st.step_log == []
        and Handlers(RunContext(None, None, None, st), None).current_behavior() is None
    )  # type: ignore[arg-type]


def test_cell_facts_stay_cell_facts_through_state_json() -> None:
    st = _running()
    facts = [
        CellFact("ok", "3", figures=("figure 1: a line",), code="x = 3"),
        CellFact("error", "boom", "KeyError", "'y'", code="y"),
    ]
    st.last_execution = facts
    st.step_log = [{"behavior": "b", "iteration": 1, "task": "t", "cells": facts}]
    data: dict[str, Any] = json.loads(_text(st))
    assert data["last_execution"][0] == {
        "status": "ok",
        "excerpt": "3",
        "error_name": None,
        "error_value": None,
        "figures": ["figure 1: a line"],
        "code": "x = 3",
    }
    again = WorkflowState.from_json(data)
    assert again.last_execution == facts and again.step_log[0]["cells"] == facts
    assert _text(again) == _text(st)
    assert again.progress()["last_cell"] == "error"


def test_a_step_retried_then_failed_is_counted_forced_and_logged_failed() -> None:
    st = _running()
    st.next_behavior()
    st.start_behavior(_behavior(), BEHAVIOR)
    st.retry_step("no rmse")
    assert (st.counters.failed_behaviors, st.feedback) == (1, "no rmse")
    st.fail_step("G3: 1 behavior tried")
    assert (st.step.status, st.step.note) == ("failed", "G3: 1 behavior tried")
    assert st.counters.forced_transitions == 1 and st.step_log[-1]["verdict"] == "failed"
    st.complete_step("done")  # a completed step drops the feedback
    assert (st.step.status, st.step.comment, st.feedback) == ("complete", "done", "")


def test_a_handler_returns_its_outcome_and_changes_the_state_through_its_methods() -> None:
    """START_STEP with the first planned step blocked (G8): it is skipped and noted, the next
    one starts; the handler says where the machine goes and the runner is left to commit."""
    from pathlib import Path

    from notebook_bcc.config import RunConfig
    from notebook_bcc.contract.translog import TransitionLog
    from notebook_bcc.rundir.notebook import NotebookDocument

    steps_xml = Path(__file__).parents[1] / "fixtures" / "payloads" / "steps.xml"
    st = WorkflowState(run_id="r", problem_title="p", fsm_state="STAGE_RUNNING")
    st.stages = [
        StageRecord("a", "A", "g", ["user_submit_files"], status="partial"),
        StageRecord("b", "B", "g"),
    ]
    st.enter_stage(1)
    saved: list[str] = []
    doc = NotebookDocument.create("t", "p", [], 1, saved.append)
    handlers = Handlers(RunContext(RunConfig(model="offline"), None, doc, st), None)  # type: ignore[arg-type]
    log = TransitionLog(1, "START_STEP", "STAGE_RUNNING", "step-planner", "b", 0, "now")
    outcome = handlers.handle(
        Event.START_STEP, parse_payload(steps_xml.read_text(encoding="utf-8"), "steps"), log
    )
    assert outcome.target is State.STEP_RUNNING and not outcome.forced
    blocked, started = st.stage.steps
    assert blocked.status == "skipped" and "user_submit_files" in blocked.blocked_by
    assert started.status == "running"
    assert st.step is started and st.stage.focus == "keep raw_dataset untouched"
    assert blocked.pcs[0] == ["predictability", "same file always gives the same frame"]
    assert st.fsm_state is State.STAGE_RUNNING  # the handler does not move the machine
    assert any("Data Loading" in c.source for c in doc.nb.cells) and saved
