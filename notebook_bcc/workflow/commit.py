"""The commit of transitions: what makes one durable, a terminal one, and the abort.

A transition is durable once ``RunStore.commit_all`` has written its pending log, its event
lines, state.json and the log's rename (docs/architecture.md, "One transition"). A fork commits
its FORK, its branches' transitions and its JOIN under one checkpoint.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from notebook_bcc import failpoints, fsm
from notebook_bcc.contract.translog import TransitionLog
from notebook_bcc.errors import StorageError
from notebook_bcc.fsm import Event, State
from notebook_bcc.kernel.shadow import ShadowRun
from notebook_bcc.kernel.verification import cells_to_verify
from notebook_bcc.rundir.state import WorkflowState
from notebook_bcc.rundir.store import utc_now
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.exchange import AgentExchange
from notebook_bcc.workflow.handlers import Outcome

__all__ = ["Commits", "Entry", "next_log"]


def next_log(s: WorkflowState, event: Event, agent: str | None) -> TransitionLog:
    """The log of the transition ``event`` from where ``s`` stands (its seq is the next)."""
    return TransitionLog(
        s.seq + 1, event.value, s.fsm_state.value, agent, s.path, s.iteration, utc_now()
    )


@dataclass(frozen=True)
class Entry:
    """One transition to commit: its log, its event, and where it took the machine."""

    log: TransitionLog
    event: Event
    outcome: Outcome
    duration_ms: int


class Commits:
    """Commits a run's transitions; the state moves only here."""

    def __init__(
        self,
        ctx: RunContext,
        exchange: AgentExchange,
        shadow: ShadowRun | None,
        on_event: Callable[[dict[str, Any]], None],
        elapsed: Callable[[], float],
    ) -> None:
        self.ctx, self.exchange, self.shadow = ctx, exchange, shadow
        self.on_event, self.elapsed = on_event, elapsed

    def one(self, log: TransitionLog, event: Event, outcome: Outcome, t0: float) -> None:
        self.all([Entry(log, event, outcome, int((time.monotonic() - t0) * 1000))])

    def all(self, entries: list[Entry]) -> None:
        """Make transitions durable under one checkpoint (one, or a fork with its branches
        and its join); the state moves to the last one's target."""
        s = self.ctx.state
        logs, lines, records = [], [], []
        for e in entries:
            o = e.outcome
            fsm.check_target(State(e.log.head.source), e.event, o.target)
            end = e.log.ending(
                e.event.value,
                o.target.value,
                forced=o.forced,
                duration_ms=e.duration_ms,
                about=o.about,
            )
            first = len(lines)
            lines += e.log.event_lines(end)
            records.append(lines[first])
            logs.append((e.log.head.seq, e.event.value, e.log.to_bytes(end)))
        before = s.seq, s.fsm_state, s.counters.transitions, s.elapsed_s
        s.seq, s.fsm_state = entries[-1].log.head.seq, entries[-1].outcome.target
        s.counters.transitions += len(entries)
        s.elapsed_s = round(self.elapsed(), 3)
        try:
            self.ctx.store.commit_all(logs, lines, s.to_json())
        except BaseException:  # a signal or a full disk mid-commit: not durable unless
            if not self._checkpointed(s.seq):  # state.json says so, so the abort redoes it
                s.seq, s.fsm_state, s.counters.transitions, s.elapsed_s = before
            raise
        if entries[-1].event not in (Event.ABORT, Event.FAIL):  # an aborted one's reply is kept
            self.exchange.committed()
            if self.shadow is not None:
                self.shadow.submit(cells_to_verify(self.ctx.doc.nb))
        for record in records:
            self.on_event({**record, **s.progress()})

    def _checkpointed(self, seq: int) -> bool:
        """Whether state.json on disk already stands at ``seq`` (the commit's durable point)."""
        try:
            return int(self.ctx.store.read_json("state.json").get("seq", -1)) == seq
        except (OSError, ValueError, TypeError):
            return False

    def terminal(self, event: Event, reason: str) -> None:
        """Fire FAIL or ABORT from the current state and checkpoint."""
        s = self.ctx.state
        source = s.fsm_state
        if source in fsm.STOPS:
            return
        log = next_log(s, event, None)
        log.notes.append(reason)
        s.error = reason
        if event == Event.ABORT:
            s.resume_from = source.value
        target = fsm.transition_for(source, event).targets[0]
        self.one(log, event, Outcome(target), time.monotonic())

    def abort(self, reason: str) -> None:
        """Forget the unfinished transition, then checkpoint WORKFLOW_ABORTED (resumable).

        The state comes back from the last checkpoint and the notebook loses the cells that
        transition added, so ``bcc resume`` redoes it once; whatever of it reached the disk
        (a pending log, event lines) is undone first, so the ABORT takes the next seq and no
        seq is used twice. Model usage and kernel restarts spent on it are kept. A write that
        fails here (disk still full) leaves the last checkpoint as it was, just as resumable.
        """
        ctx = self.ctx
        if ctx.state.fsm_state in fsm.STOPS:  # it ended durably; its log may not be renamed
            with contextlib.suppress(StorageError):
                ctx.store.recover(ctx.state.seq)
            return
        failpoints.hit("abort", reason)
        spent = ctx.state
        try:
            saved = WorkflowState.from_json(ctx.store.read_json("state.json"))
        except (OSError, ValueError):
            saved = spent
        saved.counters.llm_calls = spent.counters.llm_calls
        saved.counters.kernel_restarts = spent.counters.kernel_restarts
        saved.usage, saved.usage_by_location = spent.usage, spent.usage_by_location
        ctx.state = saved
        for i in reversed(ctx.doc.cells_after(saved.seq)):
            ctx.doc.remove(i)
        with contextlib.suppress(StorageError):  # the disk may still be full: then the last
            ctx.store.recover(saved.seq)  # checkpoint stays as it is, just as resumable
            self.terminal(Event.ABORT, reason)
