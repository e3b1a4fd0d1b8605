from dataclasses import replace
from pathlib import Path

import pytest

from notebook_bcc import fsm
from notebook_bcc.fsm import Event, State, Transition

ROOT = Path(__file__).parents[2]
WORKFLOW_DOC = ROOT / "docs" / "workflow.md"


def test_table_is_valid_and_has_the_design_rows():
    fsm.validate()
    assert fsm.transition_for(State.IDLE, Event.START_WORKFLOW).targets == (State.STAGE_RUNNING,)
    assert set(fsm.transition_for(State.BEHAVIOR_COMPLETED, Event.COMPLETE_STEP).targets) == {
        State.STEP_COMPLETED,
        State.STEP_RUNNING,
    }
    assert fsm.transition_for(State.STAGE_COMPLETED, Event.NEXT_STAGE).agent is None
    for state in State:
        if state not in fsm.STOPS:
            assert fsm.transition_for(state, Event.FAIL).targets == (State.WORKFLOW_FAILED,)
            assert fsm.transition_for(state, Event.ABORT).targets == (State.WORKFLOW_ABORTED,)


def test_terminals_have_no_exits():
    for terminal in fsm.TERMINALS:
        with pytest.raises(fsm.InvalidTransition):
            fsm.transition_for(terminal, Event.FAIL)


def test_the_success_state_is_left_only_by_a_follow_up():
    row = fsm.event_from(State.WORKFLOW_COMPLETED)
    assert (row.event, row.targets, row.agent) == (
        Event.FOLLOW_UP, (State.STAGE_RUNNING,), "stage-planner"
    )  # fmt: skip
    with pytest.raises(fsm.InvalidTransition):
        fsm.transition_for(State.WORKFLOW_COMPLETED, Event.ABORT)  # a completed run stays so
    second = (Transition(Event.NEXT_STAGE, State.WORKFLOW_COMPLETED, (State.STAGE_RUNNING,)),)
    with pytest.raises(ValueError, match="one exit is FOLLOW_UP"):
        fsm.validate(fsm.TRANSITIONS + second)


def test_validation_rejects_a_broken_table():
    rows = fsm.TRANSITIONS
    # a terminal with an exit
    bad = rows + (Transition(Event.START_STEP, State.WORKFLOW_FAILED, (State.STEP_RUNNING,)),)
    with pytest.raises(ValueError, match="terminal"):
        fsm.validate(bad)
    # an unreachable state: drop the only edge into STAGE_COMPLETED
    no_stage_done = tuple(
        replace(t, targets=(State.STEP_RUNNING,)) if t.event == Event.COMPLETE_STAGE else t
        for t in rows
    )
    with pytest.raises(ValueError):
        fsm.validate(no_stage_done)


def test_check_target_refuses_a_target_outside_the_row():
    with pytest.raises(fsm.InvalidTransition):
        fsm.check_target(State.STEP_RUNNING, Event.START_BEHAVIOR, State.STAGE_COMPLETED)


@pytest.mark.parametrize("page", [ROOT / "README.md", WORKFLOW_DOC], ids=lambda p: p.name)
def test_the_table_in_readme_and_docs_is_rendered_from_the_fsm(page: Path):
    assert fsm.render_markdown() in page.read_text(encoding="utf-8")  # DESIGN §2: README's


def test_fsm_imports_nothing_from_the_package():
    source = Path(fsm.__file__).read_text()
    assert "from ." not in source and "import notebook_bcc" not in source


def test_a_fork_is_the_arrangers_other_answer_and_a_join_ends_it():
    fork = fsm.transition_for(State.STEP_RUNNING, Event.FORK)
    start = fsm.transition_for(State.STEP_RUNNING, Event.START_BEHAVIOR)
    assert (fork.agent, fork.root, fork.targets) == (
        start.agent, "alternatives", (State.BEHAVIOR_RUNNING,)
    )  # fmt: skip
    join = fsm.transition_for(State.BEHAVIOR_RUNNING, Event.JOIN)
    assert join.agent is None
    assert set(join.targets) == {State.STEP_COMPLETED, State.STEP_RUNNING}
    # the regular row of each state stays the one the runner takes
    assert fsm.event_from(State.STEP_RUNNING).event == Event.START_BEHAVIOR
    assert fsm.event_from(State.BEHAVIOR_RUNNING).event == Event.COMPLETE_ACTION
    # a fork must be the other answer of the agent that leaves its state
    wrong = tuple(
        replace(t, agent="step-planner") if t.event == Event.FORK else t for t in fsm.TRANSITIONS
    )
    with pytest.raises(ValueError, match="other answer"):
        fsm.validate(wrong)
    lonely = tuple(t for t in fsm.TRANSITIONS if t.event != Event.FORK)
    with pytest.raises(ValueError, match="joins no fork"):
        fsm.validate(lonely)
