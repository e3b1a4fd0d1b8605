"""Prompt rendering (issue 11): decision text whole, one budget, history trimmed whole items
at a time and named, every variable in the kernel named."""

from __future__ import annotations

import os
from dataclasses import replace

from notebook_bcc.contract.observation import (
    Attempt,
    CellFact,
    Checks,
    Observation,
    StageView,
    StepView,
)
from notebook_bcc.contract.payloads import BehaviorPayload, VariableSpec
from notebook_bcc.contract.prompts import PROMPT_BUDGET_CHARS, render
from notebook_bcc.fsm import Event
from notebook_bcc.inputs.questions import Question
from notebook_bcc.rundir.ledger import LedgerView, VariableLedger
from tests.unit.test_state_and_ledger import Info

STEP = StepView("fit", "Fit", "Fit the model on the training split.", "running", ("model",))
STAGE = StageView("modelling", "Modelling", "Model it.", "running", ("model",), (), (STEP,))


def _ledger(n: int, repr_chars: int) -> LedgerView:
    lines = tuple(
        (f"v{i:03d}", f"- v{i:03d}: dict [len 3] = {{'k': '{'x' * repr_chars}'}}") for i in range(n)
    )
    return LedgerView(lines, ("old (deprecated by s; use new instead)",))


def _obs(event: str, **kw: object) -> Observation:
    behavior = BehaviorPayload(
        "fit_b1", "fit", "Model-Agent", kw.pop("task", "Fit it."), (), (VariableSpec("model"),),
        ("model is not None",),
    )  # fmt: skip
    base = dict(
        event=Event(event),
        problem="Predict `y`.",
        files=("assets/d.csv",),
        location="modelling/fit/fit_b1",
        iteration=1,
        stages=(STAGE,),
        behavior=behavior,
    )
    return Observation(**{**base, **kw})  # type: ignore[arg-type]


def test_a_small_prompt_is_not_trimmed() -> None:
    prompt = render(_obs("COMPLETE_ACTION", ledger_view=_ledger(3, 10)))
    assert prompt.omitted == () and "left out" not in prompt.user
    assert (
        "Deleted from the kernel (do not use unless your code creates them again): "
        "old (deprecated by s; use new instead)" in prompt.user
    )


def test_a_huge_ledger_is_trimmed_to_the_budget_and_keeps_every_name() -> None:
    prompt = render(_obs("COMPLETE_ACTION", ledger_view=_ledger(400, 300)))
    assert prompt.size <= PROMPT_BUDGET_CHARS
    assert prompt.omitted  # some details went
    for i in range(400):
        assert f"v{i:03d}" in prompt.user  # by its line or in the note that lists what went
    assert "variables' details (still in the kernel) left out to keep this prompt" in prompt.user
    kept = [ln for ln in prompt.user.splitlines() if ln.startswith("- v")]
    assert kept and kept[0].startswith("- v000")  # the top-ranked variables keep their details
    assert all(ln.endswith("'}") for ln in kept)  # whole lines only


def test_decision_text_is_never_cut_even_past_the_budget() -> None:
    task = "word " * 20_000  # 100,000 characters: more than the whole budget
    prompt = render(_obs("COMPLETE_ACTION", task=task.strip(), ledger_view=_ledger(50, 300)))
    assert task.strip() in prompt.user
    assert "chars omitted" not in prompt.user
    assert all(label.startswith(("ledger:", "deleted:")) for label in prompt.omitted)


def test_earlier_attempts_are_dropped_oldest_first_and_named() -> None:
    attempts = tuple(
        Attempt(f"fit_b{i}", i, "t", (CellFact("error", "x" * 3_000, "ValueError", "bad"),), Checks(), "retry", "why")
        for i in range(1, 60)
    )  # fmt: skip
    prompt = render(_obs("COMPLETE_STAGE", attempts=attempts))
    assert prompt.size <= PROMPT_BUDGET_CHARS
    assert (
        "earlier attempts left out to keep this prompt within its budget: fit_b1, fit_b2"
        in prompt.user
    )
    assert "#### fit_b59 (iteration 59)" in prompt.user  # the latest stays


def test_lessons_are_whole_bullets_and_flag_deleted_variables() -> None:
    view = LedgerView((), ("raw_dataset (deprecated by s; use clean instead)",))
    obs = _obs(
        "START_STEP",
        lessons=(("load", "raw_dataset has 3 bad rows.\nUse latin-1."),),
        ledger_view=view,
    )
    prompt = render(obs)
    assert (
        "- [load] raw_dataset has 3 bad rows.\n  Use latin-1. "
        "(since deleted from the kernel: raw_dataset)" in prompt.user
    )


