"""One agent exchange: ask, validate, re-ask with the exact error; every attempt logged.

``AgentExchange.ask`` returns the first reply that parses into the expected payload, or
raises: ``LLMError`` from the backend at once, ``PayloadError`` once ``max_repairs`` re-asks
are spent. Either way the attempts are kept in ``logs/NNNN_EVENT.attempts.xml``. The accepted
reply is written to ``pending_reply.json`` until the runner commits the transition, so a crash
in between, or an interrupt, costs no second model call: the next ``ask`` of the same question
(event, location and iteration, which resume restores from the checkpoint) reuses it.

Answers given ahead (compact rounds, docs/agents.md): a stage planner's ``<stage>`` may carry
the stage's ``<steps>``, an arranger's ``<behavior>`` its ``<actions>``, a behavior reflector's
``<reflection>`` the stage reflection (when it completes the step) or the next ``<behavior>``
with its ``<actions>`` (when it retries), a stage reflection the next step's first
``<behavior>`` (when the stage goes on). The reply's own transition is handled as always;
``foreseen_parts`` says which parts to keep on the state, under the ``question`` of the
transition each answers; they are committed with that transition, and ``AgentExchange.take``
uses one, without a call, when its question comes. A part whose transition does not come next
is not kept (a reflection that retries the step drops its stage reflection), nor a stage
reflection whose reflection revised the plan (the stage reflector is asked, and sees the new
plan).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from notebook_bcc import failpoints
from notebook_bcc.agents import Agent, AgentReply
from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.payloads import ParsedPayload, parse_payload
from notebook_bcc.contract.prompts import RenderedPrompt, with_repair
from notebook_bcc.contract.translog import TransitionLog
from notebook_bcc.errors import LLMError, PayloadError
from notebook_bcc.fsm import Event, State
from notebook_bcc.rundir.state import Foreseen, WorkflowState
from notebook_bcc.rundir.store import RunStore

__all__ = ["AgentExchange", "PENDING_REPLY", "Rejected", "foreseen_parts", "question"]

PENDING_REPLY = "pending_reply.json"  # a validated reply whose transition is not yet committed


def question(event: Event, location: str, iteration: int) -> str:
    """What a transition asks, as a recorded reply and a foreseen payload are matched to it."""
    return f"{event.value} {location} #{iteration}"


#: the transition a part answers, and the state the reply's transition must reach for it to
#: come next (None: any; a stage's steps wait for their stage)
_ANSWERS = {
    "steps": (Event.START_STEP, None),
    "actions": (Event.COMPLETE_ACTION, State.BEHAVIOR_RUNNING),
    "behavior": (Event.START_BEHAVIOR, State.STEP_RUNNING),
    "stage_reflection": (Event.COMPLETE_STAGE, State.STEP_COMPLETED),
}


def foreseen_parts(
    parsed: ParsedPayload, s: WorkflowState, target: State, forced: bool, seq: int, agent: str
) -> list[Foreseen]:
    """The parts of ``parsed`` to keep, once its transition is handled (``s`` as it left it,
    moved to ``target``)."""
    kept = []
    for part in parsed.parts:
        event, needs = _ANSWERS[part.kind]
        if needs is not None and (target != needs or forced):
            continue
        if part.kind == "stage_reflection" and getattr(parsed.value, "revision", None):
            continue  # the plan changed under it: the stage reflector sees the new plan
        if part.kind == "steps":  # a stage is entered at its id, iteration 0
            if part.key not in {st.id for st in s.stages if st.status in ("pending", "running")}:
                continue
            asks = question(event, part.key, 0)
        else:  # the next transition's: the state's location stays as the handler left it
            asks = question(event, s.path, s.iteration)
        kept.append(Foreseen(asks, part.kind, part.text, seq, agent, part.error))
    return kept


class Rejected(NamedTuple):
    """A foreseen payload that failed its checks: its transition asks for it alone."""

    ahead: Foreseen
    error: PayloadError


class AgentExchange:
    """Asks for one transition's payload on behalf of the runner (which owns the state)."""

    def __init__(
        self,
        store: RunStore,
        *,
        max_repairs: int,
        on_reply: Callable[[AgentReply], None],
        check: Callable[[ParsedPayload], None],
        persist: bool = True,
    ) -> None:
        self.store = store
        #: keep the accepted reply in pending_reply.json until the commit (a fork's branches
        #: do not: a crash mid-fork runs the fork again)
        self.persist = persist
        self.max_repairs = max_repairs  # re-asks after an invalid reply
        self.on_reply = on_reply  # counts each reply's call and usage
        self.check = check  # semantic checks beyond the schema; raises PayloadError

    def ask(
        self,
        agent: Agent,
        event: Event,
        root: str | tuple[str, ...] | None,
        prompt: RenderedPrompt,
        obs: Observation,
        log: TransitionLog,
        fsm_state: State,
        rejected: Rejected | None = None,
    ) -> ParsedPayload:
        seq = log.head.seq
        asks = question(event, log.head.location, log.head.iteration)
        attempts = 1 + self.max_repairs
        asked, last_error = prompt, None
        log.note_omitted(prompt.omitted)
        recorded = self._recorded_reply(seq, asks) if self.persist else None
        roots = (root,) if isinstance(root, str) else root or ("",)
        if rejected is not None:  # the first attempt is the part an earlier reply carried
            last_error = rejected.error
            asked = with_repair(prompt, rejected.error, rejected.ahead.kind, rejected.ahead.text)
            attempts = max(attempts, 2)
        for attempt in range(1, attempts + 1):
            try:
                if recorded is None:
                    failpoints.hit("agent", event.value)
                reply = recorded or agent.respond(
                    asked, obs, repair=str(last_error) if last_error else None
                )
                recorded = None
            except LLMError as exc:
                for _, status, detail in exc.attempts:
                    log.add_attempt(agent.model, attempt, asked.system, asked.user, detail, status)
                log.add_attempt(agent.model, attempt, asked.system, asked.user, str(exc), "error")
                self._write_partial_log(log, event, fsm_state)
                raise
            for _, status, detail in reply.attempts:  # transport retries inside the call
                log.add_attempt(reply.model, attempt, asked.system, asked.user, detail, status)
            self.on_reply(reply)
            log.add_usage(
                reply.prompt_tokens, reply.completion_tokens, reply.cost_usd, reply.cached_tokens
            )
            try:
                parsed = parse_payload(reply.text, root)
                self.check(parsed)
            except PayloadError as exc:
                log.add_attempt(
                    reply.model, attempt, asked.system, asked.user, reply.text, "invalid"
                )
                if exc.security:
                    self.store.append_event(
                        {"type": "security", "event": event.value, "reason": exc.message}
                    )
                last_error = exc
                asked = with_repair(prompt, exc, "> or <".join(roots))
                continue
            log.add_attempt(reply.model, attempt, asked.system, asked.user, reply.text, "ok")
            if not self.persist:
                return parsed
            self.store.write_json(
                PENDING_REPLY,
                {"question": asks, "seq": seq, "model": reply.model, "text": reply.text},
            )
            return parsed
        self._write_partial_log(log, event, fsm_state)
        assert last_error is not None
        raise PayloadError(
            f"{log.head.agent} reply still invalid after {attempts} attempt(s): {last_error}",
            remedy="read the transition log in logs/ and fix the model or prompt; `bcc resume` retries",
        )

    def take(self, ahead: Foreseen, log: TransitionLog) -> ParsedPayload | Rejected:
        """The payload an earlier reply carried for this transition, checked now, used without
        a call; or why it cannot be (``ask`` then repairs it alone, with one call)."""
        try:
            if ahead.error:
                raise PayloadError(ahead.error, kind=ahead.kind)
            parsed = parse_payload(ahead.text, ahead.kind)
            self.check(parsed)
        except PayloadError as exc:
            log.notes.append(
                f"The <{ahead.kind}> the reply of transition {ahead.seq} ({ahead.agent}) carried "
                f"for this transition was rejected, and asked for again: {exc}"
            )
            return Rejected(ahead, exc)
        log.answered_by = (ahead.seq, ahead.agent)
        return parsed

    def committed(self) -> None:
        """The transition is durable: its recorded reply is no longer needed."""
        (self.store.root / PENDING_REPLY).unlink(missing_ok=True)

    def _recorded_reply(self, seq: int, asks: str) -> AgentReply | None:
        """A reply received but not applied before a crash: reused, not paid for twice."""
        if not (self.store.root / PENDING_REPLY).exists():
            return None
        record = self.store.read_json(PENDING_REPLY)
        if record.get("question") != asks:
            return None
        self.store.append_event({"type": "reply_reused", "seq": seq})
        return AgentReply(text=record["text"], model=record["model"])

    def _write_partial_log(self, log: TransitionLog, event: Event, fsm_state: State) -> None:
        """Keep the attempts of a transition that never completed (logs/NNNN_EVENT.attempts.xml)."""
        name = f"logs/{log.head.seq:04d}_{event.value}.attempts.xml"
        self.store.write(name, log.to_bytes(log.ending(event.value, fsm_state.value)))
