"""The questions a problem asks (docs/problems.md, "Questions and named values"): each becomes a key of
``final_answers``, with the values it names.

A question is a numbered or bulleted item, or a sentence outside lists, that asks for
something: it has a question mark, asks in so many words ("tell me which ..."), names a value
(``@name[…]``), or starts with a verb that asks ("Calculate ...", "Check if ...", "Question 2:
Identify ...") or has one after a colon ("… skewed: decide whether ..."). Modelling and
description verbs ("predict", "estimate", "describe", "explore") ask only in a list item: in
prose they state what the analysis is for, which ``final_metrics`` and the notebook's findings
answer.

An item's lines from its first labelled line on (``Constraints: …``, ``Answer format: …``,
also after a sentence on the same line) are details of the question: they are not part of its text, but the values they name are its own.
Front matter ``questions:`` (a list) replaces detection; ``answers:`` maps a question (its
number or its text) to the names of its values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Question", "follow_up_questions", "named_in", "questions_from", "questions_in"]

# fmt: off
#: verbs that ask for something wherever they stand (imperative)
_ASK_VERBS = frozenset({
    "calculate", "compute", "determine", "identify", "check", "test", "report", "find",
    "compare", "count", "list", "give", "state", "name", "tell", "show", "measure", "quantify",
    "rank", "obtain", "provide", "derive", "detect", "extract", "verify", "confirm", "perform",
    "apply", "conduct", "evaluate", "assess", "investigate", "examine", "analyse", "analyze",
    "return", "answer", "summarise", "summarize", "create", "generate", "build", "train", "fit",
    "decide"
})
#: verbs that ask only as a list item (in prose they say what the analysis is for)
_ITEM_VERBS = frozenset({
    "estimate", "predict", "forecast", "classify", "cluster", "model", "describe", "explore",
    "explain", "interpret", "plot", "visualise", "visualize", "preprocess", "normalise",
    "normalize", "transform", "encode", "impute", "clean", "remove", "drop", "merge", "join",
    "group", "sort", "filter", "select", "convert", "split"
})
# fmt: on
_VERB = re.compile(r"([A-Za-z]+)")
#: a request phrased as a statement that still asks: "tell me which ...", "find out whether"
_ASKS = re.compile(
    r"\b(tell me|find out|let me know|work out|i want to know|i'd like to know)\s+"
    r"(which|what|how|whether|who|where|when|if)\b",
    re.IGNORECASE,
)
#: an ask after a colon: "The charges are skewed: decide whether a log scale helps."
_AFTER_COLON = re.compile(r":\s+([A-Za-z]+)\s+(?:whether|if|which|how|what|who|where|when)\b")
#: what may stand before the verb: "Question 2:", "1.", "**", "Then,", "Please", "Also"
_LEAD = re.compile(
    r"^(?:\s*(?:question\s*\d+\s*[:.)]|\(?\d{1,2}[.)]|[*_`>#]+|then,?|also,?|please,?|"
    r"finally,?|next,?|additionally,?|and|now,?|first,?|second,?|lastly,?))+\s*",
    re.IGNORECASE,
)
#: "Using X, build ..." and "Use X to build ...": the verb after the clause asks
_USING = re.compile(r"^(?:use|using|utili[sz]e|based on)\b[^,.]*?(?:,\s*|\bto\s+)(.+)$", re.I)
_NUMBER = re.compile(r"^(?:question\s*\d+\s*[:.)]|\(?\d{1,2}[.)])\s+", re.IGNORECASE)
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\(?\d{1,2}[.)])\s+(.+)$")
_LABELLED = re.compile(r"^\s*[A-Z][A-Za-z ]{1,30}:\s")
_LABEL_AFTER_SENTENCE = re.compile(r"(?<=[.!?])\s+[A-Z][A-Za-z ]{1,30}:\s")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\"'@])")
_NAMED = re.compile(r"@([A-Za-z_]\w*)\[")


@dataclass(frozen=True)
class Question:
    """One question of the problem: its text (the ``final_answers`` key) and the names of the
    values it asks for (``final_answers[text]["values"]`` keys), in order."""

    text: str
    names: tuple[str, ...] = ()


def named_in(text: str) -> tuple[str, ...]:
    """The value names ``@name[…]`` of ``text``, in order, each once."""
    return tuple(dict.fromkeys(_NAMED.findall(text)))


def _starts_with_ask(sentence: str, in_list: bool) -> bool:
    text = _LEAD.sub("", sentence.strip(), count=1)
    using = _USING.match(text)
    if using:
        text = using.group(1)
    first = _VERB.match(text)
    if not first:
        return False
    verb = first.group(1).lower()
    return verb in _ASK_VERBS or (in_list and verb in _ITEM_VERBS)


def _asks(text: str, in_list: bool) -> bool:
    if "?" in text or _ASKS.search(text) or _NAMED.search(text):
        return True
    after_colon = _AFTER_COLON.search(text)
    if after_colon and after_colon.group(1).lower() in _ASK_VERBS:
        return True
    sentences = _SENTENCE_END.split(text) if in_list else [text]
    return any(_starts_with_ask(s, in_list) for s in sentences)


def questions_in(body: str) -> tuple[Question, ...]:
    """The questions a problem's text asks, in order (module docstring). Headings and fenced
    code are ignored; an item runs on over its indented or unmarked continuation lines."""
    found: dict[str, Question] = {}
    #: texts of questions from prose before the first numbered item that do not ask in so
    #: many words (no "?", no @name): a preface ("Answer each item from the data file.")
    preface: set[str] = set()
    numbered = False  # a numbered item asked: question N is the problem's item N
    item_numbered = False  # the current item is numbered ("1.", "(2)"), not bulleted
    item: list[str] = []  # the current list item's lines
    paragraph: list[str] = []
    in_fence = False
    blank = False  # the last line was blank: only an indented line continues an item
    indent = 0  # the current item's indent: a more indented item is a part of it
    #: "Perform the cleaning by:" and the list that follows; one question when no item asks
    intro: list[str] = []
    list_asked = False

    def add(text: str, names: tuple[str, ...], prose: bool = False) -> None:
        text = _NUMBER.sub("", " ".join(text.split()))  # "Question 2: Is …" is "Is …"
        if text and text not in found:
            found[text] = Question(text, names)
            if prose and not numbered and "?" not in text and not names:
                preface.add(text)

    def end_item() -> None:
        nonlocal list_asked, numbered
        if not item:
            return
        labelled = next((i for i, ln in enumerate(item) if i and _LABELLED.match(ln)), len(item))
        text = " ".join(ln.strip() for ln in item[:labelled])
        inline = _LABEL_AFTER_SENTENCE.search(text)  # "… rows. Answer format: @top[…]"
        text = text[: inline.start()] if inline else text
        whole = " ".join(ln.strip() for ln in item)
        if _asks(whole, in_list=True):
            add(text, named_in(whole))
            list_asked = True
            numbered = numbered or item_numbered
        elif intro:
            intro.append(whole)
        item.clear()

    def end_list() -> None:
        nonlocal list_asked
        if len(intro) > 1 and not list_asked:
            add(" ".join(intro), named_in(" ".join(intro)))
        intro.clear()
        list_asked = False

    def end_paragraph() -> None:
        text = " ".join(paragraph)
        paragraph.clear()
        for sentence in _SENTENCE_END.split(text):
            if not sentence.strip() or not _asks(sentence, False):
                continue
            if sentence.rstrip().endswith(":"):  # the list that follows may ask instead
                intro[:] = [sentence]
            else:
                add(sentence, named_in(sentence), prose=True)

    for line in body.splitlines():
        if line.strip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence or line.lstrip().startswith("#"):
            continue
        marker = _ITEM.match(line)
        if marker and item and len(marker.group(1)) > indent:
            item.append(line)  # a nested item is a part of the current one
        elif marker:
            indent = len(marker.group(1))
            end_item()
            end_paragraph()
            item.append(marker.group(2))
            item_numbered = line.lstrip()[:1] in "(0123456789"
        elif not line.strip():
            if not item:
                end_paragraph()
        elif item and (line[:1].isspace() or not blank):
            item.append(line)  # a continuation of the item
        else:
            end_item()
            end_list()
            paragraph.append(line.strip())
        blank = not line.strip()
    end_item()
    end_list()
    end_paragraph()
    if numbered:  # a preface before the numbered items is not question 1
        return tuple(q for text, q in found.items() if text not in preface)
    return tuple(found.values())


def _names(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return named_in(value) or tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, Sequence):
        return tuple(str(v).strip().lstrip("@").split("[")[0] for v in value if str(v).strip())
    return (str(value),)


def questions_from(meta: Mapping[str, Any], body: str) -> tuple[Question, ...]:
    """The questions of a problem: front matter ``questions:`` when given, else detected in
    ``body``; front matter ``answers:`` (question number or text -> names) adds names."""
    listed = meta.get("questions")
    if isinstance(listed, str):
        listed = [listed]
    if isinstance(listed, Sequence) and listed:
        questions = tuple(Question(" ".join(str(q).split()), named_in(str(q))) for q in listed)
    else:
        questions = questions_in(body)
    given = meta.get("answers")
    if not isinstance(given, Mapping):
        return questions
    out = []
    for i, q in enumerate(questions, 1):
        extra = next(
            (_names(v) for k, v in given.items() if str(k).strip() in (str(i), q.text)), ()
        )
        out.append(Question(q.text, tuple(dict.fromkeys(q.names + extra))))
    return tuple(out)


def follow_up_questions(text: str) -> tuple[Question, ...]:
    """The questions of a follow-up (``bcc ask``): those its text asks, else the whole text
    as one question (a follow-up is a question even when it reads "And by island.")."""
    found = questions_in(text)
    whole = " ".join(text.split())
    return found or ((Question(whole, named_in(text)),) if whole else ())