def test_a_lesson_is_flagged_only_for_names_it_cites_as_code() -> None:
    view = LedgerView((), ("counts (x)", "tab2 (x)", "model_a (x)", "fit (x)"))
    text = "Keep counts and the table; `fit` is slow; tab2 and model_a are small."
    prompt = render(_obs("START_STEP", lessons=(("s", text),), ledger_view=view))
    assert "(since deleted from the kernel: tab2, model_a, fit)" in prompt.user


def test_older_deleted_names_lose_their_reasons_first() -> None:
    gone = tuple(f"v{i:02d} (deprecated by s; no replacement)" for i in range(30))
    prompt = render(_obs("COMPLETE_ACTION", ledger_view=LedgerView((), gone)))
    assert (
        "v00; v01;" in prompt.user and "v09; v10 (deprecated by s; no replacement)" in prompt.user
    )


def test_every_template_lists_the_allowed_values_and_shows_the_elements_the_runner_reads() -> None:
    """Optional elements the runner only logs (a reflector's own account of the checks the
    runner made, a PCS check, step counts) are allowed but not shown: each costs every prompt."""
    reflection = render(_obs("COMPLETE_STEP")).system
    for text in ("achieved | partial | not_achieved", "<recommendations_for_next>",
                 "<variables_produced>", "<plan_revision>"):  # fmt: skip
        assert text in reflection
    assert "<acceptance_validation>" not in reflection
    stage = render(_obs("COMPLETE_STAGE")).system
    for text in ("<deprecate>", "<stage_experience>", "<goal_status>", "high |", 'safe="false"'):
        assert text in stage
    assert "<pcs_check>" not in stage and "<completed_steps>" not in stage
    behavior = render(_obs("START_BEHAVIOR")).system
    assert "Explore-Agent`, `Clean-Agent`" in behavior and "kernel's user namespace" in behavior
    assert "final_answers" in render(_obs("START_WORKFLOW")).system


def test_the_step_planners_pcs_considerations_reach_the_action_generator() -> None:
    step = StepView("fit", "Fit", "Fit it.", "running", pcs=(("predictability", "hold out 20%"),))
    stage = StageView("modelling", "Modelling", "Model it.", "running", (), (), (step,))
    prompt = render(_obs("COMPLETE_ACTION", stages=(stage,)))
    assert "PCS considerations: predictability: hold out 20%" in prompt.user


def test_the_agents_are_told_the_kernels_packages_and_the_planner_the_metrics() -> None:
    env = "Python 3.11.7; installed: pandas 2.2.2; not installed: statsmodels"
    for event in ("START_WORKFLOW", "START_STEP", "START_BEHAVIOR", "COMPLETE_ACTION"):
        assert env in render(_obs(event, environment=env)).system, event
    unknown = render(_obs("START_WORKFLOW")).system
    assert "as it reported them: (not reported;" in unknown
    planner = " ".join(render(_obs("START_WORKFLOW")).system.split())
    assert "`baseline_score` (same rows, a baseline that ignores the features" in planner
    behavior = render(_obs("START_BEHAVIOR")).system
    assert "to use a module no cell imported" in " ".join(behavior.split())


def test_the_second_trial_s_open_points_are_answered_in_the_prompts() -> None:
    """A model asked: what form an open question's value takes, which standard deviation
    cv_std is, how criteria compare floats, whether a lucky split is checked; and it took a
    planner's focus for a finding."""
    asked = (Question("What drives y?"),)
    planner = " ".join(render(_obs("START_WORKFLOW", questions=asked)).system.split())
    assert "for an open question (why, what drives, describe), its short headline" in planner
    assert "numpy `.std()`, ddof=0" in planner
    assert "more than two `cv_std` from `cv_mean`" in planner
    assert "`focus` says what to look at, not what you expect to find" in planner
    behavior = " ".join(render(_obs("START_BEHAVIOR")).system.split())
    assert "Compare computed floats with a tolerance" in behavior
    # the third trial: the generator, not only the planner, must know these rules
    action = " ".join(render(_obs("COMPLETE_ACTION", questions=asked)).system.split())
    assert "for an open question (why, what drives, describe), its short headline" in action
    assert "re-runs the notebook from the top in a fresh kernel" in action
    assert "more than two `cv_std` from `cv_mean`" in action
    stage = StageView("modelling", "Modelling", "Model it.", "running", (), (), (STEP,), "the y")
    user = render(_obs("START_BEHAVIOR", stages=(stage,), focus="y may be skewed")).user
    assert "Plan focus (the stage planner's intent, before any cell ran): y may be skewed" in user
    assert "the step planner's intent when it planned the stage" in user


