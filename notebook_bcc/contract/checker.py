"""Reading a schema-valid tree: every complaint a ``PayloadError`` that points at the
offending element, in words a model can act on."""

from __future__ import annotations

import functools
import keyword
import re
import textwrap
from dataclasses import dataclass, field

from lxml import etree

from notebook_bcc.contract.reply import resource_dir
from notebook_bcc.contract.types import VariableSpec
from notebook_bcc.errors import PayloadError

# --- element-level checks ----------------------------------------------------------------------

SNAKE_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_RNG = "http://relaxng.org/ns/structure/1.0"
GOAL_STATUS = ("achieved", "partial", "not_achieved")


def describe(el: etree._Element) -> str:
    for attr in ("id", "name"):
        if el.get(attr) is not None:
            return f"<{el.tag} {attr}='{el.get(attr)}'>"
    return f"<{el.tag}>"


def block(text: str) -> str:
    """Dedent and drop surrounding blank lines; inner indentation is kept."""
    lines = textwrap.dedent(text).split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def text_of(el: etree._Element | None) -> str:
    return "" if el is None else block("".join(el.itertext()))


class Checker:
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
            raise self.error(el, f"element <{path.split('/')[-1]}> missing in {describe(el)}")
        return found

    def optional_text(self, el: etree._Element, path: str) -> str | None:
        found = el.find(path)
        return None if found is None else text_of(found)

    def choice(self, el: etree._Element, value: str, allowed: tuple[str, ...]) -> str:
        normal = value.strip().upper() if allowed[0].isupper() else value.strip().lower()
        if normal not in allowed:
            raise self.error(
                el, f"{describe(el)} must be one of {', '.join(allowed)}; found {value.strip()!r}"
            )
        return normal

    def boolean(self, el: etree._Element, attr: str, default: bool = False) -> bool:
        value = el.get(attr)
        if value is None:
            return default
        if value.strip().lower() not in ("true", "false"):
            raise self.error(
                el,
                f'attribute {attr} of {describe(el)} must be "true" or "false"; found {value!r}',
            )
        return value.strip().lower() == "true"

    def snake_id(self, el: etree._Element, attr: str = "id") -> str:
        value = (el.get(attr) or "").strip()
        if not SNAKE_ID.match(value):
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
                description=text_of(el),
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
        problem = self.explain(root, rules_for(self.kind))
        if problem is not None:
            return problem
        entries = list(log)
        for i, entry in enumerate(entries):  # "Expecting an element X, got nothing"
            missing = re.match(r"Expecting an element ([\w.:-]+),", entry.message)
            if missing:
                owners = [re.match(r"Element (\S+) failed", e.message) for e in entries[i:]]
                owner = next((m.group(1) for m in owners if m), root.tag)
                el = element_near(root, owner, entry.line)
                return self.error(el, f"element <{missing.group(1)}> missing in {describe(el)}")
        last = log.last_error
        named = re.match(r"(?:Element|Extra element) ([\w.:-]+)", last.message)
        el = element_near(root, named.group(1) if named else root.tag, last.line)
        return self.error(
            el, f"{describe(el)} does not match the <{self.kind}> schema: {last.message}"
        )

    def explain(self, el: etree._Element, rules: dict[str, Rule]) -> PayloadError | None:
        """First missing attribute/child, repeated child or stray text at or below ``el``."""
        rule = rules[str(el.tag)]
        for attr, required in rule.attrs.items():
            if required and el.get(attr) is None:
                return self.error(el, f"attribute {attr!r} missing on {describe(el)}")
        children = [c for c in el if isinstance(c.tag, str)]
        for name, (required, repeatable) in rule.children.items():
            count = sum(1 for c in children if c.tag == name)
            if required and count == 0:
                return self.error(el, f"element <{name}> missing in {describe(el)}")
            if count > 1 and not repeatable:
                return self.error(el, f"element <{name}> appears more than once in {describe(el)}")
        stray = [t.strip() for t in [el.text, *(c.tail for c in el)] if t and t.strip()]
        if stray and not rule.mixed:
            allowed = ", ".join(f"<{n}>" for n in rule.children) or "child elements"
            return self.error(
                el,
                f"{describe(el)} holds stray text {stray[0][:40]!r}; put values inside {allowed}",
            )
        for child in children:
            if child.tag in rule.children:
                problem = self.explain(child, rules)
                if problem is not None:
                    return problem
        return None


@dataclass
class Rule:
    attrs: dict[str, bool] = field(default_factory=dict)  # name -> required
    children: dict[str, tuple[bool, bool]] = field(default_factory=dict)  # -> (required, repeat)
    mixed: bool = False


@functools.cache
def rules_for(kind: str) -> dict[str, Rule]:
    """Per element name: its attributes and children as the RelaxNG schema declares them."""
    grammar = etree.parse(str(resource_dir() / "schemas" / f"{kind}.rng"))
    defines = {d.get("name"): d for d in grammar.iter(f"{{{_RNG}}}define")}
    rules: dict[str, Rule] = {}

    def walk(node: etree._Element, rule: Rule, required: bool, repeat: bool) -> None:
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
            rules[element.get("name")] = rule = Rule()
            walk(element, rule, True, False)
    return rules


def element_near(root: etree._Element, tag: str, line: int) -> etree._Element:
    """The last ``<tag>`` starting at or before ``line`` (libxml2 reports child lines)."""
    hits = [e for e in root.iter(tag) if (e.sourceline or 0) <= line]
    return hits[-1] if hits else root


# --- per-kind readers --------------------------------------------------------------------------
