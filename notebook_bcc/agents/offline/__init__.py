"""The built-in offline analyst: deterministic, no network, same XML as a model.

It decides from the Observation only (problem text, plan, ledger, execution facts) and never
reads the data files itself; the code it writes does the reading, in the kernel.
"""

from __future__ import annotations

from lxml import etree

from notebook_bcc.agents import AgentReply, AgentSettings
from notebook_bcc.agents.offline.plan import (
    MODELLING,
    StagePlay,
    StepPlay,
    follow_up_play,
    playbook,
)
from notebook_bcc.agents.offline.recipes import RECIPES, Cell, RecipeContext
from notebook_bcc.agents.offline.recipes_model import FAMILIES
from notebook_bcc.agents.offline.remarks import comment as remark
from notebook_bcc.agents.offline.remarks import decision_text, experience
from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.prompts import RenderedPrompt
from notebook_bcc.fsm import Event
from notebook_bcc.inputs.problem import ProblemSpec, read_problem, resolve_target
from notebook_bcc.inputs.questions import Question, follow_up_questions

__all__ = ["OfflineAnalyst"]

E = etree.Element
S = etree.SubElement


def _xml(root: etree._Element) -> str:
    return etree.tostring(root, encoding="unicode", pretty_print=True)


def _cdata_el(parent: etree._Element, tag: str, text: str) -> None:
    # a CDATA section cannot hold "]]>": such text is escaped as ordinary text instead
    S(parent, tag).text = etree.CDATA(text) if "]]>" not in text else text


def _variables(parent: etree._Element, tag: str, items: tuple[tuple[str, str], ...]) -> None:
    box = S(parent, tag)
    for name, desc in items:
        S(box, "variable", name=name).text = desc