def test_a_retry_shows_the_reviewers_feedback_once() -> None:
    feedback = "FEEDBACK-7: the column is called Price, not price."
    attempt = Attempt("fit_b1", 1, "t", (), Checks(), "retry", f"Goal missed. {feedback}")
    for event in ("START_BEHAVIOR", "COMPLETE_ACTION"):
        prompt = render(_obs(event, attempts=(attempt,), feedback=feedback))
        assert prompt.user.count("FEEDBACK-7") == 1, event
        assert "Goal missed. (the feedback on it follows" in prompt.user
    reflector = render(_obs("COMPLETE_STEP", attempts=(attempt,), feedback=feedback))
    assert f"Goal missed. {feedback}" in reflector.user  # no feedback section there


def test_a_retry_is_located_in_its_step_not_in_the_behavior_it_replaces() -> None:
    from notebook_bcc.contract.observation import build_observation
    from notebook_bcc.rundir.state import StageRecord, StepRecord, WorkflowState

    s = WorkflowState(run_id="r", problem_title="p", fsm_state="STEP_RUNNING")
    s.stages = [StageRecord("a", "A", "g", [], [], "running", [StepRecord("s1", "S", "g", [], [])])]
    s.behavior_id = "s1_b1"
    kw = dict(problem="p", files=(), behavior=None, max_behaviors=4, seed=1)
    assert build_observation(s, Event.START_BEHAVIOR, **kw).location == "a/s1"  # type: ignore[arg-type]
    assert build_observation(s, Event.COMPLETE_STEP, **kw).location == "a/s1/s1_b1"  # type: ignore[arg-type]


def test_a_name_kept_as_a_dicts_key_is_not_called_deleted() -> None:
    from notebook_bcc.rundir.ledger import VariableRecord

    view = LedgerView((), ("median_price_airco (deprecated by s; no replacement)",))
    medians = VariableRecord(
        "medians", "alive", "dict", 100, "s", "s", None, 2, (), "{'median_price_airco': 3.1}"
    )
    text = "`median_price_airco` is the median price with air conditioning."
    obs = _obs("START_STEP", lessons=(("s", text),), ledger_view=view, ledger=(medians,))
    assert "since deleted" not in render(obs).user


def test_the_stage_reflector_knows_its_stage_is_the_last() -> None:
    first = StageView("load", "Load", "Load it.", "complete")
    prompt = render(_obs("COMPLETE_STAGE", stages=(first, STAGE), stage_index=1))
    assert "Stage 2 of 2: `modelling` (the last stage of the plan; the run ends when it " in (
        prompt.user
    )
    assert "the last stage" not in render(_obs("COMPLETE_STAGE", stages=(STAGE, first))).user


def test_names_imported_from_modules_are_listed_as_imported() -> None:
    obs = _obs(
        "COMPLETE_ACTION",
        modules=(("np", "numpy"), ("stats", "scipy.stats")),
        callables=(
            ("LinearRegression", "sklearn.linear_model._base"),
            ("helper", "signature (x)"),
        ),
    )
    user = render(obs).user
    assert (
        "Imported in the kernel (usable under these names; no need to import them again): "
        "np = numpy, stats = scipy.stats, LinearRegression (from sklearn.linear_model)" in user
    )
    assert "Functions and classes the notebook defines: helper (signature (x))" in user


# -- issue 28: a layout providers can cache, each thing once ------------------------------
EVENTS = (
    "START_WORKFLOW", "START_STEP", "START_BEHAVIOR", "COMPLETE_ACTION", "COMPLETE_STEP",
    "COMPLETE_STAGE",
)  # fmt: skip


def test_every_prompt_starts_with_the_same_run_block_then_the_agents_instructions() -> None:
    prompts = [render(_obs(e, data_preview=("### assets/d.csv\ncolumns (1): y",))) for e in EVENTS]
    run = prompts[0].system[: prompts[0].run_chars]
    assert run.startswith("# A notebook-bcc run") and "### assets/d.csv" in run
    assert "Predict `y`." in run
    for p in prompts:
        assert p.system[: p.run_chars] == run  # the same text, so a provider caches it
        assert p.system[p.run_chars :].startswith("You are the **")
        assert "Predict `y`." not in p.system[p.run_chars :] + p.user  # the problem once


