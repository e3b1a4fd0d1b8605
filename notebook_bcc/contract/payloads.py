"""The XML contract (docs/architecture.md, "One transition"; prompts/schemas): turn an agent's reply into a typed, validated payload.

Pipeline, in order: size cap -> refuse DOCTYPE/ENTITY -> extract the root element -> strict
parse -> (only if that fails: deterministic hardening and one more strict parse) -> RelaxNG
(``prompts/schemas/<kind>.rng``) -> semantic checks -> frozen dataclasses.

Every failure is a :class:`PayloadError` whose message a model can act on. Line and column
numbers refer to the reply exactly as the model wrote it (prose around the root is blanked out,
not removed, before parsing).
"""

from __future__ import annotations

import functools
import keyword
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from lxml import etree

from notebook_bcc.contract.types import (  # noqa: F401 - re-exported
    Action,
    ActionsPayload,
    ArtifactClaim,
    BehaviorPayload,
    ParsedPayload,
    Payload,
    ReflectionPayload,
    StageReflectionPayload,
    StagesPayload,
    StageSpec,
    StepsPayload,
    StepSpec,
    VariableSpec,
)
from notebook_bcc.errors import InputError, PayloadError

KINDS = ("stages", "steps", "behavior", "actions", "reflection", "stage_reflection")
MAX_REPLY_CHARS = 200_000

# --- resources ---------------------------------------------------------------------------------


def resource_dir() -> Path:
    """The ``prompts`` directory: inside the package (wheel) or next to it (source checkout)."""
    package = Path(__file__).resolve().parents[1]  # notebook_bcc/
    if (package / "prompts" / "schemas").is_dir():
        return package / "prompts"
    return package.parent / "prompts"


@functools.cache
def _schema(kind: str) -> etree.RelaxNG:
    return etree.RelaxNG(etree.parse(str(resource_dir() / "schemas" / f"{kind}.rng")))


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_blank_text=False,
        strip_cdata=False,  # keeps code readable in logs; .text is unaffected
    )


# --- text-level steps: extract, refuse declarations, harden --------------------------------------

