"""Plan revisions (issue 26): read from a reflection, checked against the plan (nothing done
may change), applied to the state, shown in later prompts."""

from __future__ import annotations

import re

import pytest

from notebook_bcc.contract.payloads import parse_payload
from notebook_bcc.contract.prompts import render, template_examples
from notebook_bcc.contract.types import PlanRevision, ReflectionPayload, StageReflectionPayload
from notebook_bcc.errors import PayloadError
from notebook_bcc.fsm import Event
from notebook_bcc.rundir.state import StageRecord, StepRecord, WorkflowState
from notebook_bcc.workflow import revisions

RETRY = """<reflection current_step_is_complete="false">
  <evaluation><goal_achievement><status>not_achieved</status><reasoning>r</reasoning>
  </goal_achievement></evaluation>
  <decision><next_state>STEP_RUNNING</next_state><reasoning>again</reasoning></decision>
  <plan_revision>
    <reason>statsmodels is not installed</reason>
    <revise_step id="fit"><goal>Fit with LinearRegression.</goal></revise_step>
    <add_step id="residuals" title="Residuals" after="fit"><goal>Plot them.</goal>
      <verified_artifacts><variable name="resid">Series</variable></verified_artifacts></add_step>
    <drop_step id="summary_table">needs statsmodels</drop_step>
    <revise_stage id="report"><goal>Report the LinearRegression fit.</goal></revise_stage>
    <supersede step="load/read">not yet measured</supersede>
  </plan_revision>
</reflection>"""


def _state() -> WorkflowState:
    s = WorkflowState(run_id="r", problem_title="p", fsm_state="BEHAVIOR_COMPLETED")
    read = StepRecord("read", "Read", "Read it.", ["raw"], [], "complete")
    read.findings = [["high", "missing counts are not yet measured"], ["low", "344 rows"]]
    steps = [
        StepRecord("clean", "Clean", "Clean it.", [], [], "complete"),
        StepRecord("fit", "Fit", "Fit OLS with statsmodels.", ["model"], [], "running"),
        StepRecord("summary_table", "Table", "statsmodels summary.", [], [], "pending"),
    ]
    s.stages = [
        StageRecord("load", "Load", "g", [], [], "complete", [read]),
        StageRecord("model", "Model", "g", [], [], "running", steps),
        StageRecord("report", "Report", "Report the statsmodels fit.", [], []),
    ]
    s.stage_index, s.step_index = 1, 1
    return s


def _revision(xml: str = RETRY) -> PlanRevision:
    value = parse_payload(xml, "reflection").value
    assert isinstance(value, ReflectionPayload) and value.revision is not None
    return value.revision


def test_every_example_in_the_prompts_is_a_valid_payload() -> None:
    examples = template_examples()
    assert sum(kind == "reflection" for kind, _ in examples) == 1
    for kind, xml in examples:
        parse_payload(xml, kind)
    behavior = next(x for k, x in examples if k == "reflection")  # every change, one example
    reflection = parse_payload(behavior, "reflection").value
    assert reflection.revision is not None and len(reflection.revision.changes) == 4
    assert reflection.revision.superseded == ()  # the stage reflector retires findings
    stage = next(x for k, x in examples if k == "stage_reflection")
    value = parse_payload(stage, "stage_reflection").value
    assert isinstance(value, StageReflectionPayload) and value.revision is not None
    assert [c.kind for c in value.revision.changes] == [
        "revise_step", "add_step", "drop_step", "revise_stage",
    ]  # fmt: skip


def test_a_revision_is_read_checked_and_applied_in_order() -> None:
    s, revision = _state(), _revision()
    assert revision.reason == "statsmodels is not installed"
    revisions.check(revision, s, "reflection")
    done = revisions.apply(revision, s)
    assert done == [
        "step fit: goal revised",
        "step residuals added after fit",
        "step summary_table dropped",
        "stage report: goal revised",
        "findings of load/read superseded ('not yet measured')",
    ]
    model = s.stages[1]
    assert [t.id for t in model.steps] == ["clean", "fit", "residuals", "summary_table"]
    assert model.steps[1].goal == "Fit with LinearRegression."
    assert model.steps[2].verified_artifacts == ["resid"]
    assert (model.steps[3].status, model.steps[3].note) == ("skipped", "dropped: needs statsmodels")
    assert s.stages[2].goal == "Report the LinearRegression fit."