def test_the_state_runs_from_the_least_volatile_to_the_current_position() -> None:
    for event in EVENTS[1:]:
        user = render(_obs(event)).user
        heads = [h for h in ("## Focus", "## Plan", "## Lessons", "## Findings",
                             "## Current stage and step", "## Variables", "## Current position",
                             "## Current behavior", "## Stage to plan")
                 if h in user]  # fmt: skip
        assert [user.index(h) for h in heads] == sorted(user.index(h) for h in heads), event
        assert heads[-1] in ("## Current position", "## Current behavior", "## Stage to plan")


def test_a_retry_shows_the_generator_the_last_attempts_code() -> None:
    """The reflector's feedback says what to change in the code; the generator sees it (the
    arranger, which shapes the behavior, does not need it)."""
    cells = (CellFact("ok", "3", code="LAST_CODE = 1"), CellFact("error", "", "KeyError", "x",
             code="print(frame['x'])"))  # fmt: skip
    first = Attempt(
        "fit_b1", 1, "t", (CellFact("ok", "", code="FIRST_CODE = 0"),), Checks(), "retry", "a"
    )
    second = Attempt("fit_b2", 2, "t", cells, Checks(), "retry", "Use frame['y'].")
    obs = _obs("COMPLETE_ACTION", attempts=(first, second), feedback="Use frame['y'].")
    user = render(obs).user
    assert (
        "Its code (the cells it ran, in order):\n```python\n"
        "# cell 1: ok, in the notebook\nLAST_CODE = 1\n\n"
        "# cell 2: error, not in the notebook\nprint(frame['x'])" in user
    )
    assert "FIRST_CODE" not in user  # only the last attempt's
    arranger = render(replace(obs, event=Event.START_BEHAVIOR)).user
    assert "LAST_CODE" not in arranger


def test_the_behaviors_of_one_step_share_all_but_the_behavior_and_what_it_did() -> None:
    """The generator and the behavior reflector see the step (and its stage by title) before
    the variables, the behavior after them; the instructions do not count behaviors."""
    for event in ("COMPLETE_ACTION", "COMPLETE_STEP"):
        first = render(_obs(event, ledger_view=_ledger(3, 10), behaviors_in_step=1))
        second = render(
            _obs(event, ledger_view=_ledger(4, 10), behaviors_in_step=2, task="Fit it again.",
                 location="modelling/fit/fit_b2", iteration=2)
        )  # fmt: skip
        assert first.system == second.system, event
        shared = os.path.commonprefix([first.user, second.user])
        assert "## Current stage and step" in shared and "Stage `modelling` — Modelling" in shared
        assert "Goal: Fit the model on the training split." in shared, event
        assert "Steps of this stage: `fit` (Fit) [running]" in shared, event
        assert "Model it." not in shared, event
        assert "## Current behavior" not in shared and "Fit it again." in second.user, event


def test_the_plan_shows_no_status_so_it_stays_the_same_while_the_step_changes() -> None:
    done = StepView("load", "Load", "Load it.", "complete")
    first = StageView("modelling", "Modelling", "Model it.", "running", (), (), (done, STEP))
    second = replace(
        first, steps=(replace(done, status="complete"), replace(STEP, status="complete"))
    )
    a = render(_obs("START_BEHAVIOR", stages=(first,), step_index=1)).user
    b = render(_obs("COMPLETE_STAGE", stages=(second,), step_index=1)).user
    plan = lambda u: u.split("## Plan\n")[1].split("\n## ")[0]  # noqa: E731
    assert plan(a) == plan(b)
    assert "Fit the model on the training split." in plan(a)  # the step goal, whole
    assert a.count("Fit the model on the training split.") == 1  # not again in the position
    assert "Steps of this stage: load [complete], fit [running]" in a


def test_a_question_the_problem_holds_is_listed_by_its_number_and_first_words() -> None:
    long = "Calculate the mean and median of the mpg column without excluding any data at all."
    obs = _obs(
        "START_BEHAVIOR",
        problem=f"# Cars\n\n1. {long}\n   Answer format: @mean_mpg[x]",
        questions=(Question(long, ("mean_mpg",)),),
    )
    prompt = render(obs)
    whole = prompt.system + prompt.user
    assert whole.count(long) == 1
    assert "1. Calculate the mean and median of the mpg column without excluding any …" in whole
    assert "   values: mean_mpg" in whole


def test_a_question_from_the_problem_s_prose_is_listed_whole() -> None:
    """Trials G and H: named by its first (and last) words, a sentence of a paragraph did not
    say what it asks."""
    long = (
        "Body weight spans several orders of magnitude: check whether total sleep is more "
        "strongly related to the logarithm of body weight than to body weight itself."
    )
    obs = _obs("START_WORKFLOW", problem=f"# Sleep\n\nThe table lists 83 mammals. {long}",
               questions=(Question(long),))  # fmt: skip
    assert f"1. {long}\n" in render(obs).system