_DECLARATION = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_ANY_START_TAG = re.compile(r"<([A-Za-z_][\w.:-]*)")
_KNOWN_ROOT = re.compile(rf"<({'|'.join(KINDS)})(?=[\s/>])")
_VERBATIM_TAGS = ("add-code2run", "add-text")  # markup inside these is content, not structure
_HARDEN_TAGS = (*_VERBATIM_TAGS, "criterion", "goal", "task", "comment", "reasoning", "focus")
_ENTITY_REF = re.compile(r"&(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);")
_CDATA_OR_COMMENT = re.compile(r"(<!\[CDATA\[.*?\]\]>|<!--.*?-->)", re.DOTALL)
_ATTR = r"""\s+[^\s=<>/"']+(?:\s*=\s*(?:"[^"]*"|'[^']*'))?"""
_START_TAG_WITH_ATTRS = re.compile(rf"<([A-Za-z_][\w.:-]*)((?:{_ATTR})+)(\s*/?>)")
_ONE_ATTR = re.compile(rf"({_ATTR})")


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based (line, column) of ``text[index]``."""
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def _refuse_declarations(text: str, kind: str | None) -> None:
    found = _DECLARATION.search(text)
    if found:
        line, column = _position(text, found.start())
        err = PayloadError(
            "DOCTYPE/ENTITY declarations are refused (security); the reply was not parsed. "
            "Answer with the bare XML element and no declarations",
            line=line,
            column=column,
            kind=kind,
        )
        err.security = True  # type: ignore[attr-defined]
        raise err


def _extract(text: str, kind: str | None) -> tuple[str, str]:
    """Return ``(kind, xml)``: the root element with everything before it blanked to whitespace
    (so positions still match the reply) and everything after its last closing tag dropped."""
    if kind is None:
        match = _KNOWN_ROOT.search(text)
        if match is None:
            expected = ", ".join(f"<{k}>" for k in KINDS)
            raise PayloadError(f"no payload root element found; expected one of {expected}")
        kind = match.group(1)
    else:
        match = re.search(rf"<{re.escape(kind)}(?=[\s/>])", text)
        if match is None:
            other = _ANY_START_TAG.search(text)
            if other is None:
                raise PayloadError(f"expected root <{kind}>, found no XML element", kind=kind)
            line, column = _position(text, other.start())
            raise PayloadError(
                f"expected root <{kind}>, found <{other.group(1)}>",
                line=line,
                column=column,
                kind=kind,
            )
    start = match.start()
    closings = list(re.finditer(rf"</{re.escape(kind)}\s*>", text[start:]))
    if closings:
        end = start + closings[-1].end()
    else:  # self-closing root, or unterminated (the parser will say where)
        tag_end = text.find(">", start)
        end = tag_end + 1 if tag_end > 0 and text[tag_end - 1] == "/" else len(text)
    line, column = _position(text, start)
    return kind, "\n" * (line - 1) + " " * (column - 1) + text[start:end]


def _needs_cdata(inner: str) -> bool:
    return "<" in inner or "]]>" in inner or "&" in _ENTITY_REF.sub("", inner)


def _wrap_in_cdata(xml: str, tags: tuple[str, ...]) -> str:
    """Wrap the inner text of ``tags`` in CDATA where it holds raw ``<``, ``&`` or ``]]>``."""
    names = "|".join(re.escape(t) for t in tags)
    inner = r"((?:(?!<\2[\s/>]).)*?)"  # stops at a second opening tag: linear time
    element = re.compile(rf"(<({names})(?:\s[^<>]*?)?(?<!/)>){inner}(</\2\s*>)", re.DOTALL)

    def wrap(m: re.Match[str]) -> str:
        inner = m.group(3)
        if "<![CDATA[" in inner or not _needs_cdata(inner):
            return m.group(0)
        safe = inner.replace("]]>", "]]]]><![CDATA[>")
        return f"{m.group(1)}<![CDATA[{safe}]]>{m.group(4)}"

    return element.sub(wrap, xml)


def _fill_valueless_attributes(xml: str) -> str:
    """``<reflection current_step_is_complete>`` -> ``... current_step_is_complete="true">``."""

    def fill_tag(m: re.Match[str]) -> str:
        attrs = _ONE_ATTR.sub(
            lambda a: a.group(1) if "=" in a.group(1) else f'{a.group(1)}="true"', m.group(2)
        )
        return f"<{m.group(1)}{attrs}{m.group(3)}"

    parts = _CDATA_OR_COMMENT.split(xml)
    return "".join(
        p if i % 2 else _START_TAG_WITH_ATTRS.sub(fill_tag, p) for i, p in enumerate(parts)
    )


def _harden(xml: str) -> str:
    return _fill_valueless_attributes(_wrap_in_cdata(xml, _HARDEN_TAGS))


def _syntax_error(exc: etree.XMLSyntaxError, kind: str) -> PayloadError:
    msg = re.sub(r", line \d+, column \d+$", "", exc.msg or str(exc))
    return PayloadError.from_lxml(SimpleNamespace(position=exc.position, msg=msg), kind=kind)  # type: ignore[arg-type]


def _has_child_elements(el: etree._Element) -> bool:
    return any(isinstance(child.tag, str) for child in el)


def _parse(xml: str, kind: str) -> tuple[etree._Element, str, bool]:
    """Strict parse, hardening only when needed. Returns ``(root, parsed_text, hardened)``."""
    try:
        root = etree.fromstring(xml, _parser())
    except etree.XMLSyntaxError as first:
        fixed = _harden(xml)
        try:
            return etree.fromstring(fixed, _parser()), fixed, True
        except etree.XMLSyntaxError:
            raise _syntax_error(first, kind) from None
    if any(_has_child_elements(el) for el in root.iter(*_VERBATIM_TAGS)):
        # e.g. code writing HTML: the tags belong to the content; keep them verbatim
        fixed = _wrap_in_cdata(xml, _VERBATIM_TAGS)
        try:
            return etree.fromstring(fixed, _parser()), fixed, True
        except etree.XMLSyntaxError:
            pass
    return root, xml, False


# --- element-level checks ----------------------------------------------------------------------

_SNAKE_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_RNG = "http://relaxng.org/ns/structure/1.0"
_GOAL_STATUS = ("achieved", "partial", "not_achieved")


def _describe(el: etree._Element) -> str:
    for attr in ("id", "name"):
        if el.get(attr) is not None:
            return f"<{el.tag} {attr}='{el.get(attr)}'>"
    return f"<{el.tag}>"


def _block(text: str) -> str:
    """Dedent and drop surrounding blank lines; inner indentation is kept."""
    lines = textwrap.dedent(text).split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _text(el: etree._Element | None) -> str:
    return "" if el is None else _block("".join(el.itertext()))


class _Checker:
    """Reads a validated tree; every complaint points at the offending element."""

    def __init__(self, kind: str, source: str) -> None:
        self.kind = kind
        self.lines = source.split("\n")

    def error(self, el: etree._Element, message: str) -> PayloadError:
        line = el.sourceline
        column = None
        if line is not None and 0 < line <= len(self.lines):
            found = re.search(rf"<{re.escape(str(el.tag))}(?=[\s/>])", self.lines[line - 1])
            column = found.start() + 1 if found else None
        return PayloadError(message, line=line, column=column, kind=self.kind)

    def child(self, el: etree._Element, path: str) -> etree._Element:
        found = el.find(path)
        if found is None:  # the schema makes this unreachable; kept as a clear message anyway
            raise self.error(el, f"element <{path.split('/')[-1]}> missing in {_describe(el)}")
        return found

    def optional_text(self, el: etree._Element, path: str) -> str | None:
        found = el.find(path)
        return None if found is None else _text(found)

    def choice(self, el: etree._Element, value: str, allowed: tuple[str, ...]) -> str:
        normal = value.strip().upper() if allowed[0].isupper() else value.strip().lower()
        if normal not in allowed:
            raise self.error(
                el, f"{_describe(el)} must be one of {', '.join(allowed)}; found {value.strip()!r}"
            )
        return normal

    def boolean(self, el: etree._Element, attr: str, default: bool = False) -> bool:
        value = el.get(attr)
        if value is None:
            return default
        if value.strip().lower() not in ("true", "false"):
            raise self.error(
                el,
                f'attribute {attr} of {_describe(el)} must be "true" or "false"; found {value!r}',
            )
        return value.strip().lower() == "true"

    def snake_id(self, el: etree._Element, attr: str = "id") -> str:
        value = (el.get(attr) or "").strip()
        if not _SNAKE_ID.match(value):
            raise self.error(
                el,
                f"{attr} {value!r} of <{el.tag}> is not snake_case "
                "(lowercase letters, digits and _, starting with a letter)",
            )
        return value

    def identifier(self, el: etree._Element) -> str:
        name = (el.get("name") or "").strip()
        if not name.isidentifier() or keyword.iskeyword(name):
            raise self.error(
                el,
                f"name {name!r} of <{el.tag}> is not a Python identifier "
                "(letters, digits and _, not starting with a digit)",
            )
        return name

    def variables(
        self, container: etree._Element | None, tag: str = "variable"
    ) -> tuple[VariableSpec, ...]:
        if container is None:
            return ()
        return tuple(
            VariableSpec(
                name=self.identifier(el),
                description=_text(el),
                next_use=el.get("next_use"),
                replacement=el.get("replacement"),
                safe=self.boolean(el, "safe"),
            )
            for el in container.iterchildren(tag)
        )

    def unique_ids(self, elements: list[etree._Element]) -> None:
        seen: set[str] = set()
        for el in elements:
            ident = self.snake_id(el)
            if ident in seen:
                raise self.error(el, f"duplicate {el.tag} id {ident!r}; ids must be unique")
            seen.add(ident)

    def schema_error(self, root: etree._Element, log: etree._ListErrorLog) -> PayloadError:
        """One actionable message for a RelaxNG failure (libxml2's own log is terse)."""
        problem = self.explain(root, _rules(self.kind))
        if problem is not None:
            return problem
        entries = list(log)
        for i, entry in enumerate(entries):  # "Expecting an element X, got nothing"
            missing = re.match(r"Expecting an element ([\w.:-]+),", entry.message)
            if missing:
                owners = [re.match(r"Element (\S+) failed", e.message) for e in entries[i:]]
                owner = next((m.group(1) for m in owners if m), root.tag)
                el = _element_near(root, owner, entry.line)
                return self.error(el, f"element <{missing.group(1)}> missing in {_describe(el)}")
        last = log.last_error
        named = re.match(r"(?:Element|Extra element) ([\w.:-]+)", last.message)
        el = _element_near(root, named.group(1) if named else root.tag, last.line)
        return self.error(
            el, f"{_describe(el)} does not match the <{self.kind}> schema: {last.message}"
        )

    def explain(self, el: etree._Element, rules: dict[str, _Rule]) -> PayloadError | None:
        """First missing attribute/child, repeated child or stray text at or below ``el``."""
        rule = rules[str(el.tag)]
        for attr, required in rule.attrs.items():
            if required and el.get(attr) is None:
                return self.error(el, f"attribute {attr!r} missing on {_describe(el)}")
        children = [c for c in el if isinstance(c.tag, str)]
        for name, (required, repeatable) in rule.children.items():
            count = sum(1 for c in children if c.tag == name)
            if required and count == 0:
                return self.error(el, f"element <{name}> missing in {_describe(el)}")
            if count > 1 and not repeatable:
                return self.error(el, f"element <{name}> appears more than once in {_describe(el)}")
        stray = [t.strip() for t in [el.text, *(c.tail for c in el)] if t and t.strip()]
        if stray and not rule.mixed:
            allowed = ", ".join(f"<{n}>" for n in rule.children) or "child elements"
            return self.error(
                el,
                f"{_describe(el)} holds stray text {stray[0][:40]!r}; put values inside {allowed}",
            )
        for child in children:
            if child.tag in rule.children:
                problem = self.explain(child, rules)
                if problem is not None:
                    return problem
        return None


@dataclass
class _Rule:
    attrs: dict[str, bool] = field(default_factory=dict)  # name -> required
    children: dict[str, tuple[bool, bool]] = field(default_factory=dict)  # -> (required, repeat)
    mixed: bool = False


@functools.cache
def _rules(kind: str) -> dict[str, _Rule]:
    """Per element name: its attributes and children as the RelaxNG schema declares them."""
    grammar = etree.parse(str(resource_dir() / "schemas" / f"{kind}.rng"))
    defines = {d.get("name"): d for d in grammar.iter(f"{{{_RNG}}}define")}
    rules: dict[str, _Rule] = {}

    def walk(node: etree._Element, rule: _Rule, required: bool, repeat: bool) -> None:
        for child in node.iterchildren(f"{{{_RNG}}}*"):
            tag, name = etree.QName(child).localname, child.get("name")
            if tag == "element" and name:
                rule.children.setdefault(name, (required, repeat))
            elif tag == "attribute" and name:
                rule.attrs.setdefault(name, required)
            elif tag == "ref":
                walk(defines[name], rule, required, repeat)
            elif tag in ("optional", "choice", "zeroOrMore", "oneOrMore"):
                walk(child, rule, required and tag == "oneOrMore", repeat or "More" in tag)
            elif tag in ("interleave", "group", "mixed"):
                rule.mixed = rule.mixed or tag == "mixed"
                walk(child, rule, required, repeat)

    for element in grammar.iter(f"{{{_RNG}}}element"):
        if element.get("name") and element.get("name") not in rules:
            rules[element.get("name")] = rule = _Rule()
            walk(element, rule, True, False)
    return rules


def _element_near(root: etree._Element, tag: str, line: int) -> etree._Element:
    """The last ``<tag>`` starting at or before ``line`` (libxml2 reports child lines)."""
    hits = [e for e in root.iter(tag) if (e.sourceline or 0) <= line]
    return hits[-1] if hits else root


# --- per-kind readers --------------------------------------------------------------------------


def _planned(root: etree._Element, tag: str) -> list[etree._Element]:
    """``<stage>``/``<step>`` children in document order, also inside ``<remaining>``."""
    found: list[etree._Element] = []
    for el in root.iterchildren(tag, "remaining"):
        found.extend([el] if el.tag == tag else el.iterchildren(tag))
    return found


def _plan_fields(c: _Checker, el: etree._Element) -> dict[str, object]:
    return {
        "id": c.snake_id(el),
        "title": (el.get("title") or "").strip(),
        "goal": _text(c.child(el, "goal")),
        "verified_artifacts": c.variables(c.child(el, "verified_artifacts")),
        "required_variables": c.variables(el.find("required_variables")),
    }


def _read_plan(c: _Checker, root: etree._Element, tag: str) -> list[etree._Element]:
    elements = _planned(root, tag)
    if not elements:
        raise c.error(root, f"<{root.tag}> must contain at least one <{tag}>")
    c.unique_ids(elements)
    return elements


def _read_stages(c: _Checker, root: etree._Element) -> StagesPayload:
    stages = tuple(StageSpec(**_plan_fields(c, el)) for el in _read_plan(c, root, "stage"))  # type: ignore[arg-type]
    return StagesPayload(stages, c.optional_text(root, "title"), c.optional_text(root, "focus"))


def _read_steps(c: _Checker, root: etree._Element) -> StepsPayload:
    steps = []
    for el in _read_plan(c, root, "step"):
        pcs_el = el.find("pcs_considerations")
        pcs = (
            ()
            if pcs_el is None
            else tuple((str(p.tag), _text(p)) for p in pcs_el if isinstance(p.tag, str))
        )
        steps.append(StepSpec(**_plan_fields(c, el), pcs=pcs))  # type: ignore[arg-type]
    return StepsPayload(tuple(steps), c.optional_text(root, "focus"))


def _read_behavior(c: _Checker, root: etree._Element) -> BehaviorPayload:
    acceptance = root.find("acceptance")
    criteria = () if acceptance is None else acceptance.iterchildren("criterion")
    return BehaviorPayload(
        id=c.snake_id(root),
        step_id=(root.get("step_id") or "").strip(),
        agent=_text(c.child(root, "agent")),
        task=_text(c.child(root, "task")),
        inputs=c.variables(root.find("inputs")),
        outputs=c.variables(c.child(root, "outputs"), "artifact"),
        acceptance=tuple(t for t in (_text(el) for el in criteria) if t),
    )


_ACTION_KINDS = {"update-project-title": "title", "add-text": "text", "add-code2run": "code"}


def _read_actions(c: _Checker, root: etree._Element) -> ActionsPayload:
    actions = []
    for el in root.iterchildren(*_ACTION_KINDS):
        content = _text(el)
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
    c: _Checker, root: etree._Element, attr: str, flag: bool, state: str, done: str
) -> None:
    if flag != (state == done):
        raise c.error(
            root,
            f'{attr}="{str(flag).lower()}" disagrees with <next_state>{state}'
            f"</next_state>: it must be true exactly when next_state is {done}",
        )


