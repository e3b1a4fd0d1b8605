"""A fork driven from the runner: its branches' turns, the join, and one commit of it all.

``fork.py`` holds the branches and the join; this is the runner's side: each branch's action
and reflection asked and handled as the run's own are (logged apart), then FORK, the branches'
transitions and JOIN committed under one checkpoint (``commit.py``).
"""

from __future__ import annotations

import time
from typing import Protocol

from notebook_bcc import fsm
from notebook_bcc.agents import AgentReply
from notebook_bcc.config import RunConfig
from notebook_bcc.contract.payloads import ParsedPayload, element_for_log
from notebook_bcc.contract.translog import TransitionLog
from notebook_bcc.fsm import Event, State
from notebook_bcc.rundir.store import utc_now
from notebook_bcc.workflow.commit import Commits, Entry, next_log
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.exchange import AgentExchange
from notebook_bcc.workflow.fork import Branch, Fork
from notebook_bcc.workflow.handlers import Handlers, Outcome
from notebook_bcc.workflow.host import KernelHost

__all__ = ["Turns", "run_fork"]


class Turns(Protocol):
    """What a fork takes from the runner: the run's parts and how it asks an agent (which
    checks the budgets before each call)."""

    ctx: RunContext
    config: RunConfig
    handlers: Handlers
    host: KernelHost
    exchange: AgentExchange
    commits: Commits
    named_modules: tuple[str, ...]

    def ask(
        self, row: fsm.Transition, log: TransitionLog, exchange: AgentExchange, b: Branch | None
    ) -> ParsedPayload: ...

    def count_reply(self, reply: AgentReply) -> None: ...


def run_fork(run: Turns, parsed: ParsedPayload, log: TransitionLog, t0: float) -> Outcome:
    """Run the branches, join, commit FORK ... JOIN; the JOIN's target and whether forced."""
    behaviors = run.handlers.on_fork(parsed, log)
    forked = Entry(
        log,
        Event.FORK,
        Outcome(State.BEHAVIOR_RUNNING, about=run.handlers.here()),
        int((time.monotonic() - t0) * 1000),
    )
    fork, kept = Fork(run.ctx, parsed, behaviors, run.named_modules), None
    try:
        fork.run(lambda b: _branch(run, b), at_once=run.config.fork_at_once)
        fork.raise_fatal()
        kept = fork.join()
        final, join_seq = fork.numbering()
        join = TransitionLog(
            join_seq, Event.JOIN.value, State.BEHAVIOR_RUNNING.value, None, "", 0, utc_now()
        )
        join.notes.append(fork.summary_line(kept))
        run.ctx.state = new = fork.adopt(kept, final, join_seq)
        outcome = Outcome(State.STEP_COMPLETED)
        if kept is None:
            new.seq = join_seq - 1  # the failure note G3 may add is the JOIN's
            outcome = run.handlers.no_branch_kept(join.notes[0], join)
        outcome = Outcome(outcome.target, outcome.forced, about=(new.path, new.iteration))
        ms = int((time.monotonic() - t0) * 1000)
        run.commits.all([forked, *fork.branch_entries(final), Entry(join, Event.JOIN, outcome, ms)])
    finally:
        if kept is not None and kept.host.kernel is not None:
            run.host.adopt(kept.host)
        fork.close(kept)
    return outcome


def _branch(run: Turns, b: Branch) -> None:
    """A branch's action and reflection, handled as the run's own are, logged apart."""
    s = b.ctx.state
    exchange = AgentExchange(
        run.ctx.store,
        max_repairs=run.exchange.max_repairs,
        on_reply=run.count_reply,
        check=b.handlers.check_payload,
        persist=False,
    )
    for _ in range(2):  # COMPLETE_ACTION, then COMPLETE_STEP
        row = fsm.event_from(s.fsm_state)
        t0, log = time.monotonic(), next_log(s, row.event, row.agent)
        log.branch = b.id
        parsed = run.ask(row, log, exchange, b)
        log.set_payload(element_for_log(parsed))
        outcome = b.handlers.handle(row.event, parsed, log)
        b.logs.append(Entry(log, row.event, outcome, int((time.monotonic() - t0) * 1000)))
        s.seq, s.fsm_state = log.head.seq, outcome.target
