"""The runner: the loop, the commit of each transition, and the abort.

Take the table's event for the current state, ask the agent, hand the payload to its handler
(``handlers.py``), then commit it (``RunStore.commit``: a pending log, the event lines,
state.json, the log's rename). ``session.py`` opens runs; docs/architecture.md, "One transition", draws it.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from notebook_bcc import failpoints, fsm
from notebook_bcc.agents import Agent, AgentReply, make_agent
from notebook_bcc.config import RunConfig
from notebook_bcc.contract.observation import Observation, observe
from notebook_bcc.contract.payloads import element_for_log
from notebook_bcc.contract.prompts import render
from notebook_bcc.contract.translog import TransitionLog
from notebook_bcc.errors import BccError, BudgetExhausted, Interrupted, StorageError
from notebook_bcc.fsm import Event, State
from notebook_bcc.inputs.problem import read_problem
from notebook_bcc.inputs.questions import follow_up_questions
from notebook_bcc.kernel.verification import cells_to_verify
from notebook_bcc.rundir.notebook import NotebookDocument
from notebook_bcc.rundir.state import Usage, WorkflowState
from notebook_bcc.rundir.store import RunStore, utc_now
from notebook_bcc.workflow import guards
from notebook_bcc.workflow.context import RunContext, RunResult
from notebook_bcc.workflow.exchange import AgentExchange
from notebook_bcc.workflow.finish import COMPLETED_WITH_FAILED_STEPS, verdict, write_results
from notebook_bcc.workflow.handlers import Handlers
from notebook_bcc.workflow.host import KernelHost
from notebook_bcc.workflow.verify import discard_scratch, make_shadow

__all__ = ["Runner", "RunResult", "EventHook", "COMPLETED_WITH_FAILED_STEPS"]

EventHook = Callable[[dict[str, Any]], None]


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
        resumed: bool = False,
    ) -> None:
        self.ctx = RunContext(config, store, doc, state)
        self.config, self.store, self.doc = config, store, doc
        self.problem_text = problem_text
        self.files = tuple(files)
        self.on_event = on_event or (lambda record: None)
        self.agent = agent or make_agent(
            config.model, api_base=config.api_base, run_id=state.run_id, timeout=config.llm_timeout
        )
        self._spec = read_problem(problem_text)
        self.host = KernelHost(self.ctx, resumed=resumed, named_modules=self._spec.modules)
        self.handlers = Handlers(self.ctx, self.host)
        self.exchange = AgentExchange(
            store,
            max_repairs=0 if config.is_offline else config.max_repairs,
            on_reply=self._count_reply,
            check=self.handlers.check_payload,
        )
        self._t0 = time.monotonic()
        self._elapsed_before = state.elapsed_s
        self._artifacts: dict[str, Any] = {}
        self._preview = ""  # the data files' preview, made in run() while the kernel boots
        #: verifies as it goes: a fresh kernel runs each cell once it is committed
        self.shadow = make_shadow(self.ctx) if config.verify else None

    @property
    def state(self) -> WorkflowState:
        return self.ctx.state

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> RunResult:
        state = self.state
        done = state.fsm_state == "WORKFLOW_COMPLETED" and not self._asked()
        if done and self.store.summarised():
            self.store.unlock()
            summary = self.store.read_json("summary.json")
            return RunResult(self.store.root, state.fsm_state, 0, "run already completed", summary)
        if state.fsm_state == "WORKFLOW_ABORTED" and state.resume_from:
            state.fsm_state, state.resume_from, state.error = state.resume_from, "", ""
        failpoints.arm()
        exit_code, message = 0, ""
        try:
            self.host.launch()
            from notebook_bcc.inputs.preview import preview_files  # pandas: while it boots

            self._preview = preview_files(self.store.root, self.files, sheet=self._spec.sheet)
            # every planner is told the kernel's packages: the kernel answers before the first
            self.host.ensure()
            while State(self.state.fsm_state) not in fsm.STOPS or self._asked():
                row = fsm.event_from(State(self.state.fsm_state))
                if row.agent is None:
                    self._next_stage(row)
                else:
                    self._check_budgets()
                    self._agent_transition(row)
        except (KeyboardInterrupt, Exception) as caught:  # noqa: BLE001 - every error is an ABORT
            exc = _as_bcc_error(caught)
            if not isinstance(caught, BccError | KeyboardInterrupt):  # a bug: keep its trace
                self.store.append_event({"type": "internal_error", "traceback": _trace(caught)})
            if isinstance(exc, StorageError):
                exc.remedy = "free disk space, then `bcc resume RUN_DIR` continues"
            exc.remedy = exc.remedy.replace("RUN_DIR", str(self.store.root))
            exit_code, message = exc.exit_code, exc.one_line()
            self._abort(str(exc))
        finally:
            if self.host.kernel is not None:
                completed = self.state.fsm_state == "WORKFLOW_COMPLETED"
                if completed:
                    self._artifacts = self.host.results()
                # an aborted run's kernel may be busy; resume rebuilds its state by replay
                self.host.shutdown(now=not completed)
            else:
                self.host.shutdown(now=True)  # launched and never used
        try:
            if self.shadow is not None and self.state.fsm_state != "WORKFLOW_COMPLETED":
                self.shadow.close()
                discard_scratch(self.store.root)
            exit_code, message = verdict(self.state, exit_code, message)
            summary = write_results(self.ctx, self.shadow, self._artifacts, self._spec)
        except StorageError:
            if exit_code:  # the disk is still full: the checkpoint on disk is the last good one
                return RunResult(self.store.root, self.state.fsm_state, exit_code, message, {})
            raise
        finally:
            if self.shadow is not None and not self.shadow.stopped:  # an error in the summary
                self.shadow.close()
            self.store.unlock()
        return RunResult(self.store.root, self.state.fsm_state, exit_code, message, summary)

    def _abort(self, reason: str) -> None:
        """Forget the unfinished transition, then checkpoint WORKFLOW_ABORTED (resumable).

        The state comes back from the last checkpoint and the notebook loses the cells that
        transition added, so ``bcc resume`` redoes it once; whatever of it reached the disk
        (a pending log, event lines) is undone first, so the ABORT takes the next seq and no
        seq is used twice. Model usage and kernel restarts spent on it are kept. A write that
        fails here (disk still full) leaves the last checkpoint as it was, just as resumable.
        """
        if State(self.state.fsm_state) in fsm.STOPS:
            return
        failpoints.hit("abort", reason)
        spent = self.state
        try:
            saved = WorkflowState.from_json(self.store.read_json("state.json"))
        except (OSError, ValueError):
            saved = spent
        saved.counters.llm_calls = spent.counters.llm_calls
        saved.counters.kernel_restarts = spent.counters.kernel_restarts
        saved.usage, saved.usage_by_location = spent.usage, spent.usage_by_location
        self.ctx.state = saved
        self.handlers.behavior = None
        for i in reversed(self.doc.cells_after(saved.seq)):
            self.doc.remove(i)
        with contextlib.suppress(StorageError):  # the disk may still be full: then the last
            self.store.recover(saved.seq)  # checkpoint stays as it is, just as resumable
            self._terminal(Event.ABORT, reason)

    def _asked(self) -> bool:
        """A follow-up waits for its stages (``bcc ask``): the completed run goes on."""
        return self.state.asked is not None

    # -- budgets (G6) ---------------------------------------------------------------------
    def _elapsed(self) -> float:
        return self._elapsed_before + time.monotonic() - self._t0

    def _check_budgets(self) -> None:
        c, s = self.config, self.state
        spent = guards.budget_exhausted(
            llm_calls=s.counters.llm_calls,
            cost_usd=s.usage.cost_usd,
            elapsed_s=self._elapsed(),
            max_llm_calls=c.max_llm_calls,
            max_cost_usd=c.max_cost_usd,
            max_wall_s=c.max_wall_s,
        )
        if spent:
            raise BudgetExhausted(spent)

    # -- one agent transition -------------------------------------------------------------
    def _observe(self, event: Event) -> Observation:
        return observe(
            self.state,
            event,
            problem=self.problem_text,
            files=self.files,
            behavior=self.handlers.current_behavior(),
            max_behaviors=self.config.max_behaviors_per_step,
            seed=self.config.seed,
            questions=self._spec.questions
            + tuple(
                q for f in self.state.follow_ups_reached() for q in follow_up_questions(f.text)
            ),
            supervised=self._spec.supervised,
            data_preview=self._preview,
            figures=self.handlers.figures,
        )

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
        target, forced = self.handlers.handle(row.event, parsed, log)
        if row.event in (
            Event.START_WORKFLOW,
            Event.FOLLOW_UP,
            Event.START_STEP,
            Event.START_BEHAVIOR,
        ):
            log.relocate(s.path, s.iteration)
        self._commit(log, row.event, source, target, forced, t0)
        if target == State.STEP_COMPLETED and forced and self.config.on_step_failure == "abort":
            self._terminal(Event.FAIL, "a step failed and --on-step-failure is abort")

    def _count_reply(self, reply: AgentReply) -> None:
        s = self.state
        s.counters.llm_calls += int(reply.llm_call)
        s.add_usage(
            Usage(
                reply.prompt_tokens,
                reply.completion_tokens,
                reply.cost_usd,
                reply.cached_tokens,
                reply.cache_write_tokens,
            )
        )

    def _next_stage(self, row: fsm.Transition) -> None:
        s = self.state
        source, t0 = State(s.fsm_state), time.monotonic()
        log = TransitionLog(
            s.seq + 1, row.event.value, source.value, None, s.path, s.iteration, utc_now()
        )
        target = self.handlers.next_stage(log)
        if target == State.STAGE_RUNNING:
            log.relocate(s.path, 0)
        self._commit(log, row.event, source, target, False, t0)

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
        guards = [
            {"type": "guard", "seq": s.seq, "guard": name, "effect": effect, "reason": reason}
            for name, effect, reason in log.guards
        ]
        revised = [
            {"type": "plan_revised", "seq": s.seq, "reason": reason, "changes": changes}
            for reason, changes in log.revisions
        ]
        self.store.commit(
            s.seq,
            event.value,
            log.to_bytes(target.value, forced, duration),
            [record, *guards, *revised],
            s.to_json(),
        )
        if event not in (Event.ABORT, Event.FAIL):  # an aborted transition's reply is kept
            self.exchange.committed()
            if self.shadow is not None:
                self.shadow.submit(cells_to_verify(self.doc.nb))
        self.on_event({**record, **s.progress()})

    def _terminal(self, event: Event, reason: str) -> None:
        """Fire FAIL or ABORT from the current state and checkpoint."""
        s = self.state
        source = State(s.fsm_state)
        if source in fsm.STOPS:
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


def _as_bcc_error(caught: BaseException) -> BccError:
    """The error a run ends with: itself, Ctrl-C as ``Interrupted``, or a bug as an internal
    error (exit 1) that ``bcc resume`` may get past."""
    if isinstance(caught, BccError):
        return caught
    if isinstance(caught, KeyboardInterrupt):
        return Interrupted("interrupted (Ctrl-C)")
    cause = " ".join(f"{type(caught).__name__}: {caught}".split())[:300]
    return BccError(
        f"internal error: {cause}",
        remedy="report it with the traceback in events.jsonl (internal_error); "
        "`bcc resume RUN_DIR` continues from the last checkpoint",
    )


def _trace(caught: BaseException) -> str:
    return "".join(traceback.format_exception(caught))[-8000:]
