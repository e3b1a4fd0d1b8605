"""The runner: the only module that knows all the others.

One loop: take the table's event for the current state, ask the agent (agent transitions
only), parse the payload, act (notebook cells, kernel, ledger), enforce the guards, log the
transition and checkpoint. Durability order per transition: log file, event line, state.json.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from notebook_bcc import failpoints
from notebook_bcc.agents import Agent, AgentReply, make_agent
from notebook_bcc.config import RunConfig
from notebook_bcc.contract.observation import CellFact, Observation, observe
from notebook_bcc.contract.payloads import (
    ActionsPayload,
    BehaviorPayload,
    ParsedPayload,
    ReflectionPayload,
    StageReflectionPayload,
    StagesPayload,
    StepsPayload,
    element_for_log,
    parse_payload,
)
from notebook_bcc.contract.prompts import render
from notebook_bcc.contract.translog import TransitionLog
from notebook_bcc.errors import (
    BccError,
    BudgetExhausted,
    InputError,
    Interrupted,
    KernelError,
    PayloadError,
    StorageError,
)
from notebook_bcc.inputs.check import check_inputs
from notebook_bcc.inputs.preview import preview_files
from notebook_bcc.inputs.problem import read_problem
from notebook_bcc.kernel.figures import Figure, figures_in
from notebook_bcc.kernel.session import (
    CellOutcome,
    CheckReport,
    KernelSession,
    VariableInfo,
    execute_notebook,
    reap_kernels,
)
from notebook_bcc.rundir.notebook import CellTag, NotebookDocument
from notebook_bcc.rundir.results import RESULT_NAMES, compare
from notebook_bcc.rundir.state import StageRecord, StepRecord, Usage, WorkflowState
from notebook_bcc.rundir.store import RunStore, slugify, utc_now
from notebook_bcc.rundir.summary import build_summary, render_summary_md
from notebook_bcc.workflow import fsm
from notebook_bcc.workflow.exchange import AgentExchange
from notebook_bcc.workflow.fsm import Event, State

__all__ = ["Runner", "RunResult"]

EventHook = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    final_state: str
    exit_code: int
    message: str
    summary: dict[str, Any]


def _digest(code: str) -> str:
    return hashlib.sha256(code.strip().encode()).hexdigest()[:16]


class Runner:
    """Drives one run directory from its checkpoint to a terminal state."""

    def __init__(
        self,
        config: RunConfig,
        store: RunStore,
        state: WorkflowState,
        doc: NotebookDocument,
        *,
        problem_text: str,
        files: Sequence[str],
        on_event: EventHook | None = None,
        agent: Agent | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.state = state
        self.doc = doc
        self.problem_text = problem_text
        self.files = tuple(files)
        self.on_event = on_event or (lambda record: None)
        self.agent = agent or make_agent(
            config.model, api_base=config.api_base, run_id=state.run_id, timeout=config.llm_timeout
        )
        self.kernel: KernelSession | None = None
        self.exchange = AgentExchange(
            store,
            max_repairs=0 if config.is_offline else config.max_repairs,
            on_reply=self._count_reply,
            check=self._semantic_check,
        )
        self._t0 = time.monotonic()
        self._elapsed_before = state.elapsed_s
        self._behavior: BehaviorPayload | None = None
        self._parsed_xml = ""
        self._artifacts: dict[str, Any] = {}
        self._resumed = False
        self._questions = read_problem(problem_text).questions
        self._preview = preview_files(store.root, self.files)
        self._figures: tuple[Figure, ...] = ()  # the last action's figures, for its reflector

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        config: RunConfig,
        problem: Path,
        data: Sequence[Path],
        *,
        out: Path | None = None,
        runs_dir: Path = Path("runs"),
        on_event: EventHook | None = None,
    ) -> Runner:
        inputs = check_inputs(problem, data)
        title = read_problem(inputs.problem_text).title
        slug = slugify(title or inputs.problem.stem)
        root = RunStore.choose_dir(out, runs_dir, slug)
        agent = make_agent(
            config.model, api_base=config.api_base, run_id=root.name, timeout=config.llm_timeout
        )  # fails (exit 4) before anything is created when the model string is unusable
        store = RunStore.create(root, inputs.problem, inputs.data)
        files = [f"assets/{p.name}" for p in inputs.data]
        state = WorkflowState(run_id=root.name, problem_title=title)
        state.ledger.observe(parameter_variables(title, files, config.seed), "parameters")
        state.kernel_code = {"modules": [["np", "numpy"], ["random", "random"]], "callables": []}
        doc = NotebookDocument.create(title, title, files, config.seed, store_writer(store))
        store.write_json("config.json", {**config.to_json(), "files": files})
        doc.save()
        store.write_json("state.json", state.to_json())
        return cls(
            config,
            store,
            state,
            doc,
            problem_text=inputs.problem_text,
            files=files,
            on_event=on_event,
            agent=agent,
        )

    @classmethod
    def resume(
        cls,
        run_dir: Path,
        *,
        budgets: dict[str, Any] | None = None,
        on_event: EventHook | None = None,
        model: str | None = None,
    ) -> Runner:
        store = RunStore.open(run_dir)
        store.lock()
        saved = store.read_json("config.json")
        files = saved.pop("files")
        config = RunConfig.from_json(saved).with_budgets(**(budgets or {}), model=model)
        try:
            state = WorkflowState.from_json(store.read_json("state.json"))
        except ValueError as exc:
            store.unlock()
            raise InputError(
                f"{run_dir}/state.json cannot be resumed: {exc}",
                remedy="resume it with the bcc version that wrote it, or start a new `bcc run`",
            ) from None
        doc = NotebookDocument.load(
            (store.root / "notebook.ipynb").read_text(encoding="utf-8"), store_writer(store)
        )
        reap_orphan_kernels(store)
        uncommitted = doc.cells_after(state.seq)
        for i in reversed(uncommitted):  # cells of a transition the crash left unfinished
            doc.remove(i)
        abandoned = store.abandon_logs_after(state.seq)
        store.append_event(
            {
                "type": "resume",
                "seq": state.seq,
                "dropped_cells": len(uncommitted),
                "abandoned_logs": abandoned,
            }
        )
        problem_text = (store.root / "problem.md").read_text(encoding="utf-8")
        runner = cls(
            config, store, state, doc, problem_text=problem_text, files=files, on_event=on_event
        )
        runner._resumed = True
        return runner

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> RunResult:
        state = self.state
        if state.fsm_state == "WORKFLOW_COMPLETED" and self.store.summarised():
            self.store.unlock()
            summary = self.store.read_json("summary.json")
            return RunResult(self.store.root, state.fsm_state, 0, "run already completed", summary)
        if state.fsm_state == "WORKFLOW_ABORTED" and state.resume_from:
            state.fsm_state, state.resume_from, state.error = state.resume_from, "", ""
        failpoints.arm()
        exit_code, message = 0, ""
        try:
            if self._resumed:  # the kernel state is rebuilt before anything else happens
                self._ensure_kernel()
            while State(state.fsm_state) not in fsm.TERMINALS:
                row = fsm.event_from(State(state.fsm_state))
                if row.agent is None:
                    self._next_stage(row)
                else:
                    self._check_budgets()
                    self._agent_transition(row)
        except (KeyboardInterrupt, BccError) as caught:
            exc = caught if isinstance(caught, BccError) else Interrupted("interrupted (Ctrl-C)")
            if isinstance(exc, StorageError):
                exc.remedy = "free disk space, then `bcc resume RUN_DIR` continues"
            exc.remedy = exc.remedy.replace("RUN_DIR", str(self.store.root))
            exit_code, message = exc.exit_code, exc.one_line()
            self._abort(str(exc))
        finally:
            if self.kernel is not None:
                completed = self.state.fsm_state == "WORKFLOW_COMPLETED"
                if completed:
                    self._artifacts = self._small_artifacts()
                # an aborted run's kernel may be busy; resume rebuilds its state by replay
                self.kernel.shutdown(now=not completed)
        try:
            if self.state.fsm_state == "WORKFLOW_COMPLETED":
                exit_code = 0
                message = "workflow completed"
            elif self.state.fsm_state == "WORKFLOW_FAILED" and not message:
                exit_code, message = 1, f"workflow failed: {self.state.error}"
            summary = self._finish()
        except StorageError:
            if exit_code:  # the disk is still full: the checkpoint on disk is the last good one
                return RunResult(self.store.root, self.state.fsm_state, exit_code, message, {})
            raise
        finally:
            self.store.unlock()
        return RunResult(self.store.root, self.state.fsm_state, exit_code, message, summary)

    def _abort(self, reason: str) -> None:
        """Forget the unfinished transition, then checkpoint WORKFLOW_ABORTED (resumable).

        The state comes back from the last checkpoint and the notebook loses the cells that
        transition added, so ``bcc resume`` redoes it once. Model usage and kernel restarts
        spent on it are kept. A write that fails here (disk still full) leaves the last
        checkpoint as it was, which is just as resumable.
        """
        if State(self.state.fsm_state) in fsm.TERMINALS:
            return
        failpoints.hit("abort", reason)
        spent = self.state
        try:
            saved = WorkflowState.from_json(self.store.read_json("state.json"))
        except (OSError, ValueError):
            saved = spent
        if saved is not spent:
            saved.counters.llm_calls = spent.counters.llm_calls
            saved.counters.kernel_restarts = spent.counters.kernel_restarts
            saved.usage, saved.usage_by_location = spent.usage, spent.usage_by_location
            self.state = saved
            self._behavior = None
            uncommitted = self.doc.cells_after(saved.seq)
            for i in reversed(uncommitted):
                self.doc.remove(i)
        with contextlib.suppress(StorageError):
            self._terminal(Event.ABORT, reason)

    # -- kernel ---------------------------------------------------------------------------
    def _ensure_kernel(self) -> KernelSession:
        """The run's kernel, started on first use (a model failing at once costs no kernel).

        A new run executes its parameters cell; a resumed run replays the notebook.
        """
        if self.kernel is not None:
            return self.kernel
        self.kernel = KernelSession(
            self.store.root,
            cell_timeout=self.config.cell_timeout,
            startup_timeout=self.config.kernel_startup_timeout,
            output_cap_chars=self.config.output_cap_chars,
            excerpt_chars=self.config.excerpt_chars,
            log_path=self.store.root / "kernel.log",
            spill_dir=self.store.root / "outputs",
        )
        self.kernel.start()
        self._record_kernel()
        if self._resumed:
            self._replay_notebook("resume")
        else:
            for cell in self.doc.setup_cells():
                outcome = self.kernel.run_cell(cell.source)
                if outcome.status != "ok":
                    raise KernelError(f"the parameters cell failed: {outcome.excerpt[-300:]}")
                self.doc.set_outputs(cell, outcome.outputs, outcome.execution_count)
            self._observe_kernel("parameters")
            self.doc.save()
        return self.kernel

    def _record_kernel(self) -> None:
        """Note the kernel's pid and process group, so a later resume can reap an orphan."""
        assert self.kernel is not None
        self.store.append_event(
            {"type": "kernel", "pid": self.kernel.pid, "pgid": self.kernel.pgid}
        )

    def _replay_notebook(self, why: str) -> list[str]:
        """Re-run the notebook's code cells to rebuild kernel state; return divergences."""
        assert self.kernel is not None
        diverged = []
        for i, source in enumerate(self.doc.code_sources()):
            outcome = self.kernel.run_cell(source)
            if outcome.status != "ok":
                diverged.append(f"code cell {i} failed on replay: {outcome.error_name}")
        self.store.append_event({"type": "kernel_replay", "why": why, "diverged": diverged})
        self._observe_kernel(f"{self.state.path}#replay")
        return diverged

    def _observe_kernel(self, where: str) -> None:
        assert self.kernel is not None
        try:
            names = self.kernel.inspect_namespace()
        except Exception as exc:  # inspection is best effort; the ledger keeps its last view
            self.store.append_event({"type": "inspect_failed", "error": str(exc)})
            return
        self.state.ledger.observe(names.variables, where)
        self.state.kernel_code = {
            "modules": [list(m) for m in names.modules],
            "callables": [list(c) for c in names.callables],
        }
        self.doc.set_variables(self.state.ledger.to_json())

    def _small_artifacts(self) -> dict[str, Any]:
        """Small JSON-serialisable artifacts of the stages (for summary.json)."""
        assert self.kernel is not None
        names = [*RESULT_NAMES]
        for st in self.state.stages:
            names += [n for n in st.verified_artifacts if n not in names]
            for t in st.steps:
                names += [n for n in t.verified_artifacts if n not in names]
        try:
            return self.kernel.fetch_json(names)
        except Exception as exc:  # the summary is still written without them
            self.store.append_event({"type": "artifacts_failed", "error": str(exc)})
            return {}

    # -- budgets (G6) ---------------------------------------------------------------------
    def _elapsed(self) -> float:
        return self._elapsed_before + time.monotonic() - self._t0

    def _check_budgets(self) -> None:
        c, s = self.config, self.state
        if c.max_llm_calls is not None and s.counters.llm_calls >= c.max_llm_calls:
            raise BudgetExhausted(f"--max-llm-calls {c.max_llm_calls} reached")
        if c.max_cost_usd is not None and s.usage.cost_usd >= c.max_cost_usd:
            raise BudgetExhausted(f"--max-cost-usd {c.max_cost_usd} reached")
        if c.max_wall_s is not None and self._elapsed() >= c.max_wall_s:
            raise BudgetExhausted(f"--max-wall-s {c.max_wall_s} reached")

    # -- observation ----------------------------------------------------------------------
    def _current_behavior(self) -> BehaviorPayload | None:
        if not self.state.behavior_xml:
            return None
        if self._behavior is None:
            value = parse_payload(self.state.behavior_xml, "behavior").value
            assert isinstance(value, BehaviorPayload)
            self._behavior = value
        return self._behavior

    def _observe(self, event: Event) -> Observation:
        return observe(
            self.state,
            event.value,
            problem=self.problem_text,
            files=self.files,
            behavior=self._current_behavior(),
            max_behaviors=self.config.max_behaviors_per_step,
            seed=self.config.seed,
            questions=self._questions,
            data_preview=self._preview,
            figures=self._figures,
        )

    # -- one agent transition -------------------------------------------------------------
    def _agent_transition(self, row: fsm.Transition) -> None:
        s = self.state
        source = State(s.fsm_state)
        t0 = time.monotonic()
        log = TransitionLog(
            s.seq + 1, row.event.value, source.value, row.agent, s.path, s.iteration, utc_now()
        )
        obs = self._observe(row.event)
        parsed = self.exchange.ask(
            self.agent, row.event, row.root, render(obs), obs, log, s.fsm_state
        )
        log.set_payload(element_for_log(parsed))
        self._parsed_xml = parsed.xml
        handler = {
            Event.START_WORKFLOW: self._on_stages,
            Event.START_STEP: self._on_steps,
            Event.START_BEHAVIOR: self._on_behavior,
            Event.COMPLETE_ACTION: self._on_actions,
            Event.COMPLETE_STEP: self._on_reflection,
            Event.COMPLETE_STAGE: self._on_stage_reflection,
        }[row.event]
        target, forced = handler(parsed.value, log)
        if row.event in (Event.START_WORKFLOW, Event.START_STEP, Event.START_BEHAVIOR):
            log.relocate(s.path, s.iteration)
        self._commit(log, row.event, source, target, forced, t0)
        if target == State.STEP_COMPLETED and forced and self.config.on_step_failure == "abort":
            self._terminal(Event.FAIL, "a step failed and --on-step-failure is abort")

    def _count_reply(self, reply: AgentReply) -> None:
        s = self.state
        s.counters.llm_calls += int(reply.llm_call)
        s.add_usage(Usage(reply.prompt_tokens, reply.completion_tokens, reply.cost_usd))

    def _semantic_check(self, parsed: ParsedPayload) -> None:
        value = parsed.value
        if isinstance(value, BehaviorPayload):
            step = self.state.step
            if step is not None and value.step_id != step.id:
                raise PayloadError(
                    f"behavior step_id '{value.step_id}' is not the current step '{step.id}'",
                    kind="behavior",
                )

    def _commit(
        self,
        log: TransitionLog,
        event: Event,
        source: State,
        target: State,
        forced: bool,
        t0: float,
    ) -> None:
        fsm.check_target(source, event, target)
        s = self.state
        s.seq = log.head.seq
        s.fsm_state = target.value
        s.counters.transitions += 1
        s.elapsed_s = round(self._elapsed(), 3)
        duration = int((time.monotonic() - t0) * 1000)
        self.store.write_log(s.seq, event.value, log.to_bytes(target.value, forced, duration))
        record = {
            "type": "transition",
            "seq": s.seq,
            "event": event.value,
            "from": source.value,
            "to": target.value,
            "agent": log.head.agent,
            "location": log.head.location,
            "iteration": log.head.iteration,
            "forced": forced,
            "duration_ms": duration,
        }
        self.store.append_event(record)
        for name, effect, reason in log.guards:
            self.store.append_event(
                {"type": "guard", "seq": s.seq, "guard": name, "effect": effect, "reason": reason}
            )
        self.store.write_json("state.json", s.to_json())
        if event not in (Event.ABORT, Event.FAIL):  # an aborted transition's reply is kept
            self.exchange.committed()
        last_cell = s.last_execution[-1]["status"] if s.last_execution else None
        self.on_event(
            {
                **record,
                "path": s.path,
                "plan": [
                    {
                        "id": st.id,
                        "title": st.title,
                        "status": st.status,
                        "steps": [[t.id, t.status] for t in st.steps],
                    }
                    for st in s.stages
                ],
                "llm_calls": s.counters.llm_calls,
                "cost_usd": s.usage.cost_usd,
                "cells": s.counters.cells,
                "last_cell": last_cell,
                "elapsed_s": s.elapsed_s,
            }
        )

    def _terminal(self, event: Event, reason: str) -> None:
        """Fire FAIL or ABORT from the current state and checkpoint."""
        s = self.state
        source = State(s.fsm_state)
        if source in fsm.TERMINALS:
            return
        log = TransitionLog(
            s.seq + 1, event.value, source.value, None, s.path, s.iteration, utc_now()
        )
        log.notes.append(reason)
        s.error = reason
        if event == Event.ABORT:
            s.resume_from = source.value
        target = fsm.transition_for(source, event).targets[0]
        self._commit(log, event, source, target, False, time.monotonic())

    # -- handlers (return target state and forced flag) -----------------------------------
    def _tag(self) -> CellTag:
        s = self.state
        return CellTag(
            s.stage.id if s.stage else "",
            s.step.id if s.step else "",
            s.behavior_id,
            s.iteration,
            s.seq + 1,
        )

    def _forget_behavior(self) -> None:
        """A new stage or step starts with no behavior, attempts, feedback or last cells."""
        s = self.state
        s.behavior_id, s.iteration, s.feedback, s.behavior_xml = "", 0, "", ""
        s.step_log, s.last_execution, s.last_checks = [], [], {}
        self._behavior = None

    def _enter_stage(self, index: int) -> None:
        s = self.state
        s.stage_index, s.step_index = index, 0
        self._forget_behavior()
        s.stage.status = "running"
        self.doc.add_markdown(f"## {s.stage.title}\n\n*{s.stage.goal}*", self._tag(), role="stage")
        self.doc.save()

    def _enter_step(self, index: int) -> None:
        s = self.state
        s.step_index = index
        self._forget_behavior()
        s.step.status = "running"
        self.doc.add_markdown(f"### {s.step.title}", self._tag(), role="step")
        self.doc.save()

    def _capped(self, items: Sequence[Any], cap: int, what: str, log: TransitionLog) -> list[Any]:
        """G3 on plans: keep the first ``cap`` items, record the cut."""
        if len(items) <= cap:
            return list(items)
        log.add_guard("G3", f"{what}_truncated", f"{len(items)} {what} planned, cap {cap}")
        self.state.counters.forced_transitions += 1
        return list(items[:cap])

    def _on_stages(self, p: Any, log: TransitionLog) -> tuple[State, bool]:
        assert isinstance(p, StagesPayload)
        s = self.state
        stages = self._capped(p.stages, self.config.max_stages, "stages", log)
        s.stages = [_plan_record(StageRecord, st) for st in stages]
        if p.title:
            s.project_title = p.title
            self.doc.set_title(p.title)
        s.focus = p.focus or ""
        self._enter_stage(0)
        return State.STAGE_RUNNING, False

    def _on_steps(self, p: Any, log: TransitionLog) -> tuple[State, bool]:
        assert isinstance(p, StepsPayload)
        s = self.state
        steps = self._capped(p.steps, self.config.max_steps_per_stage, "steps", log)
        s.stage.steps = [_plan_record(StepRecord, t) for t in steps]
        s.stage.focus = (p.focus or "").strip()
        self._enter_step(0)
        return State.STEP_RUNNING, False

    def _on_behavior(self, p: Any, log: TransitionLog) -> tuple[State, bool]:
        assert isinstance(p, BehaviorPayload)
        s = self.state
        s.step.behaviors += 1
        s.iteration = s.step.behaviors
        s.behavior_id = p.id
        s.behavior_xml = self._parsed_xml
        self._behavior = p
        s.last_execution, s.last_checks = [], {}
        s.step_log.append({"behavior": p.id, "iteration": s.iteration, "task": p.task})
        return State.BEHAVIOR_RUNNING, False

    def _on_actions(self, p: Any, log: TransitionLog) -> tuple[State, bool]:
        assert isinstance(p, ActionsPayload)
        kernel = self._ensure_kernel()
        s, step, tag = self.state, self.state.step, self._tag()
        texts: list[str] = []
        facts: list[dict[str, Any]] = []
        notes: list[str] = []
        figures: list[Figure] = []
        failed = False
        for n, action in enumerate(p.actions, 1):
            if action.kind == "title":
                s.project_title = action.content.strip()
                self.doc.set_title(s.project_title)
                continue
            if action.kind == "text":
                texts.append(action.content)
                continue
            cell_id = f"{s.seq + 1}-{n}"
            if failed:
                log.add_cell(
                    cell_id, "skipped", 0, "not run: an earlier cell of this action failed"
                )
                continue
            digest = _digest(action.content)
            if digest in step.failed_code:
                failed = True
                reason = "identical to code that already failed in this step; not re-run"
                log.add_guard("G7", "not_rerun", reason)
                notes.append(f"G7: {reason}")
                facts.append(asdict(CellFact("skipped", reason, "RepeatedCode", reason)))
                continue
            restarts = kernel.restarts
            outcome = kernel.run_cell(action.content, spill_name=cell_id)
            s.counters.cells += 1
            log.add_cell(cell_id, outcome.status, outcome.duration_ms, outcome.excerpt)
            shown = figures_in(outcome.outputs, first=len(figures) + 1)
            figures += shown
            facts.append(asdict(fact_from(outcome, tuple(f.note for f in shown), action.content)))
            if outcome.status == "ok":
                self._flush_texts(texts, tag)
                self.doc.add_code(action.content, tag, outcome.outputs, outcome.execution_count)
                self.doc.save()
                continue
            failed = True
            step.failed_code.append(digest)
            if self.config.keep_failed_cells:
                self._flush_texts(texts, tag)
                self.doc.add_code(
                    action.content, tag, outcome.outputs, outcome.execution_count, failed=True
                )
                self.doc.save()
            texts.clear()
            if outcome.status in ("dead", "timeout"):
                notes.append(self._recover_kernel(outcome, kernel.restarts > restarts))
        if not failed:
            self._flush_texts(texts, tag)
            self.doc.save()
        self._observe_kernel(f"{s.path}#{s.seq + 1}")
        behavior = self._current_behavior()
        names = [v.name for v in behavior.outputs] if behavior else []
        criteria = list(behavior.acceptance) if behavior else []
        try:
            report = kernel.check(names, criteria)
        except (TimeoutError, KernelError) as exc:
            notes.append(f"checks could not run: {exc}")
            report = CheckReport(tuple((n, False) for n in names), ())
        for name, present in report.artifacts:
            log.add_artifact(name, present)
        for expr, status, detail in report.criteria:
            log.add_criterion(expr, status, detail)
        s.last_execution = facts
        s.last_checks = {
            "artifacts": [list(a) for a in report.artifacts],
            "criteria": [list(c) for c in report.criteria],
            "notes": notes,
        }
        self._figures = tuple(figures)
        if s.step_log:
            s.step_log[-1].update(cells=facts, checks=s.last_checks)
        self.doc.save()
        return State.BEHAVIOR_COMPLETED, False

    def _flush_texts(self, texts: list[str], tag: CellTag) -> None:
        for text in texts:
            self.doc.add_markdown(text, tag)
        texts.clear()

    def _recover_kernel(self, outcome: CellOutcome, restarted: bool) -> str:
        """Tell what happened to the kernel; after a restart, rebuild its state by replay."""
        limit = f"exceeded {self.config.cell_timeout:g} s"
        if not restarted:
            return f"the cell {limit} and was interrupted; the kernel kept its state"
        counters, budget = self.state.counters, self.config.max_kernel_restarts
        counters.kernel_restarts += 1
        self._record_kernel()
        if counters.kernel_restarts > budget:
            raise KernelError(
                f"the kernel was restarted {counters.kernel_restarts} times (budget {budget})",
                remedy="fix the code that kills or hangs the kernel, or continue with "
                f"`bcc resume {self.store.root} --max-kernel-restarts N`",
            )
        diverged = self._replay_notebook(f"kernel {outcome.status}")
        what = "died" if outcome.status == "dead" else f"{limit} and ignored the interrupt"
        note = f"the kernel {what}; it was restarted and the notebook replayed"
        return note + (f" ({len(diverged)} cells diverged)" if diverged else "")

    def _on_reflection(self, p: Any, log: TransitionLog) -> tuple[State, bool]:
        assert isinstance(p, ReflectionPayload)
        s, step = self.state, self.state.step
        missing = [a for a, ok in s.last_checks.get("artifacts", []) if not ok]
        complete = p.next_state == "STEP_COMPLETED"
        feedback = p.decision_reasoning
        if complete and missing:
            reason = "declared artifacts missing in the kernel: " + ", ".join(missing)
            log.add_guard("G1", "completion_overridden", reason)
            s.counters.guard_overrides += 1
            complete, feedback = False, f"{reason}. {feedback}"
        self._figures = ()
        if s.step_log:
            s.step_log[-1].update(
                verdict="complete" if complete else "retry",
                reasoning=" ".join(dict.fromkeys(x for x in (p.goal_reasoning, feedback) if x)),
                comment=(p.comment or "").strip() if complete else "",
                produced=[[v.name, v.description] for v in p.variables_produced],
                recommendations=(p.recommendations or "").strip(),
            )
        if complete:
            step.status = "complete"
            step.comment = (p.comment or "").strip()
            if p.comment and p.comment.strip():
                self.doc.add_markdown(p.comment.strip(), self._tag(), role="comment")
                self.doc.save()
            s.feedback = ""
            return State.STEP_COMPLETED, False
        s.counters.failed_behaviors += 1
        s.feedback = feedback
        if step.behaviors >= self.config.max_behaviors_per_step:
            reason = f"{step.behaviors} behaviors tried (cap {self.config.max_behaviors_per_step})"
            log.add_guard("G3", "step_failed", reason)
            s.counters.forced_transitions += 1
            step.status, step.note = "failed", reason
            if s.step_log:
                s.step_log[-1]["verdict"] = "failed"
            self.doc.add_markdown(
                f"> **Step not completed.** {step.title}: {reason}. Last feedback: {feedback}",
                self._tag(),
                role="failure",
            )
            self.doc.save()
            return State.STEP_COMPLETED, True
        return State.STEP_RUNNING, False

    def _on_stage_reflection(self, p: Any, log: TransitionLog) -> tuple[State, bool]:
        assert isinstance(p, StageReflectionPayload)
        s, stage = self.state, self.state.stage
        self._manage_variables(p, log)
        reviewed = next((t for t in stage.steps if t.id == p.step_id), s.step)
        if reviewed is not None:
            reviewed.findings = [[priority, text.strip()] for priority, text in p.findings]
        pending = [i for i, t in enumerate(stage.steps) if t.status == "pending"]
        wants_next = p.next_state == "STEP_RUNNING"
        if wants_next and not pending:
            log.add_guard("G4", "stage_completed", "next step requested but no steps are left")
            wants_next = False
        elif not wants_next and pending:
            skipped = [stage.steps[i].id for i in pending]
            log.add_guard(
                "G4", "steps_skipped", "stage completed with steps left: " + ", ".join(skipped)
            )
            for i in pending:
                stage.steps[i].status = "skipped"
        if wants_next:
            ids = {stage.steps[i].id: i for i in pending}
            self._enter_step(ids.get(p.next_focus or "", pending[0]))
            return State.STEP_RUNNING, False
        done = all(t.status == "complete" for t in stage.steps)
        stage.status = "complete" if done else "partial"
        if p.stage_experience and p.stage_experience.strip():
            stage.experience = p.stage_experience.strip()
            s.lessons.append(stage.experience)
        return State.STAGE_COMPLETED, False

    def _manage_variables(self, p: StageReflectionPayload, log: TransitionLog) -> None:
        s = self.state
        for var in p.retain:
            s.ledger.retain(var.name, var.next_use)
        protected = s.remaining_required()
        free: list[str] = []
        for var in p.deprecate:
            decision = s.ledger.deprecate(var.name, var.replacement, s.stage.id, protected)
            if not decision.applied:
                log.add_guard("G5", "deprecation_refused", f"{var.name}: {decision.reason}")
            elif var.safe and self.config.free_deprecated:
                free.append(var.name)
        if free and self.kernel is not None:
            self.kernel.delete(free)
            s.ledger.mark_deleted(free, f"{s.path}#{s.seq + 1}")
            self.store.append_event({"type": "freed", "variables": free})
        self.doc.set_variables(s.ledger.to_json())
        self.doc.save()

    def _next_stage(self, row: fsm.Transition) -> None:
        s = self.state
        source = State(s.fsm_state)
        t0 = time.monotonic()
        log = TransitionLog(
            s.seq + 1, row.event.value, source.value, None, s.path, s.iteration, utc_now()
        )
        nxt = next(
            (i for i in range(s.stage_index + 1, len(s.stages)) if s.stages[i].status == "pending"),
            None,
        )
        if nxt is None:
            target = State.WORKFLOW_COMPLETED
        else:
            self._enter_stage(nxt)
            log.relocate(s.path, 0)
            target = State.STAGE_RUNNING
        self._commit(log, row.event, source, target, False, t0)

    # -- the end --------------------------------------------------------------------------
    def _finish(self) -> dict[str, Any]:
        s = self.state
        verification: dict[str, Any] = {"status": "skipped", "first_failing_cell": None}
        if s.fsm_state == "WORKFLOW_COMPLETED" and self.config.verify:
            result, _ = execute_notebook(
                self.doc.nb,
                self.store.root,
                cell_timeout=self.config.cell_timeout,
                fetch=RESULT_NAMES,
            )
            verification = {
                "status": result.status,
                "first_failing_cell": result.first_failing_cell,
                "error": result.error,
                "duration_ms": result.duration_ms,
            }
            results = {k: v for k, v in self._artifacts.items() if k in RESULT_NAMES}
            if result.status == "passed" and results:
                mismatches = compare(results, result.values)
                verification["results"] = "differ" if mismatches else "reproduced"
                verification["mismatches"] = mismatches
                if mismatches:  # the notebook re-runs, but not to the same results
                    verification["status"] = "failed"
                    verification["error"] = "results differ on re-execution: " + mismatches[0]
            self.store.append_event({"type": "verification", **verification})
        self.doc.set_verification(verification)
        self.doc.set_variables(s.ledger.to_json())
        self.doc.save()
        question = read_problem(self.problem_text).text
        summary = build_summary(
            s, verification, self._artifacts, self.store.root, question, self._questions
        )
        self.store.write_json("summary.json", summary)
        self.store.write("summary.md", render_summary_md(summary))
        return summary