class OfflineAnalyst:
    """Answers every agent transition with a genuine, deterministic analysis."""

    model = "offline"

    @classmethod
    def from_settings(cls, settings: AgentSettings) -> OfflineAnalyst:
        return cls()

    def respond(
        self, prompt: RenderedPrompt, obs: Observation, *, repair: str | None = None
    ) -> AgentReply:
        handler = {
            Event.START_WORKFLOW: self._stages,
            Event.FOLLOW_UP: self._follow_up,
            Event.START_STEP: self._steps,
            Event.START_BEHAVIOR: self._behavior,
            Event.COMPLETE_ACTION: self._actions,
            Event.COMPLETE_STEP: self._reflection,
            Event.COMPLETE_STAGE: self._stage_reflection,
        }[obs.event]
        return AgentReply(text=handler(obs), model=self.model)

    # -- facts ---------------------------------------------------------------------------
    @staticmethod
    def _spec(obs: Observation) -> ProblemSpec:
        return read_problem(obs.problem)

    def _columns(self, obs: Observation) -> list[str]:
        """The table's columns: from the ledger once it is loaded, else from the preview (its
        module imports pandas, which the runner already has by then)."""
        from notebook_bcc.inputs.preview import preview_columns

        return [c for c, _ in self._column_types(obs)] or preview_columns(obs.data_preview)

    def _target(self, obs: Observation, spec: ProblemSpec | None = None) -> tuple[str | None, str]:
        """The column ``spec`` (the problem's, by default) asks to model, and the task."""
        spec = spec or self._spec(obs)
        target = resolve_target(spec, self._columns(obs))
        if target is None:
            return None, "eda"
        task = spec.task
        if task == "auto":
            dtype = next((t for c, t in self._column_types(obs) if c == target), "float64").lower()
            numeric = dtype.startswith(("int", "float", "uint"))
            task = "regression" if numeric else "classification"
        return target, task

    def _column_types(self, obs: Observation) -> list[tuple[str, str]]:
        for name in ("clean_dataset", "raw_dataset"):
            rec = obs.variable(name)
            if rec is not None and rec.columns:
                return list(rec.columns)
        return []

    def _plays(self, obs: Observation) -> tuple[StagePlay, ...]:
        target, _ = self._target(obs)
        modelling = any(stage.id == MODELLING for stage in obs.stages)  # as planned
        asks = len(obs.questions) > obs.asked_questions  # the problem's own questions
        plays = playbook(modelling, target, asks, len(obs.files))
        asked = enumerate(obs.follow_ups, 1)
        return plays + tuple(follow_up_play(n, self._asked_model(obs, t)[0]) for n, t in asked)

    def _asked_model(self, obs: Observation, text: str) -> tuple[str | None, str]:
        """The column a follow-up asks to model (named in backticks), and the task."""
        spec = read_problem(text)
        return self._target(obs, spec) if spec.supervised else (None, "eda")

    @staticmethod
    def _asked_by(obs: Observation, play: StepPlay) -> str:
        """The text of the follow-up a follow-up step answers (its id ends with the number)."""
        return obs.follow_ups[int(play.id.rsplit("_", 1)[1]) - 1]

    def _step_play(self, obs: Observation) -> StepPlay:
        for stage in self._plays(obs):
            for step in stage.steps:
                if obs.step and step.id == obs.step.id:
                    return step
        raise LookupError(f"no play for step {obs.step.id if obs.step else None}")

    # -- planners -------------------------------------------------------------------------
    def _stages(self, obs: Observation) -> str:
        spec = self._spec(obs)
        root = E("stages")
        S(root, "title").text = spec.title
        target, _ = self._target(obs)  # a model only of a column of the data
        unread = spec.supervised and not self._columns(obs)  # no column known: trust the text
        modelling = target is not None or unread
        for stage in playbook(modelling, target, bool(obs.questions), len(obs.files)):
            el = S(root, "stage", id=stage.id, title=stage.title)
            S(el, "goal").text = stage.goal
            _variables(el, "verified_artifacts", stage.artifacts)
            if stage.required:
                _variables(el, "required_variables", tuple((r, "") for r in stage.required))
        if modelling:
            named = target or spec.target
            focus = (
                f"Task: {spec.task}"
                + (f", target `{named}`" if named else "")
                + f" ({spec.reason})."
            )
        elif spec.supervised:
            focus = f"Task: eda ({spec.reason}, but no column of the data is the target)."
        else:
            focus = f"Task: eda ({spec.reason})."
        S(root, "focus").text = focus
        return _xml(root)

    def _follow_up(self, obs: Observation) -> str:
        """A follow-up: one new stage that answers it on the cleaned table."""
        stage = follow_up_play(len(obs.follow_ups), self._asked_model(obs, obs.follow_ups[-1])[0])
        root = E("stages")
        el = S(root, "stage", id=stage.id, title=stage.title)
        S(el, "goal").text = stage.goal
        _variables(el, "verified_artifacts", stage.artifacts)
        _variables(el, "required_variables", tuple((r, "") for r in stage.required))
        return _xml(root)

    def _steps(self, obs: Observation) -> str:
        stage = next(s for s in self._plays(obs) if obs.stage and s.id == obs.stage.id)
        root = E("steps")
        for step in stage.steps:
            el = S(root, "step", id=step.id, title=step.title)
            S(el, "goal").text = step.goal
            _variables(el, "verified_artifacts", step.artifacts)
            if step.required:
                _variables(el, "required_variables", tuple((r, "") for r in step.required))
        return _xml(root)

    def _behavior(self, obs: Observation) -> str:
        play = self._step_play(obs)
        n = obs.behaviors_in_step + 1
        forks = play.recipe == "model_selection" and n == 1 and obs.max_alternatives > 1
        if forks and self._target(obs)[0] is not None and self._worth_a_fork(obs):
            return _xml(self._fork(obs, play))
        return _xml(self._one_behavior(obs, play, f"{play.id}_b{n}"))

    def _worth_a_fork(self, obs: Observation) -> bool:
        """Only when the problem's front matter says `fork: yes`. A fork costs each branch a
        kernel boot and a replay of the notebook; measured on 2 cores with verification, it
        made the run slower at every size tried (dabench_weather_train, 150,147 cells: 27.0 s
        against 22.0 s in one behavior; four times its rows: 64-70 s against 52-59 s), so the
        analyst does not fork on its own."""
        return bool(self._spec(obs).fork)

    def _fork(self, obs: Observation, play: StepPlay) -> etree._Element:
        """The model comparison as a fork: one branch per model family, the better kept."""
        root = E("alternatives", step_id=play.id)
        choose = S(root, "choose", better="higher")
        choose.text = "model_comparison[best_model_name]['cv_mean']"
        for family, models in FAMILIES[: obs.max_alternatives]:
            branch = self._one_behavior(obs, play, f"{play.id}_{family}")
            branch.find("task").text = (
                f"Prepare the features with leakage guards and a seeded hold-out split, then "
                f"compare {models} with a baseline by seeded 5-fold cross-validation."
            )
            root.append(branch)
        return root

    def _one_behavior(self, obs: Observation, play: StepPlay, ident: str) -> etree._Element:
        n = obs.behaviors_in_step + 1
        root = E("behavior", id=ident, step_id=play.id)
        S(root, "agent").text = play.agent
        task = play.goal
        if n > 1:
            task += (
                f" Attempt {n}: use a more defensive approach. Previous feedback: {obs.feedback}"
            )
        S(root, "task").text = task
        if play.required:
            _variables(root, "inputs", tuple((r, "") for r in play.required))
        outs = S(root, "outputs")
        for name, desc in play.artifacts:
            S(outs, "artifact", name=name).text = desc
        acc = S(root, "acceptance")
        for criterion in play.acceptance:
            _cdata_el(acc, "criterion", criterion)
        return root

    def _actions(self, obs: Observation) -> str:
        play = self._step_play(obs)
        target, task = self._target(obs)
        if play.recipe == "follow_up_model":
            target, task = self._asked_model(obs, self._asked_by(obs, play))
        spec = self._spec(obs)
        ctx = RecipeContext(
            target=target,
            task=task,
            seed=obs.seed,
            variant=max(0, obs.iteration - 1),
            questions=self._questions(obs, play),
            drop=spec.drop,
            keep=spec.keep,
            files=len(obs.files),
            join=spec.join,
            join_on=spec.join_on,
            sheet=spec.sheet,
            family=_family(obs),
        )
        root = E("actions")
        if play.id == "data_loading" and obs.iteration <= 1:
            S(root, "update-project-title").text = spec.title
        if play.id == "integrity_checks" and obs.iteration <= 1:
            S(root, "add-text").text = decision_text(spec, target, task)
        cells: tuple[Cell, ...] = RECIPES[play.recipe](ctx)
        for cell in cells:
            _cdata_el(root, "add-code2run" if cell.kind == "code" else "add-text", cell.content)
        return _xml(root)

    @staticmethod
    def _questions(obs: Observation, play: StepPlay) -> tuple[Question, ...]:
        """The questions a step answers: a follow-up's own, else the problem's."""
        if play.recipe in ("follow_up_answers", "follow_up_model"):
            return follow_up_questions(OfflineAnalyst._asked_by(obs, play))
        return obs.questions[: len(obs.questions) - obs.asked_questions]

    # -- reflectors -----------------------------------------------------------------------
    def _reflection(self, obs: Observation) -> str:
        failed = [c for c in obs.cells if c.status != "ok"]
        missing = [n for n, present in obs.artifacts if not present]
        bad = [(e, s, d) for e, s, d in obs.criteria if s != "passed"]
        complete = not failed and not missing and not bad and bool(obs.cells)
        root = E("reflection", current_step_is_complete="true" if complete else "false")
        ev = S(root, "evaluation")
        arts = S(ev, "artifacts_produced")
        for name, present in obs.artifacts:
            rec = obs.variable(name)
            S(arts, "artifact", name=name, status="complete" if present else "missing").text = (
                rec.describe().lstrip("- ") if rec else "not in the kernel"
            )
        acc = S(ev, "acceptance_validation")
        for expr, status, _ in obs.criteria:
            _cdata_el(acc, "criterion", expr)
            acc[-1].set("status", "passed" if status == "passed" else "failed")
        goal = S(ev, "goal_achievement")
        S(goal, "status").text = "achieved" if complete else "not_achieved"
        reasons = []
        for cell in failed:
            reasons.append(
                f"a cell ended {cell.status}: {cell.error_name or ''} {cell.error_value or ''}".strip()
            )
        if missing:
            reasons.append("missing artifacts: " + ", ".join(missing))
        for expr, status, detail in bad:
            reasons.append(f"criterion `{expr}` {status}" + (f" ({detail})" if detail else ""))
        why = "; ".join(reasons) if reasons else "all cells ran, artifacts present, criteria passed"
        _cdata_el(goal, "reasoning", why)
        dec = S(root, "decision")
        S(dec, "next_state").text = "STEP_COMPLETED" if complete else "STEP_RUNNING"
        _cdata_el(dec, "reasoning", why if complete else f"Retry defensively: {why}")
        if complete:
            ctx = S(root, "context_for_next")
            produced = S(ctx, "variables_produced")
            for name, _ in obs.artifacts:
                rec = obs.variable(name)
                if rec:
                    S(produced, "variable", name=name).text = rec.describe().lstrip("- ")[:200]
            comment = remark(obs)
            if comment:
                _cdata_el(root, "comment", comment)
        return _xml(root)

    def _stage_reflection(self, obs: Observation) -> str:
        stage, step = obs.stage, obs.step
        assert stage is not None and step is not None
        pending = [s for s in stage.steps[obs.step_index + 1 :] if s.status == "pending"]
        done = not pending
        root = E("stage_reflection", stage_is_complete="true" if done else "false")
        ev = S(root, "step_evaluation")
        S(ev, "step_id").text = step.id
        status = {"complete": "complete", "failed": "failed"}.get(step.status, "partial")
        S(ev, "completion_status").text = status
        findings = S(ev, "key_findings")
        for name in step.verified_artifacts:
            rec = obs.variable(name)
            if rec is not None:
                S(findings, "finding", priority="medium").text = rec.describe().lstrip("- ")[:300]
        assessment = S(root, "stage_assessment")
        prog = S(assessment, "progress")
        finished = sum(1 for s in stage.steps if s.status in ("complete", "failed", "skipped"))
        S(prog, "completed_steps").text = str(finished)
        S(prog, "remaining_steps").text = str(len(pending))
        S(assessment, "goal_status").text = "achieved" if status == "complete" else "partial"
        dec = S(root, "decision")
        S(dec, "next_state").text = "STAGE_COMPLETED" if done else "STEP_RUNNING"
        if pending:
            S(dec, "next_focus").text = pending[0].id
        S(dec, "reasoning").text = (
            "All steps of the stage are done." if done else f"Next: {pending[0].title}."
        )
        vm = S(root, "variable_management")
        retain = S(vm, "retain")
        for name in stage.verified_artifacts if done else step.verified_artifacts:
            if obs.variable(name) is not None:
                S(retain, "variable", name=name, next_use="later stages").text = "stage artifact"
        if done and stage.id == "data_integrity_assessment" and obs.variable("raw_dataset"):
            dep = S(vm, "deprecate")
            S(
                dep, "variable", name="raw_dataset", replacement="clean_dataset", safe="true"
            ).text = "superseded by clean_dataset; frees memory"
        if done:
            S(root, "stage_experience").text = experience(obs)
        return _xml(root)


def _family(obs: Observation) -> str:
    """The model family a fork's branch compares (its behavior id ends with it), else ""."""
    ident = obs.behavior.id if obs.behavior and obs.branch else ""
    return next((f for f, _ in FAMILIES if ident.endswith(f"_{f}")), "")


def _family(obs: Observation) -> str:
    """The model family a fork's branch compares (its behavior id ends with it), else ""."""
    ident = obs.behavior.id if obs.behavior and obs.branch else ""
    return next((f for f, _ in FAMILIES if ident.endswith(f"_{f}")), "")