def _read_reflection(c: _Checker, root: etree._Element) -> ReflectionPayload:
    complete = c.boolean(root, "current_step_is_complete")
    state_el = c.child(root, "decision/next_state")
    state = c.choice(state_el, _text(state_el), ("STEP_COMPLETED", "STEP_RUNNING"))
    _agreement(c, root, "current_step_is_complete", complete, state, "STEP_COMPLETED")
    status_el = c.child(root, "evaluation/goal_achievement/status")
    artifacts = tuple(
        ArtifactClaim(
            c.identifier(el),
            c.choice(el, el.get("status", ""), ("complete", "partial", "missing")),
            _text(el),
        )
        for el in root.iterfind("evaluation/artifacts_produced/artifact")
    )
    criteria = tuple(
        (c.choice(el, el.get("status", ""), ("passed", "failed")), _text(el))
        for el in root.iterfind("evaluation/acceptance_validation/criterion")
    )
    return ReflectionPayload(
        step_complete=complete,
        next_state=state,
        goal_status=c.choice(status_el, _text(status_el), _GOAL_STATUS),
        goal_reasoning=_text(c.child(root, "evaluation/goal_achievement/reasoning")),
        decision_reasoning=_text(c.child(root, "decision/reasoning")),
        artifacts=artifacts,
        criteria=criteria,
        variables_produced=c.variables(root.find("context_for_next/variables_produced")),
        recommendations=c.optional_text(root, "context_for_next/recommendations_for_next"),
        comment=c.optional_text(root, "comment"),
    )


