"""From an agent's reply to a strictly parsed XML root (docs/architecture.md, "One transition").

In order: size cap -> refuse DOCTYPE/ENTITY -> extract the root element -> strict parse ->
only if that fails, a deterministic hardening and one more strict parse. Line and column
numbers refer to the reply exactly as the model wrote it (prose around the root is blanked
out, not removed, before parsing). The schemas live in ``prompts/schemas``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from types import SimpleNamespace

from lxml import etree

from notebook_bcc import fsm
from notebook_bcc.errors import PayloadError

#: the payload roots, in the order of the transition table (its one source)
KINDS: tuple[str, ...] = tuple(t.root for t in fsm.TRANSITIONS if t.root)
MAX_REPLY_CHARS = 200_000

# --- resources ---------------------------------------------------------------------------------


def resource_dir() -> Path:
    """The ``prompts`` directory: inside the package (wheel) or next to it (source checkout)."""
    package = Path(__file__).resolve().parents[1]  # notebook_bcc/
    if (package / "prompts" / "schemas").is_dir():
        return package / "prompts"
    return package.parent / "prompts"


@functools.cache
def schema_for(kind: str) -> etree.RelaxNG:
    return etree.RelaxNG(etree.parse(str(resource_dir() / "schemas" / f"{kind}.rng")))


def xml_parser() -> etree.XMLParser:
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
_HARDEN_TAGS = (
    *_VERBATIM_TAGS,
    "criterion",
    "goal",
    "task",
    "comment",
    "reasoning",
    "focus",
    "choose",
)
_ENTITY_REF = re.compile(r"&(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);")
_CDATA_OR_COMMENT = re.compile(r"(<!\[CDATA\[.*?\]\]>|<!--.*?-->)", re.DOTALL)
_ATTR = r"""\s+[^\s=<>/"']+(?:\s*=\s*(?:"[^"]*"|'[^']*'))?"""
_START_TAG_WITH_ATTRS = re.compile(rf"<([A-Za-z_][\w.:-]*)((?:{_ATTR})+)(\s*/?>)")
_ONE_ATTR = re.compile(rf"({_ATTR})")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """A model's reply as text that can be written: an unpaired UTF-16 surrogate (``\\udc80``,
    which a JSON reply may carry and no UTF-8 file can hold) becomes U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based (line, column) of ``text[index]``."""
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def refuse_declarations(text: str, kind: str | None) -> None:
    found = _DECLARATION.search(text)
    if found:
        line, column = _position(text, found.start())
        raise PayloadError(
            "DOCTYPE/ENTITY declarations are refused (security); the reply was not parsed. "
            "Answer with the bare XML element and no declarations",
            line=line,
            column=column,
            kind=kind,
            security=True,
        )


def extract_root(text: str, kind: str | None) -> tuple[str, str]:
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


def strict_parse(xml: str, kind: str) -> tuple[etree._Element, str, bool]:
    """Strict parse, hardening only when needed. Returns ``(root, parsed_text, hardened)``."""
    try:
        root = etree.fromstring(xml, xml_parser())
    except etree.XMLSyntaxError as first:
        fixed = _harden(xml)
        try:
            return etree.fromstring(fixed, xml_parser()), fixed, True
        except etree.XMLSyntaxError:
            raise _syntax_error(first, kind) from None
    if any(_has_child_elements(el) for el in root.iter(*_VERBATIM_TAGS)):
        # e.g. code writing HTML: the tags belong to the content; keep them verbatim
        fixed = _wrap_in_cdata(xml, _VERBATIM_TAGS)
        try:
            return etree.fromstring(fixed, xml_parser()), fixed, True
        except etree.XMLSyntaxError:
            pass
    return root, xml, False
