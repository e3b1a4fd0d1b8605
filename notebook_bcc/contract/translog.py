"""TransitionLog: the XML record of one transition (``logs/NNNN_<EVENT>.xml``; docs/run-directory.md, "A run directory").

Element and attribute names are fixed by the design; outside checks parse them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

__all__ = ["Ending", "TransitionLog", "xml_safe", "cdata"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """Text without ANSI escapes or characters XML 1.0 cannot hold."""
    return _INVALID_XML.sub("", _ANSI.sub("", text))


def cdata(text: str) -> etree.CDATA | str:
    """CDATA when possible; plain (escaped) text when the text itself contains ``]]>``."""
    text = xml_safe(text)
    return text if "]]>" in text else etree.CDATA(text)


@dataclass(frozen=True)
class _Head:
    seq: int
    event: str
    source: str
    agent: str | None
    location: str
    iteration: int
    started_at: str


@dataclass(frozen=True)
class Ending:
    """How a transition ended, known when it is committed."""

    event: str  # the event it turned out to be (an arranger's fork is FORK)
    target: str
    location: str  # where it is filed: a new plan's, step's or behavior's, else where asked
    iteration: int
    forced: bool = False
    duration_ms: int = 0


class TransitionLog:
    """Builds one ``<transition>`` element, in the order the design shows its children."""

    def __init__(
        self,
        seq: int,
        event: str,
        source: str,
        agent: str | None,
        location: str,
        iteration: int,
        started_at: str,
    ) -> None:
        self.head = _Head(seq, event, source, agent, location, iteration, started_at)
        self._attempts: list[etree._Element] = []
        self._payload: etree._Element | None = None
        self._execution: etree._Element | None = None
        self._checks: etree._Element | None = None
        self._guards: list[etree._Element] = []
        self._revisions: list[etree._Element] = []
        self._omitted: tuple[str, ...] = ()
        self._usage = (0, 0, 0.0, 0)
        self.notes: list[str] = []
        self.branch = ""  # a fork's branch (its behavior id) this transition belongs to
        #: (seq, agent) of the earlier reply that carried this transition's payload (compact
        #: rounds): no request of its own
        self.answered_by: tuple[int, str] | None = None

    def renumber(self, seq: int) -> None:
        """Give the transition the seq it is committed under (a fork's branches are numbered
        when they join)."""
        h = self.head
        self.head = _Head(seq, h.event, h.source, h.agent, h.location, h.iteration, h.started_at)

    def ending(
        self,
        event: str,
        target: str,
        *,
        forced: bool = False,
        duration_ms: int = 0,
        about: tuple[str, int] | None = None,
    ) -> Ending:
        """How it ended; ``about``: the location it moved the run to (e.g. a new behavior),
        where it is filed (None: where it was asked)."""
        location, iteration = about or (self.head.location, self.head.iteration)
        return Ending(event, target, location, iteration, forced, duration_ms)

    def note_omitted(self, omitted: tuple[str, ...]) -> None:
        """What the prompt's budget left out (whole history items, by name): each request
        logs it in an ``<omitted>`` element, so a cut is never silent."""
        self._omitted = omitted

    def add_attempt(
        self, model: str, attempt: int, system: str, user: str, response: str, status: str
    ) -> None:
        request = etree.Element("request", model=model, attempt=str(attempt))
        for role, text in (("system", system), ("user", user)):
            etree.SubElement(request, "prompt", role=role).text = cdata(text)
        if self._omitted:
            etree.SubElement(request, "omitted").text = cdata("\n".join(self._omitted))
        reply = etree.Element("response", attempt=str(attempt), status=status)
        reply.text = cdata(response)
        self._attempts += [request, reply]

    def set_payload(self, element: etree._Element) -> None:
        self._payload = etree.Element("payload")
        self._payload.append(element)

    def add_cell(self, cell_id: str, status: str, duration_ms: int, excerpt: str) -> None:
        if self._execution is None:
            self._execution = etree.Element("execution")
        cell = etree.SubElement(
            self._execution, "cell", id=cell_id, status=status, duration_ms=str(duration_ms)
        )
        cell.text = cdata(excerpt)

    def add_artifact(self, name: str, present: bool) -> None:
        etree.SubElement(
            self._checks_el(), "artifact", name=name, status="present" if present else "missing"
        )

    def add_criterion(self, expression: str, status: str, detail: str = "") -> None:
        el = etree.SubElement(self._checks_el(), "criterion", status=status)
        if detail:
            el.set("detail", xml_safe(detail)[:300])
        el.text = cdata(expression)

    def add_guard(self, name: str, effect: str, reason: str) -> None:
        guard = etree.Element("guard", name=name, effect=effect)
        guard.text = cdata(reason)
        self._guards.append(guard)

    def add_usage(
        self, prompt_tokens: int, completion_tokens: int, cost_usd: float, cached_tokens: int = 0
    ) -> None:
        p, c, u, k = self._usage
        self._usage = (p + prompt_tokens, c + completion_tokens, u + cost_usd, k + cached_tokens)

    def add_revision(self, reason: str, changes: list[str]) -> None:
        """A plan revision as applied: its reason, then one ``<change>`` per change."""
        revision = etree.Element("plan_revised")
        etree.SubElement(revision, "reason").text = cdata(reason)
        for change in changes:
            etree.SubElement(revision, "change").text = xml_safe(change)
        self._revisions.append(revision)

    @property
    def revisions(self) -> list[tuple[str, list[str]]]:
        return [
            (r.findtext("reason") or "", [c.text or "" for c in r.iter("change")])
            for r in self._revisions
        ]

    @property
    def guards(self) -> list[tuple[str, str, str]]:
        return [(g.get("name"), g.get("effect"), g.text or "") for g in self._guards]

    def event_lines(self, end: Ending) -> list[dict[str, object]]:
        """Its ``events.jsonl`` lines: the transition, then its guards and plan revisions."""
        h = self.head
        transition: dict[str, object] = {
            "type": "transition",
            "seq": h.seq,
            "event": end.event,
            "from": h.source,
            "to": end.target,
            "agent": h.agent,
            "location": end.location,
            "iteration": end.iteration,
            "forced": end.forced,
            "duration_ms": end.duration_ms,
        }
        if self.branch:
            transition["branch"] = self.branch
        if self.answered_by:
            transition["answered_by"] = self.answered_by[0]
        return [
            transition,
            *(
                {"type": "guard", "seq": h.seq, "guard": n, "effect": e, "reason": r}
                for n, e, r in self.guards
            ),
            *(
                {"type": "plan_revised", "seq": h.seq, "reason": r, "changes": c}
                for r, c in self.revisions
            ),
        ]

    def _checks_el(self) -> etree._Element:
        if self._checks is None:
            self._checks = etree.Element("checks")
        return self._checks

    def to_bytes(self, end: Ending) -> bytes:
        h = self.head
        root = etree.Element(
            "transition",
            seq=str(h.seq),
            event=end.event,
            to=end.target,
            agent=h.agent or "none",
            location=end.location,
            iteration=str(end.iteration),
            started_at=h.started_at,
            duration_ms=str(end.duration_ms),
            forced="true" if end.forced else "false",
        )
        if self.branch:
            root.set("branch", self.branch)
        if self.answered_by:
            root.set("answered_by", str(self.answered_by[0]))
        root.set("from", h.source)
        # keep the design's attribute order: seq, event, from, to, ...
        attrs = dict(root.attrib)
        root.attrib.clear()
        for key in ("seq", "event", "from", "to", "agent", "location", "iteration"):
            root.set(key, attrs.pop(key))
        for key, value in attrs.items():
            root.set(key, value)
        for el in self._attempts:
            root.append(el)
        for el in (self._payload, self._execution, self._checks):
            if el is not None:
                root.append(el)
        for revision in self._revisions:
            root.append(revision)
        if self._guards:
            guards = etree.SubElement(root, "guards")
            for g in self._guards:
                guards.append(g)
        notes = list(self.notes)
        if self.answered_by:
            seq, agent = self.answered_by
            notes.insert(0, f"Answered by the reply of transition {seq} ({agent}): no call.")
        for note in notes:
            etree.SubElement(root, "note").text = cdata(note)
        p, c, u, k = self._usage
        etree.SubElement(
            root,
            "usage",
            prompt_tokens=str(p),
            completion_tokens=str(c),
            cost_usd=f"{u:.6f}",
            cached_tokens=str(k),
        )
        return etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="UTF-8")
