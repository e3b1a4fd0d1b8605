"""The XML contract (docs/architecture.md, "One transition"; prompts/schemas): turn an agent's reply into a typed, validated payload.

Pipeline, in order: size cap -> refuse DOCTYPE/ENTITY -> extract the root element -> strict
parse -> (only if that fails: deterministic hardening and one more strict parse) -> RelaxNG
(``prompts/schemas/<kind>.rng``) -> semantic checks -> frozen dataclasses.

Every failure is a :class:`PayloadError` whose message a model can act on. Line and column
numbers refer to the reply exactly as the model wrote it (prose around the root is blanked out,
not removed, before parsing).
"""

from __future__ import annotations

import re

from lxml import etree

from notebook_bcc.contract.checker import GOAL_STATUS, Checker, text_of
from notebook_bcc.contract.reply import (  # noqa: F401 - KINDS, MAX_REPLY_CHARS, resource_dir re-exported
    KINDS,
    MAX_REPLY_CHARS,
    extract_root,
    refuse_declarations,
    resource_dir,
    schema_for,
    strict_parse,
    xml_parser,
)
from notebook_bcc.contract.types import (  # noqa: F401 - re-exported
    Action,
    ActionsPayload,
    AlternativesPayload,
    ArtifactClaim,
    BehaviorPayload,
    ParsedPayload,
    Part,
    Payload,
    PlanChange,
    PlanRevision,
    ReflectionPayload,
    StageReflectionPayload,
    StagesPayload,
    StageSpec,
    StepsPayload,
    StepSpec,
    VariableSpec,
)
from notebook_bcc.errors import PayloadError


def _planned(root: etree._Element, tag: str) -> list[etree._Element]:
    """``<stage>``/``<step>`` children in document order, also inside ``<remaining>``."""
    found: list[etree._Element] = []
    for el in root.iterchildren(tag, "remaining"):
        found.extend([el] if el.tag == tag else el.iterchildren(tag))
    return found


def _plan_fields(c: Checker, el: etree._Element) -> dict[str, object]:
    return {
        "id": c.snake_id(el),
        "title": (el.get("title") or "").strip(),
        "goal": text_of(c.child(el, "goal")),
        "verified_artifacts": c.variables(c.child(el, "verified_artifacts")),
        "required_variables": c.variables(el.find("required_variables")),
    }


def _read_plan(c: Checker, root: etree._Element, tag: str) -> list[etree._Element]:
    elements = _planned(root, tag)
    if not elements:
        raise c.error(root, f"<{root.tag}> must contain at least one <{tag}>")
    c.unique_ids(elements)
    return elements


def _read_stages(c: Checker, root: etree._Element) -> StagesPayload:
    stages = tuple(StageSpec(**_plan_fields(c, el)) for el in _read_plan(c, root, "stage"))  # type: ignore[arg-type]
    return StagesPayload(stages, c.optional_text(root, "title"), c.optional_text(root, "focus"))


def _read_steps(c: Checker, root: etree._Element) -> StepsPayload:
    steps = []
    for el in _read_plan(c, root, "step"):
        pcs_el = el.find("pcs_considerations")
        pcs = (
            ()
            if pcs_el is None
            else tuple((str(p.tag), text_of(p)) for p in pcs_el if isinstance(p.tag, str))
        )
        steps.append(StepSpec(**_plan_fields(c, el), pcs=pcs))  # type: ignore[arg-type]
    return StepsPayload(tuple(steps), c.optional_text(root, "focus"))


def _read_behavior(c: Checker, root: etree._Element) -> BehaviorPayload:
    acceptance = root.find("acceptance")
    criteria = () if acceptance is None else acceptance.iterchildren("criterion")
    return BehaviorPayload(
        id=c.snake_id(root),
        step_id=(root.get("step_id") or "").strip(),
        agent=text_of(c.child(root, "agent")),
        task=text_of(c.child(root, "task")),
        inputs=c.variables(root.find("inputs")),
        outputs=c.variables(c.child(root, "outputs"), "artifact"),
        acceptance=tuple(t for t in (text_of(el) for el in criteria) if t),
    )