def store_writer(store: RunStore) -> Callable[[str], None]:
    return lambda text: store.write("notebook.ipynb", text)


def reap_orphan_kernels(store: RunStore) -> list[int]:
    """Kill the kernels an earlier, killed bcc left behind for this run; return their pids.

    Called with the run lock held, so no live bcc owns them.
    """
    recorded = [(e["pid"], e.get("pgid") or 0) for e in store.events() if e.get("type") == "kernel"]
    reaped = reap_kernels(recorded)
    if reaped:
        store.append_event({"type": "orphans_reaped", "pids": reaped})
    return reaped


def parameter_variables(title: str, files: Sequence[str], seed: int) -> list[VariableInfo]:
    """The parameters cell's variables, known before the kernel starts (it starts lazily), so
    the first planners see ``user_submit_files`` in the ledger (its modules are seeded in
    ``Runner.create`` the same way)."""
    values: list[tuple[str, Any]] = [
        ("user_problem", title),
        ("user_submit_files", list(files)),
        ("seed", seed),
    ]
    return [
        VariableInfo(
            name,
            type(v).__name__,
            None,
            len(v) if isinstance(v, list | str) else None,
            (),
            0,
            repr(v),
        )
        for name, v in values
    ]


def _plan_record(cls: type[Any], spec: Any) -> Any:
    """A StageRecord or StepRecord from a planned StageSpec or StepSpec."""
    return cls(
        spec.id,
        spec.title,
        spec.goal,
        [v.name for v in spec.verified_artifacts],
        [v.name for v in spec.required_variables],
    )


def fact_from(outcome: CellOutcome, figures: tuple[str, ...] = (), code: str = "") -> CellFact:
    return CellFact(
        outcome.status, outcome.excerpt, outcome.error_name, outcome.error_value, figures, code
    )