def test_the_results_contract_is_the_one_that_applies() -> None:
    plain = render(_obs("START_WORKFLOW", supervised=False)).system
    assert "final_summary" in plain
    assert "`final_metrics` (listed because" not in plain and "`final_answers`: a dict" not in plain
    asked = render(_obs("START_WORKFLOW", questions=(Question("How many?"),))).system
    assert "`final_answers`: a dict" in asked and "`final_metrics` (listed because" in asked


def test_a_steps_result_is_not_shown_beside_findings_that_say_it() -> None:
    found = StepView("load", "Load", "Load it.", "complete", comment="COMMENT-1: 344 rows.",
                     findings=(("high", "344 rows"),))  # fmt: skip
    bare = StepView("clean", "Clean", "Clean it.", "complete", comment="COMMENT-2: 333 kept.")
    stage = StageView("prep", "Prep", "Prepare.", "running", (), (), (found, bare, STEP))
    user = render(_obs("START_BEHAVIOR", stages=(stage,), step_index=2)).user
    assert "(high) 344 rows" in user and "COMMENT-1" not in user
    assert "result: COMMENT-2: 333 kept." in user


def test_the_first_stage_reflector_is_not_told_that_no_step_has_finished() -> None:
    """Its step just finished (a trial's model read "(no step has finished yet)" as a
    contradiction); the planners and the arranger, before any step ran, are told so."""
    stage = render(_obs("COMPLETE_STAGE")).user
    assert "(none: the step just finished is the run's first)" in stage
    assert "no step has finished yet" not in stage
    assert "(no step has finished yet)" in render(_obs("START_BEHAVIOR")).user


def test_the_reflectors_see_a_deprecated_variable_s_kind_and_size() -> None:
    """Trial H: a variable deprecated but still in the kernel lost its kind and size."""
    ledger = VariableLedger()
    cols = (("a", "int64"), ("b", "str"))
    ledger.record_namespace(
        [Info("old", "DataFrame", "4x2", columns=cols), Info("new", "dict")], "s/t#1"
    )
    assert ledger.deprecate("old", "new", "s", {}).applied
    stage = render(_obs("COMPLETE_STAGE", ledger_view=ledger.prompt_view())).user
    note = "(DEPRECATED by s, still in the kernel; use new instead)"
    assert f"- old: DataFrame [4x2] {note}\n- new: dict\n" in stage


def test_one_rule_for_each_thing() -> None:
    """Issue 39: every model in the trials asked which of two rules held: `final_answers`
    "from the last stage" or "steps add to the one dict"; escaped text inside CDATA; whether
    a retried behavior's cells that ran stay in the notebook."""
    from notebook_bcc.contract.payloads import resource_dir

    texts = {p.name: p.read_text(encoding="utf-8") for p in resource_dir().glob("*.md")}
    for name, text in texts.items():
        for line in text.split("\n- "):
            assert not ("`final_answers`" in line and "last stage" in line), name
    summary = (
        "`final_summary` (always, by the last step\n  with its other work, not a step of its own)"
    )
    assert summary in texts["START_WORKFLOW.md"]
    assert "Any stage may create it; every later step adds to the one dict" in texts["RESULTS.md"]
    assert (
        "Inside\n  CDATA everything is written as is and read as is: never `&lt;` there."
        in (texts["RUN.md"])
    )
    assert "A cell\nthat ran without error stays in the notebook" in texts["COMPLETE_ACTION.md"]


def test_an_earlier_attempts_checks_show_what_failed_whole_and_what_passed_counted() -> None:
    checks = Checks(
        artifacts=(("model", True), ("scores", False), ("frame", True)),
        criteria=(("r2 > 0.5", "passed", ""), ("len(scores) == 5", "error", "NameError: scores")),
        notes=("the cell took 40 s",),
    )
    attempt = Attempt("fit_b1", 1, "t", (), checks, "retry", "Make scores.")
    user = render(_obs("START_BEHAVIOR", attempts=(attempt,), behaviors_in_step=1)).user
    assert (
        "checks passed: 2 artifacts present, 1 criteria passed\n"
        "artifact scores: MISSING\n"
        "criterion `len(scores) == 5`: error (NameError: scores)\n"
        "note: the cell took 40 s\n" in user
    )
    current = render(_obs("COMPLETE_STEP", artifacts=checks.artifacts, criteria=checks.criteria))
    assert "artifact model: present\nartifact scores: MISSING\nartifact frame: present\n" in (
        current.user
    )