def _read_alternatives(c: Checker, root: etree._Element) -> AlternativesPayload:
    """Each ``<behavior>`` is checked as a behavior payload of its own, then as a set: unique
    ids, the same step."""
    schema = schema_for("behavior")
    behaviors = []
    for el in root.iterchildren("behavior"):
        if not schema.validate(el):
            raise c.schema_error(el, schema.error_log)
        behaviors.append(_read_behavior(c, el))
    if len(behaviors) < 2:
        raise c.error(
            root, "a fork needs 2 or more <behavior> elements; answer one <behavior> instead"
        )
    ids = [b.id for b in behaviors]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise c.error(root, f"alternative behavior id {', '.join(twice)} is used twice")
    step_id = (root.get("step_id") or behaviors[0].step_id).strip()
    other = [b.id for b in behaviors if b.step_id != step_id]
    if other:
        raise c.error(root, f"behavior {', '.join(other)} is not of step '{step_id}'")
    choose = c.child(root, "choose")
    better = (choose.get("better") or "").strip()
    if better not in ("higher", "lower"):
        raise c.error(choose, '<choose better="..."> is "higher" or "lower"')
    expression = text_of(choose).strip()
    if not expression:
        raise c.error(choose, "<choose> holds the Python expression that scores a branch")
    return AlternativesPayload(step_id, tuple(behaviors), expression, better)


_ACTION_KINDS = {"update-project-title": "title", "add-text": "text", "add-code2run": "code"}


def _read_actions(c: Checker, root: etree._Element) -> ActionsPayload:
    actions = []
    for el in root.iterchildren(*_ACTION_KINDS):
        content = text_of(el)
        if not content.strip():
            raise c.error(el, f"<{el.tag}> is empty")
        actions.append(Action(_ACTION_KINDS[el.tag], content))
    if not actions:
        raise c.error(
            root,
            "<actions> needs at least one <update-project-title>, <add-text> or <add-code2run>",
        )
    return ActionsPayload(tuple(actions))


def _agreement(
    c: Checker, root: etree._Element, attr: str, flag: bool, state: str, done: str
) -> None:
    if flag != (state == done):
        raise c.error(
            root,
            f'{attr}="{str(flag).lower()}" disagrees with <next_state>{state}'
            f"</next_state>: it must be true exactly when next_state is {done}",
        )


def _read_reflection(c: Checker, root: etree._Element) -> ReflectionPayload:
    complete = c.boolean(root, "current_step_is_complete")
    state_el = c.child(root, "decision/next_state")
    state = c.choice(state_el, text_of(state_el), ("STEP_COMPLETED", "STEP_RUNNING"))
    _agreement(c, root, "current_step_is_complete", complete, state, "STEP_COMPLETED")
    status_el = c.child(root, "evaluation/goal_achievement/status")
    artifacts = tuple(
        ArtifactClaim(
            c.identifier(el),
            c.choice(el, el.get("status", ""), ("complete", "partial", "missing")),
            text_of(el),
        )
        for el in root.iterfind("evaluation/artifacts_produced/artifact")
    )
    criteria = tuple(
        (c.choice(el, el.get("status", ""), ("passed", "failed")), text_of(el))
        for el in root.iterfind("evaluation/acceptance_validation/criterion")
    )
    return ReflectionPayload(
        step_complete=complete,
        next_state=state,
        goal_status=c.choice(status_el, text_of(status_el), GOAL_STATUS),
        goal_reasoning=text_of(c.child(root, "evaluation/goal_achievement/reasoning")),
        decision_reasoning=text_of(c.child(root, "decision/reasoning")),
        artifacts=artifacts,
        criteria=criteria,
        variables_produced=c.variables(root.find("context_for_next/variables_produced")),
        recommendations=c.optional_text(root, "context_for_next/recommendations_for_next"),
        comment=c.optional_text(root, "comment"),
        revision=_read_revision(c, root.find("plan_revision")),
    )


def _read_revision(c: Checker, el: etree._Element | None) -> PlanRevision | None:
    """``<plan_revision>``, read in document order; the plan itself checks it later."""
    if el is None:
        return None
    changes = []
    for child in el.iterchildren("revise_step", "add_step", "drop_step", "revise_stage"):
        arts, needs = child.find("verified_artifacts"), child.find("required_variables")
        changes.append(
            PlanChange(
                kind=str(child.tag),
                id=c.snake_id(child),
                title=(child.get("title") or "").strip() or None,
                goal=c.optional_text(child, "goal"),
                verified_artifacts=None if arts is None else c.variables(arts),
                required_variables=None if needs is None else c.variables(needs),
                why=text_of(child) if child.tag == "drop_step" else "",
                after=(child.get("after") or "").strip() if child.tag == "add_step" else "",
            )
        )
    superseded = tuple(
        ((s.get("step") or "").strip(), text_of(s)) for s in el.iterchildren("supersede")
    )
    reason = text_of(c.child(el, "reason"))
    if not reason:
        raise c.error(
            el, "<plan_revision> needs a <reason>: what the run found that the plan missed"
        )
    return PlanRevision(reason, tuple(changes), superseded)