def test_a_revision_changes_the_needs_and_artifacts_of_a_step_or_stage() -> None:
    """Relay trials A and E: a stage's goal was revised to use new variables, but its needs
    stayed as planned, so what it now needs was not protected from deprecation (G5)."""
    needs = '<required_variables><variable name="cv_scores">x</variable></required_variables>'
    arts = '<verified_artifacts><variable name="best">x</variable></verified_artifacts>'
    xml = re.sub(r"<plan_revision>.*</plan_revision>", "", RETRY, flags=re.S).replace(
        "</reflection>",
        f"<plan_revision><reason>r</reason><revise_stage id='report'>{needs}{arts}"
        f"</revise_stage><revise_step id='fit'>{needs}</revise_step>"
        f"<revise_step id='summary_table'><goal>g</goal><required_variables/></revise_step>"
        "</plan_revision></reflection>",
    )
    s, revision = _state(), _revision(xml)
    s.stages[1].steps[2].required_variables = ["model"]
    revisions.check(revision, s, "reflection")
    assert revisions.apply(revision, s) == [
        "stage report: artifacts and needs revised",
        "step fit: needs revised",
        "step summary_table: goal and needs revised",
    ]
    report = s.stages[2]
    assert (report.goal, report.verified_artifacts, report.required_variables) == (
        "Report the statsmodels fit.",  # no goal given: the goal stays
        ["best"],
        ["cv_scores"],
    )
    fit = s.stages[1].steps[1]
    assert (fit.goal, fit.verified_artifacts, fit.required_variables) == (
        "Fit OLS with statsmodels.",
        ["model"],
        ["cv_scores"],
    )
    assert s.stages[1].steps[2].required_variables == []  # an empty list: it needs nothing now


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('<revise_step id="clean"><goal>x</goal></revise_step>', "step 'clean' is complete"),
        ('<drop_step id="fit">x</drop_step>', "step 'fit' is running; only a pending step"),
        ('<revise_stage id="load"><goal>x</goal></revise_stage>', "'load' is an earlier stage"),
        ('<revise_step id="nope"><goal>x</goal></revise_step>', "no step 'nope' in stage"),
        ('<revise_step id="fit"/>', "changes nothing"),
        ('<revise_stage id="report"/>', "changes nothing"),
        (
            '<add_step id="clean" title="T"><goal>g</goal><verified_artifacts/></add_step>',
            "step 'clean' already exists",
        ),
        ('<supersede step="load/read">weather</supersede>', "no finding of load/read contains"),
    ],
)
def test_a_change_to_what_is_done_or_not_there_is_refused(change: str, message: str) -> None:
    xml = re.sub(r"<plan_revision>.*</plan_revision>", "", RETRY, flags=re.S).replace(
        "</reflection>", f"<plan_revision><reason>r</reason>{change}</plan_revision></reflection>"
    )
    with pytest.raises(PayloadError) as caught:
        revisions.check(_revision(xml), _state(), "reflection")
    assert message in str(caught.value)
    if "supersede" in change:  # the remedy, for the repair: what a finding's text must be
        assert "must be a part of one of its findings as written" in str(caught.value)
    else:
        assert "only what is still to come" in str(caught.value)


def test_a_revision_needs_a_reason() -> None:
    xml = RETRY.replace("<reason>statsmodels is not installed</reason>", "<reason> </reason>")
    with pytest.raises(PayloadError, match="needs a <reason>"):
        parse_payload(xml, "reflection")


def test_later_prompts_show_the_plan_as_revised_and_no_superseded_finding() -> None:
    from notebook_bcc.contract.observation import build_observation

    s = _state()
    revisions.apply(_revision(), s)
    kw = dict(problem="p", files=(), behavior=None, max_behaviors=4, seed=1)
    user = render(build_observation(s, Event.START_BEHAVIOR, **kw)).user  # type: ignore[arg-type]
    assert "Fit with LinearRegression." in user and "statsmodels." not in user.split("## Plan")[1]
    assert "step `residuals`: " in user.split("## Plan")[1] and "residuals [pending]" in user
    step_planner = render(build_observation(s, Event.START_STEP, **kw)).user  # type: ignore[arg-type]
    assert "missing counts are not yet measured" not in step_planner
    assert "(low) 344 rows" in step_planner
    assert (
        "superseded since: 1 finding naming 'not yet measured' (statsmodels is not installed)"
        in step_planner
    )