def _read_stage_reflection(c: _Checker, root: etree._Element) -> StageReflectionPayload:
    complete = c.boolean(root, "stage_is_complete")
    state_el = c.child(root, "decision/next_state")
    state = c.choice(state_el, _text(state_el), ("STEP_RUNNING", "STAGE_COMPLETED"))
    _agreement(c, root, "stage_is_complete", complete, state, "STAGE_COMPLETED")
    status_el = c.child(root, "step_evaluation/completion_status")
    goal_el = root.find("stage_assessment/goal_status")
    return StageReflectionPayload(
        stage_complete=complete,
        next_state=state,
        step_id=_text(c.child(root, "step_evaluation/step_id")),
        completion_status=c.choice(status_el, _text(status_el), ("complete", "partial", "failed")),
        reasoning=_text(c.child(root, "decision/reasoning")),
        findings=tuple(
            (c.choice(el, el.get("priority", ""), ("high", "medium", "low")), _text(el))
            for el in root.iterfind("step_evaluation/key_findings/finding")
        ),
        goal_status=None if goal_el is None else c.choice(goal_el, _text(goal_el), _GOAL_STATUS),
        next_focus=c.optional_text(root, "decision/next_focus") or None,
        retain=c.variables(root.find("variable_management/retain")),
        deprecate=c.variables(root.find("variable_management/deprecate")),
        stage_experience=c.optional_text(root, "stage_experience"),
    )