def _read_stage_reflection(c: Checker, root: etree._Element) -> StageReflectionPayload:
    complete = c.boolean(root, "stage_is_complete")
    state_el = c.child(root, "decision/next_state")
    state = c.choice(state_el, text_of(state_el), ("STEP_RUNNING", "STAGE_COMPLETED"))
    _agreement(c, root, "stage_is_complete", complete, state, "STAGE_COMPLETED")
    status_el = c.child(root, "step_evaluation/completion_status")
    goal_el = root.find("stage_assessment/goal_status")
    return StageReflectionPayload(
        stage_complete=complete,
        next_state=state,
        step_id=text_of(c.child(root, "step_evaluation/step_id")),
        completion_status=c.choice(
            status_el, text_of(status_el), ("complete", "partial", "failed")
        ),
        reasoning=text_of(c.child(root, "decision/reasoning")),
        findings=tuple(
            (c.choice(el, el.get("priority", ""), ("high", "medium", "low")), text_of(el))
            for el in root.iterfind("step_evaluation/key_findings/finding")
        ),
        goal_status=None if goal_el is None else c.choice(goal_el, text_of(goal_el), GOAL_STATUS),
        next_focus=c.optional_text(root, "decision/next_focus") or None,
        retain=c.variables(root.find("variable_management/retain")),
        deprecate=c.variables(root.find("variable_management/deprecate")),
        stage_experience=c.optional_text(root, "stage_experience"),
        revision=_read_revision(c, root.find("plan_revision")),
    )


_READERS = {
    "stages": _read_stages,
    "steps": _read_steps,
    "behavior": _read_behavior,
    "actions": _read_actions,
    "alternatives": _read_alternatives,
    "reflection": _read_reflection,
    "stage_reflection": _read_stage_reflection,
}


# --- public entry points -----------------------------------------------------------------------


def parse_payload(
    text: str, kind: str | tuple[str, ...] | None = None, *, max_chars: int = MAX_REPLY_CHARS
) -> ParsedPayload:
    """Turn a model's reply into a validated payload of ``kind`` (inferred when None; one of
    several roots when a tuple: the first whose start tag the reply holds, else the first).

    Raises :class:`PayloadError` (with line/column where known) on any failure.
    """
    if isinstance(kind, tuple):
        kind = next((k for k in kind if re.search(rf"<{k}(?=[\s/>])", text)), kind[0])
    if kind is not None and kind not in KINDS:
        raise PayloadError(f"unknown payload kind {kind!r}; expected one of {', '.join(KINDS)}")
    if len(text) > max_chars:
        raise PayloadError(
            f"reply has {len(text)} characters, more than the limit of {max_chars}; "
            "answer with the XML payload only and keep it shorter",
            kind=kind,
        )
    refuse_declarations(text, kind)
    kind, xml = extract_root(text, kind)
    root, source, hardened = strict_parse(xml, kind)
    parts = _detach_parts(kind, root)
    checker = Checker(kind, source)
    schema = schema_for(kind)
    if not schema.validate(root):
        raise checker.schema_error(root, schema.error_log)
    value = _READERS[kind](checker, root)
    xml = etree.tostring(root, encoding="unicode")
    return ParsedPayload(kind, value, xml, hardened, tuple(_checked(p) for p in parts))


#: where a reply may carry a later transition's payload: its root's kind -> (the element that
#: holds it, relative to the root, and the part's kind), each place once (docs/agents.md,
#: "Compact rounds"). A reflection carries the stage reflection when it completes the step,
#: the next behavior (with its actions inside it) when it retries; a stage reflection that
#: goes on to a next step, that step's first behavior.
PART_PLACES = {
    "stages": (("stage", "steps"),),
    "behavior": ((".", "actions"),),
    "reflection": ((".", "stage_reflection"), (".", "behavior")),
    "stage_reflection": ((".", "behavior"),),
}


def _detach_parts(kind: str, root: etree._Element) -> list[Part]:
    """Take the parts out of ``root`` (the root is then checked as it always was)."""
    parts = []
    for holder_path, part_kind in PART_PLACES.get(kind, ()):
        for holder in [root] if holder_path == "." else root.iterchildren(holder_path):
            for el in holder.findall(part_kind):
                key = (holder.get("id") or "").strip() if holder is not root else ""
                el.tail = None
                parts.append(Part(part_kind, key, etree.tostring(el, encoding="unicode")))
                holder.remove(el)
    return parts


def _checked(part: Part) -> Part:
    try:
        parse_payload(part.text, part.kind)
    except PayloadError as exc:
        return Part(part.kind, part.key, part.text, str(exc))
    return part


def element_for_log(parsed: ParsedPayload) -> etree._Element:
    """A fresh copy of the validated root element, for embedding in a transition log."""
    return etree.fromstring(parsed.xml, xml_parser())
