"""The runner: the loop over the table's events, and how the run ends.

Take the table's event for the current state, ask the agent, hand the payload to its handler
(``handlers.py``), then commit it (``commit.py``: a pending log, the event lines, state.json,
the log's rename); a fork is driven by ``fork.py``. ``session.py`` opens runs;
docs/architecture.md, "One transition", draws it.
"""

from __future__ import annotations

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
from notebook_bcc.rundir.notebook import NotebookDocument
from notebook_bcc.rundir.state import Usage, WorkflowState
from notebook_bcc.rundir.store import RunStore
from notebook_bcc.workflow import guards
from notebook_bcc.workflow.commit import Commits, next_log
from notebook_bcc.workflow.context import RunContext, RunResult
from notebook_bcc.workflow.exchange import AgentExchange, foreseen_parts, question
from notebook_bcc.workflow.finish import COMPLETED_WITH_FAILED_STEPS, finish
from notebook_bcc.workflow.fork import Branch, run_fork
from notebook_bcc.workflow.handlers import Handlers, Outcome
from notebook_bcc.workflow.host import KernelHost
from notebook_bcc.workflow.kernels import KernelFactory, open_kernel
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
        kernels: KernelFactory | None = None,  # where its kernels come from: ``kernels.py``
    ) -> None:
        self.ctx = RunContext(config, store, doc, state, kernels or open_kernel)
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
            on_reply=self.count_reply,
            check=self.handlers.check_payload,
        )
        self._t0 = time.monotonic()
        self._elapsed_before = state.elapsed_s
        self._artifacts: dict[str, Any] = {}
        self._preview = ""  # the data files' preview, made in run() while the kernel boots
        self._counting = threading.Lock()  # a fork's branches count their replies at once
        #: verifies as it goes: a fresh kernel runs each cell once it is committed
        self.shadow = make_shadow(self.ctx) if config.verify else None
        self.commits = Commits(self.ctx, self.exchange, self.shadow, self.on_event, self._elapsed)
        self.named_modules = self._spec.modules  # what a fork's branch hosts are told

    @property
    def state(self) -> WorkflowState:
        return self.ctx.state

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> RunResult:
        state = self.state
        done = state.fsm_state == State.WORKFLOW_COMPLETED and not self._asked()
        if done and self.store.summarised():
            self.store.unlock()
            summary = self.store.read_json("summary.json")
            return RunResult(
                self.store.root, state.fsm_state.value, 0, "run already completed", summary
            )
        state.resume_aborted()
        failpoints.arm()
        exit_code, message = 0, ""
        try:
            self.host.launch()
            raise_if_refused(self.agent)  # a refused key (the key check's) ends the run here
            from notebook_bcc.inputs.preview import preview_files  # pandas: while it boots

            self._preview = preview_files(self.store.root, self.files, sheet=self._spec.sheet)
            self.host.ensure()  # every planner is told the packages the kernel itself has
            while self.state.fsm_state not in fsm.STOPS or self._asked():
                row = fsm.event_from(self.state.fsm_state)
                if row.agent is None:
                    self._next_stage(row)
                else:
                    self._agent_transition(row)
        except (KeyboardInterrupt, Exception) as caught:  # noqa: BLE001 - every error is an ABORT
            exc = BccError.from_exception(caught)
            if not isinstance(caught, BccError | KeyboardInterrupt):  # a bug: keep its trace
                self.store.append_event({"type": "internal_error", "traceback": _trace(caught)})
            if isinstance(exc, DiskFull):
                exc.remedy = "free disk space, then `bcc resume RUN_DIR` continues"
            exc.remedy = exc.remedy.replace("RUN_DIR", str(self.store.root))
            exit_code, message = exc.exit_code, exc.one_line()
            self.commits.abort(str(exc))
        finally:
            if self.host.kernel is not None:
                completed = self.state.fsm_state == State.WORKFLOW_COMPLETED
                if completed:
                    self._artifacts = self.host.results()
                # an aborted run's kernel may be busy; resume rebuilds its state by replay
                self.host.shutdown(now=not completed)
            else:
                self.host.shutdown(now=True)  # launched and never used
        try:
            if self.shadow is not None and self.state.fsm_state != State.WORKFLOW_COMPLETED:
                self.shadow.close()
                discard_scratch(self.store.root)
            ended = finish(self.ctx, self.shadow, self._artifacts, self._spec, exit_code, message)
            exit_code, message, summary = ended
        except StorageError:
            if exit_code:  # the disk is still full: the checkpoint on disk is the last good one
                return RunResult(
                    self.store.root, self.state.fsm_state.value, exit_code, message, {}
                )
            raise
        finally:
            if self.shadow is not None and not self.shadow.stopped:  # an error in the summary
                self.shadow.close()
            self.store.unlock()
        return RunResult(self.store.root, self.state.fsm_state.value, exit_code, message, summary)

    def _asked(self) -> bool:
        """A follow-up waits for its stages (``bcc ask``): the completed run goes on."""
        return self.state.asked is not None

    # -- budgets (G6) ---------------------------------------------------------------------
    def _elapsed(self) -> float:
        return self._elapsed_before + time.monotonic() - self._t0

    def check_budgets(self) -> None:
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
            questions=self._spec.questions,
            supervised=self._spec.supervised,
            data_preview=self._preview,
            figures=handlers.figures,
            max_alternatives=self.config.max_alternatives,
            branch=(branch.id, branch.note) if branch else ("", ""),
            rounds="full" if self.config.is_offline else self.config.rounds,
        )

    def ask(
        self, row: fsm.Transition, log: TransitionLog, exchange: AgentExchange, b: Branch | None
    ) -> ParsedPayload:
        s = b.ctx.state if b else self.state
        ahead = s.take_foreseen(question(row.event, log.head.location, log.head.iteration))
        taken = exchange.take(ahead, log) if ahead else None
        if isinstance(taken, ParsedPayload):  # an earlier reply answered it: no call
            return taken
        self.check_budgets()  # G6, before each call (a foreseen answer costs none)
        roots: str | tuple[str, ...] | None = row.root
        if row.event == Event.START_BEHAVIOR and self.config.max_alternatives > 1:
            roots = ("alternatives", "behavior")  # a fork is the arranger's other answer
        obs = self._observation(row.event, s, b)
        prompt = render(obs)
        return exchange.ask(self.agent, row.event, roots, prompt, obs, log, s.fsm_state, taken)

    def _agent_transition(self, row: fsm.Transition) -> None:
        t0, log = time.monotonic(), next_log(self.state, row.event, row.agent)
        parsed = self.ask(row, log, self.exchange, None)
        log.set_payload(element_for_log(parsed))
        if isinstance(parsed.value, AlternativesPayload):
            self._fail_if_capped(run_fork(self, parsed, log, t0))
            return
        outcome = self.handlers.handle(row.event, parsed, log)
        if self.config.rounds == "compact":  # parts kept for the transitions they answer
            seq, agent = log.answered_by or (log.head.seq, row.agent or "")  # who wrote them
            self.state.foreseen += foreseen_parts(
                parsed, self.state, outcome.target, outcome.forced, seq, agent
            )
        self.commits.one(log, row.event, outcome, t0)
        self._fail_if_capped(outcome)

    def _fail_if_capped(self, outcome: Outcome) -> None:
        """A step G3 failed ends the workflow when ``--on-step-failure`` is abort."""
        failed = outcome.target == State.STEP_COMPLETED and outcome.forced
        if failed and self.config.on_step_failure == "abort":
            self.commits.terminal(Event.FAIL, "a step failed and --on-step-failure is abort")

    def count_reply(self, reply: AgentReply) -> None:
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
        t0, log = time.monotonic(), next_log(self.state, row.event, row.agent)
        self.commits.one(log, row.event, self.handlers.next_stage(log), t0)


def _trace(caught: BaseException) -> str:
    return "".join(traceback.format_exception(caught))[-8000:]