_READERS = {
    "stages": _read_stages,
    "steps": _read_steps,
    "behavior": _read_behavior,
    "actions": _read_actions,
    "reflection": _read_reflection,
    "stage_reflection": _read_stage_reflection,
}


# --- public entry points -----------------------------------------------------------------------


def parse_payload(
    text: str, kind: str | None = None, *, max_chars: int = MAX_REPLY_CHARS
) -> ParsedPayload:
    """Turn a model's reply into a validated payload of ``kind`` (inferred when None).

    Raises :class:`PayloadError` (with line/column where known) on any failure.
    """
    if kind is not None and kind not in KINDS:
        raise PayloadError(f"unknown payload kind {kind!r}; expected one of {', '.join(KINDS)}")
    if len(text) > max_chars:
        raise PayloadError(
            f"reply has {len(text)} characters, more than the limit of {max_chars}; "
            "answer with the XML payload only and keep it shorter",
            kind=kind,
        )
    _refuse_declarations(text, kind)
    kind, xml = _extract(text, kind)
    root, source, hardened = _parse(xml, kind)
    checker = _Checker(kind, source)
    schema = _schema(kind)
    if not schema.validate(root):
        raise checker.schema_error(root, schema.error_log)
    value = _READERS[kind](checker, root)
    return ParsedPayload(kind, value, etree.tostring(root, encoding="unicode"), hardened)


def element_for_log(parsed: ParsedPayload) -> etree._Element:
    """A fresh copy of the validated root element, for embedding in a transition log."""
    return etree.fromstring(parsed.xml, _parser())


def validate_file(path: Path, kind: str | None) -> ParsedPayload:
    """Parse a payload stored in a UTF-8 file (``bcc validate``-style use)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc
    return parse_payload(text, kind)
