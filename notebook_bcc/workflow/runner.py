"""The runner: the loop, the commit of each transition, and the abort.

Take the table's event for the current state, ask the agent, hand the payload to its handler
(``handlers.py``), then commit it (``RunStore.commit``: a pending log, the event lines,
state.json, the log's rename). ``session.py`` opens runs; docs/architecture.md, "One transition", draws it.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from notebook_bcc import failpoints, fsm
from notebook_bcc.agents import Agent, AgentReply, make_agent, raise_if_refused
from notebook_bcc.config import RunConfig
from notebook_bcc.contract.observation import Observation, build_observation
from notebook_bcc.contract.payloads import AlternativesPayload, ParsedPayload, element_for_log
from notebook_bcc.contract.prompts import render
from notebook_bcc.contract.translog import TransitionLog
from notebook_bcc.errors import BccError, BudgetExhausted, DiskFull, StorageError
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
from notebook_bcc.workflow.finish import COMPLETED_WITH_FAILED_STEPS, finish
from notebook_bcc.workflow.fork import Branch, BranchLog, Fork
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
        self._counting = threading.Lock()  # a fork's branches count their replies at once
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
            raise_if_refused(self.agent)  # a refused key (the key check's) ends the run here
            from notebook_bcc.inputs.preview import preview_files  # pandas: while it boots

            self._preview = preview_files(self.store.root, self.files, sheet=self._spec.sheet)
            self.host.ensure()  # every planner is told the packages the kernel itself has
            while State(self.state.fsm_state) not in fsm.STOPS or self._asked():
                row = fsm.event_from(State(self.state.fsm_state))
                if row.agent is None:
                    self._next_stage(row)
                else:
                    self._check_budgets()
                    self._agent_transition(row)
        except (KeyboardInterrupt, Exception) as caught:  # noqa: BLE001 - every error is an ABORT
            exc = BccError.from_exception(caught)
            if not isinstance(caught, BccError | KeyboardInterrupt):  # a bug: keep its trace
                self.store.append_event({"type": "internal_error", "traceback": _trace(caught)})
            if isinstance(exc, DiskFull):
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
            ended = finish(self.ctx, self.shadow, self._artifacts, self._spec, exit_code, message)
            exit_code, message, summary = ended
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
    def _observation(
        self, event: Event, state: WorkflowState | None = None, branch: Branch | None = None
    ) -> Observation:
        s, handlers = (state or self.state), (branch.handlers if branch else self.handlers)
        return build_observation(
            s,
            event,
            problem=self.problem_text,
            files=self.files,
            behavior=handlers.current_behavior(),
            max_behaviors=self.config.max_behaviors_per_step,
            seed=self.config.seed,
            questions=self._spec.questions
            + tuple(q for f in s.follow_ups_reached() for q in follow_up_questions(f.text)),
            supervised=self._spec.supervised,
            data_preview=self._preview,
            figures=handlers.figures,
            max_alternatives=self.config.max_alternatives,
            branch=(branch.id, branch.note) if branch else ("", ""),
        )

    def _ask(
        self, row: fsm.Transition, log: TransitionLog, exchange: AgentExchange, b: Branch | None
    ) -> ParsedPayload:
        s = b.ctx.state if b else self.state
        roots: str | tuple[str, ...] | None = row.root
        if row.event == Event.START_BEHAVIOR and self.config.max_alternatives > 1:
            roots = ("alternatives", "behavior")  # a fork is the arranger's other answer
        obs = self._observation(row.event, s, b)
        return exchange.ask(self.agent, row.event, roots, render(obs), obs, log, s.fsm_state)

    def _agent_transition(self, row: fsm.Transition) -> None:
        s = self.state
        source = State(s.fsm_state)
        t0 = time.monotonic()
        log = TransitionLog(
            s.seq + 1, row.event.value, source.value, row.agent, s.path, s.iteration, utc_now()
        )
        parsed = self._ask(row, log, self.exchange, None)
        log.set_payload(element_for_log(parsed))
        if isinstance(parsed.value, AlternativesPayload):
            self._fork(parsed, log, t0)
            return
        target, forced = self.handlers.handle(row.event, parsed, log)
        if row.event in (
            Event.START_WORKFLOW,
            Event.FOLLOW_UP,
            Event.START_STEP,
            Event.START_BEHAVIOR,
        ):
            log.relocate(s.path, s.iteration)
        self._commit(log, row.event, source, target, forced, t0)
        self._fail_if_capped(target, forced)

    def _fail_if_capped(self, target: State, forced: bool) -> None:
        """A step G3 failed ends the workflow when ``--on-step-failure`` is abort."""
        if target == State.STEP_COMPLETED and forced and self.config.on_step_failure == "abort":
            self._terminal(Event.FAIL, "a step failed and --on-step-failure is abort")

    # -- a fork: branches at once, the best kept (fork.py) --------------------------------
    def _fork(self, parsed: ParsedPayload, log: TransitionLog, t0: float) -> None:
        log.retitle(Event.FORK.value)
        fork = Fork(self.ctx, parsed, self.handlers.on_fork(parsed, log), self._spec.modules)
        fork_ms, kept = int((time.monotonic() - t0) * 1000), None
        try:
            fork.run(self._branch, at_once=self.config.fork_at_once)
            fork.raise_fatal()
            kept = fork.join()
            final, join_seq = fork.numbering()
            join = TransitionLog(
                join_seq, Event.JOIN.value, State.BEHAVIOR_RUNNING.value, None, "", 0, utc_now()
            )
            join.notes.append(fork.summary_line(kept))
            self.ctx.state = new = fork.adopt(kept, final, join_seq)
            target, forced = State.STEP_COMPLETED, False
            if kept is None:
                new.seq = join_seq - 1  # the failure note G3 may add is the JOIN's
                target, forced = self.handlers.no_branch_kept(join.notes[0], join)
            self.handlers.behavior = None
            join.relocate(new.path, new.iteration)
            ms = int((time.monotonic() - t0) * 1000)
            self._commit_all(
                [
                    (log, Event.FORK, State.STEP_RUNNING, State.BEHAVIOR_RUNNING, False, fork_ms),
                    *fork.branch_entries(final),
                    (join, Event.JOIN, State.BEHAVIOR_RUNNING, target, forced, ms),
                ]
            )
        finally:
            if kept is not None and kept.host.kernel is not None:
                self.host.adopt(kept.host)
            fork.close(kept)
        self._fail_if_capped(target, forced)

    def _branch(self, b: Branch) -> None:
        """A branch's action and reflection, handled as the run's own are, logged apart."""
        s = b.ctx.state
        exchange = AgentExchange(
            self.store,
            max_repairs=self.exchange.max_repairs,
            on_reply=self._count_reply,
            check=b.handlers.check_payload,
            persist=False,
        )
        for _ in range(2):  # COMPLETE_ACTION, then COMPLETE_STEP
            row = fsm.event_from(State(s.fsm_state))
            self._check_budgets()
            t0, source = time.monotonic(), State(s.fsm_state)
            log = TransitionLog(
                s.seq + 1, row.event.value, source.value, row.agent, s.path, s.iteration, utc_now()
            )
            log.branch = b.id
            parsed = self._ask(row, log, exchange, b)
            log.set_payload(element_for_log(parsed))
            target, forced = b.handlers.handle(row.event, parsed, log)
            ms = int((time.monotonic() - t0) * 1000)
            b.logs.append(BranchLog(log, source, target, forced, ms))
            s.seq, s.fsm_state = log.head.seq, target.value

    def _count_reply(self, reply: AgentReply) -> None:
        """Count a reply on the run's state (a fork's branches count theirs here too)."""
        usage = Usage(
            reply.prompt_tokens,
            reply.completion_tokens,
            reply.cost_usd,
            reply.cached_tokens,
            reply.cache_write_tokens,
        )
        with self._counting:
            self.state.counters.llm_calls += int(reply.llm_call)
            self.state.add_usage(usage)

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
        ms = int((time.monotonic() - t0) * 1000)
        self._commit_all([(log, event, source, target, forced, ms)])

    def _commit_all(
        self, entries: list[tuple[TransitionLog, Event, State, State, bool, int]]
    ) -> None:
        """Make transitions durable under one checkpoint (one, or a fork with its branches
        and its join); the state moves to the last one's target."""
        s = self.state
        logs, lines, records = [], [], []
        for log, event, source, target, forced, duration in entries:
            fsm.check_target(source, event, target)
            log.retitle(event.value)
            first = len(lines)
            lines += log.event_lines(source.value, target.value, forced, duration)
            records.append(lines[first])
            logs.append((log.head.seq, event.value, log.to_bytes(target.value, forced, duration)))
        s.seq, s.fsm_state = entries[-1][0].head.seq, entries[-1][3].value
        s.counters.transitions += len(entries)
        s.elapsed_s = round(self._elapsed(), 3)
        self.store.commit_all(logs, lines, s.to_json())
        if entries[-1][1] not in (Event.ABORT, Event.FAIL):  # an aborted one's reply is kept
            self.exchange.committed()
            if self.shadow is not None:
                self.shadow.submit(cells_to_verify(self.doc.nb))
        for record in records:
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


def _trace(caught: BaseException) -> str:
    return "".join(traceback.format_exception(caught))[-8000:]
