"""A fork (FORK ... JOIN): alternative behaviors of one step run at once; the best is kept.

The behavior arranger may answer ``<alternatives>``: 2-3 behaviors and how to choose among
them. Each :class:`Branch` is the run as it stands (a copy of its state and of its notebook)
with a kernel of its own, which replays the committed notebook, and handlers of its own, so
its action and its reflection are carried out exactly as the run's are (``handlers.py``). The
branches run on threads, all at once: their work waits on kernels and models, not on Python.

A branch whose reflection completes the step is scored: the choice expression evaluated in its
kernel. ``join`` keeps the best (ties: the first); ``adopt`` makes its state the run's (with
the run's own usage and every branch's counts) and puts its cells in the notebook under one
line naming every branch and its score. The runner makes its kernel the run's; the other
kernels end. When no branch completes, the step retries as after a failed behavior. Nothing
of a fork is durable until the runner commits it whole (``RunStore.commit_all``), so a crash
mid-fork resumes before it and runs the fork again. :func:`run_fork` is the runner's side: each
branch's action and reflection asked and handled as the run's own are (logged apart), then FORK,
the branches' transitions and JOIN committed under one checkpoint (``commit.py``).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from lxml import etree

from notebook_bcc import fsm
from notebook_bcc.agents import AgentReply
from notebook_bcc.config import RunConfig
from notebook_bcc.contract.payloads import (
    AlternativesPayload,
    BehaviorPayload,
    ParsedPayload,
    element_for_log,
)
from notebook_bcc.contract.phrases import phrase
from notebook_bcc.contract.translog import TransitionLog
from notebook_bcc.errors import KernelError, LLMError, PayloadError
from notebook_bcc.fsm import Event, State
from notebook_bcc.rundir.notebook import CellTag, NotebookDocument
from notebook_bcc.rundir.state import WorkflowState
from notebook_bcc.rundir.store import utc_now
from notebook_bcc.workflow.commit import Commits, Entry, next_log
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.exchange import AgentExchange
from notebook_bcc.workflow.handlers import Handlers, Outcome
from notebook_bcc.workflow.host import KernelHost

__all__ = ["Branch", "Fork", "Turns", "run_fork"]

#: characters of a branch's cell output kept in its fork record (report.html shows it)
RECORD_EXCERPT_CHARS = 1500


@dataclass
class Branch:
    """One alternative: the run as it stands, with a kernel and handlers of its own."""

    behavior: BehaviorPayload
    ctx: RunContext
    host: KernelHost
    handlers: Handlers
    note: str  # what its agents are told about the fork
    logs: list[Entry] = field(default_factory=list)  # its transitions, ready to commit
    score: float | None = None
    dropped: str = ""  # why it cannot be kept ("" while it can)
    error: BaseException | None = None  # what stopped it, for the runner to judge

    @property
    def id(self) -> str:
        return self.behavior.id

    @property
    def completed(self) -> bool:
        step = self.ctx.state.step
        return step is not None and step.status == "complete"


class Fork:
    """The branches of one fork, from their start to the join."""

    def __init__(
        self,
        ctx: RunContext,
        parsed: ParsedPayload,
        behaviors: Sequence[BehaviorPayload],
        named_modules: tuple[str, ...] = (),
    ) -> None:
        """``behaviors``: those of ``parsed`` (an ``<alternatives>``) the fork runs."""
        payload = parsed.value
        assert isinstance(payload, AlternativesPayload)
        elements = etree.fromstring(parsed.xml).iterchildren("behavior")  # each as its own XML
        pairs = zip(payload.behaviors, elements, strict=True)
        xml = {b.id: etree.tostring(e, encoding="unicode") for b, e in pairs}
        self.ctx = ctx  # the run's
        self.payload = payload
        self.seq = ctx.state.seq + 1  # the FORK transition's
        self.branches: list[Branch] = []
        base = ctx.state  # as FORK left it: the step's behavior counted, no behavior current
        for k, behavior in enumerate(behaviors):
            state = copy.deepcopy(base)
            state.seq = self.seq + 2 * k  # provisional; ``numbering`` gives the final seqs
            state.fsm_state = State.BEHAVIOR_RUNNING
            state.start_behavior(behavior, xml[behavior.id])
            # a branch's notebook is never saved: its cells reach notebook.ipynb only when kept
            doc = NotebookDocument(copy.deepcopy(ctx.doc.nb), lambda text: None)
            branch_ctx = RunContext(ctx.config, ctx.store, doc, state, ctx.kernels)
            host = KernelHost(
                branch_ctx,
                resumed=True,
                named_modules=named_modules,
                rebuild_why="fork",
                gateway_role=f"fork-{k + 1}",
            )
            handlers = Handlers(branch_ctx, host)
            note = phrase(
                "branch",
                k=k + 1,
                n=len(behaviors),
                choose=payload.choose,
                extreme="highest" if payload.better == "higher" else "lowest",
                behavior=behavior.id,
            )
            self.branches.append(Branch(behavior, branch_ctx, host, handlers, note))

    # -- running ----------------------------------------------------------------------------
    def run(self, work: Callable[[Branch], None], *, at_once: bool = True) -> None:
        """Start each branch's kernel (replaying the notebook), do ``work`` in it, score it;
        all branches at once on threads, or one after another. A branch's exception is kept
        in ``branch.error`` for the runner to judge."""
        for branch in self.branches:
            branch.host.launch()  # here: a sandboxed kernel dies with its spawning thread
        if not at_once:
            for branch in self.branches:
                self._guarded(branch, work)
            return
        threads = [
            threading.Thread(target=self._guarded, args=(b, work), name=f"bcc-{b.id}", daemon=True)
            for b in self.branches
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():  # short joins: Ctrl-C reaches the main thread at once
                thread.join(0.2)

    def _guarded(self, branch: Branch, work: Callable[[Branch], None]) -> None:
        try:
            branch.host.ensure()
            work(branch)
            if branch.completed:
                self._score(branch)
            else:
                branch.dropped = "its behavior did not complete the step"
        except BaseException as exc:  # noqa: BLE001 - judged by the runner after the join
            branch.error = exc

    def _score(self, branch: Branch) -> None:
        kernel = branch.host.kernel
        assert kernel is not None
        try:
            branch.score, why = kernel.score(self.payload.choose)
        except (TimeoutError, KernelError) as exc:
            branch.score, why = None, str(exc)
        if branch.score is None:
            branch.dropped = f"`{self.payload.choose}` gave no number: {why}"

    def raise_fatal(self) -> None:
        """Raise what stops the run: an error other than a branch's own (its model's reply,
        its kernel), such as a budget, an interrupt, a full disk or a bug; or, when every
        branch failed with an error, the first one (as without a fork)."""
        errors = [b.error for b in self.branches if b.error is not None]
        own = (LLMError, PayloadError, KernelError, TimeoutError)
        fatal = [e for e in errors if not isinstance(e, own)]
        if fatal or (errors and len(errors) == len(self.branches)):
            raise (fatal or errors)[0]

    # -- the join ---------------------------------------------------------------------------
    def join(self) -> Branch | None:
        """The branch to keep: the best score among those that completed (ties: the first)."""
        sign = 1.0 if self.payload.better == "higher" else -1.0
        scored = [(k, b) for k, b in enumerate(self.branches) if b.score is not None]
        scored = [(k, b) for k, b in scored if not b.dropped and b.error is None]
        if not scored:
            return None
        return max(scored, key=lambda kb: (sign * (kb[1].score or 0.0), -kb[0]))[1]

    def numbering(self) -> tuple[dict[int, int], int]:
        """Final seqs: FORK keeps ``self.seq``, the branches' transitions follow in branch
        order, JOIN comes last. Returns (provisional -> final, the JOIN's seq)."""
        final, seq = {}, self.seq
        for branch in self.branches:
            for entry in branch.logs:
                seq += 1
                final[entry.log.head.seq] = seq
        return final, seq + 1

    def branch_entries(self, final: dict[int, int]) -> list[Entry]:
        """The branches' transitions as the runner commits them, renumbered."""
        for branch in self.branches:
            for e in branch.logs:
                e.log.renumber(final[e.log.head.seq])
        return [e for branch in self.branches for e in branch.logs]

    def summary_line(self, kept: Branch | None) -> str:
        """ "Alternatives tried: a 0.81, b 0.84 (kept)", for the notebook and the JOIN log."""
        parts = []
        for b in self.branches:
            if b is kept:
                parts.append(f"{b.id} {b.score:.4g} (kept)")
            elif b.score is not None and not b.dropped and b.error is None:
                parts.append(f"{b.id} {b.score:.4g}")
            else:
                why = b.dropped or _one_line(b.error)
                parts.append(f"{b.id} (dropped: {why[:160]})")
        return (
            f"Alternatives tried (`{self.payload.choose}`, {self.payload.better} is better): "
            + ("; ".join(parts))
        )

    def record(self, kept: Branch | None, join_seq: int) -> dict[str, Any]:
        """The fork as summary.json ``alternatives`` and report.html show it."""
        s = self.ctx.state
        branches = []
        for b in self.branches:
            cells = [
                {"code": c.code, "status": c.status, "output": c.excerpt[:RECORD_EXCERPT_CHARS]}
                for c in b.ctx.state.last_execution
            ]
            branches.append(
                {
                    "behavior": b.id,
                    "task": b.behavior.task,
                    "score": b.score,
                    "kept": b is kept,
                    "dropped": "" if b is kept else (b.dropped or _one_line(b.error)),
                    "cells": cells,
                }
            )
        return {
            "seq": self.seq,
            "join_seq": join_seq,
            "step": f"{s.stage.id}/{s.step.id}" if s.stage and s.step else "",
            "choose": self.payload.choose,
            "better": self.payload.better,
            "branches": branches,
        }

    def adopt(self, kept: Branch | None, final: dict[int, int], join_seq: int) -> WorkflowState:
        """The run's state after the join: the kept branch's (or, with none kept, the run's),
        with the run's usage, every branch's counts and failed code, and this fork's record.
        The kept branch's cells join the notebook, renumbered, under the summary line."""
        run = self.ctx.state
        state = kept.ctx.state if kept is not None else run
        merged = copy.deepcopy(run.counters)
        for f in fields(merged):
            if f.name in ("transitions", "llm_calls"):  # counted by the runner as they happen
                continue
            spent = sum(
                getattr(b.ctx.state.counters, f.name) - getattr(run.counters, f.name)
                for b in self.branches
            )
            setattr(merged, f.name, getattr(run.counters, f.name) + spent)
        failed_code = list(run.step.failed_code) if run.step else []
        for b in self.branches:
            step = b.ctx.state.step
            failed_code += [d for d in (step.failed_code if step else []) if d not in failed_code]
        if kept is None:
            state.step_log += [b.ctx.state.step_log[-1] for b in self.branches]
        state.counters, state.usage = merged, run.usage
        state.usage_by_location = run.usage_by_location
        if state.step is not None:
            state.step.failed_code = failed_code
        state.forks = [*run.forks, self.record(kept, join_seq)]
        if kept is not None:
            self._keep_cells(kept, final, join_seq)
            line = self.summary_line(kept)
            losers = []  # what the other branches ran stays in the step's record, before it
            for b in self.branches:
                entry = b.ctx.state.step_log[-1]
                if b is not kept and "cells" in entry:
                    why = f"score {b.score:.4g}" if b.score is not None else b.dropped
                    losers.append(_noted(entry, f"not kept ({why or _one_line(b.error)})"))
            state.step_log[-1:] = [*losers, _noted(state.step_log[-1], line)]
        return state

    def _keep_cells(self, kept: Branch, final: dict[int, int], join_seq: int) -> None:
        doc, s = self.ctx.doc, kept.ctx.state
        stage, step = (s.stage.id if s.stage else ""), (s.step.id if s.step else "")
        tag = CellTag(stage, step, kept.id, s.iteration, join_seq)
        doc.add_markdown(f"*{self.summary_line(kept)}*", tag, role="alternatives")
        for cell in kept.ctx.doc.nb.cells:
            meta = cell.metadata.get("bcc", {})
            if meta.get("seq", 0) >= self.seq:
                meta["seq"] = final.get(meta["seq"], join_seq)
                doc.nb.cells.append(cell)
        doc.edited()
        if s.project_title and s.project_title != self.ctx.state.project_title:
            doc.set_title(s.project_title)  # the kept branch's generator retitled the project
        doc.set_variables(s.ledger.to_json())
        doc.save()

    def close(self, kept: Branch | None) -> None:
        """End every branch's kernel but the kept one's (the runner has taken it)."""
        for branch in self.branches:
            if branch is not kept:
                branch.host.shutdown(now=True)


def _noted(entry: dict[str, Any], note: str) -> dict[str, Any]:
    """A step-log entry with a runner's note added to its checks."""
    checks = dict(entry.get("checks") or {})
    checks["notes"] = [*checks.get("notes", []), note]
    return {**entry, "checks": checks}


def _one_line(error: BaseException | None) -> str:
    return "" if error is None else " ".join(str(error).split())[:300] or type(error).__name__


# -- the runner's side ------------------------------------------------------------------------
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
