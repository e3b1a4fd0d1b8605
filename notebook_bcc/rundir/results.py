"""The results contract (docs/results.md, "Results: answers and key results"): ``final_answers`` and
``final_metrics``, read from the kernel at the end of a run, matched to the problem's questions,
and compared, value by value, with what the verification re-execution computed.

An answer is ``{"value": headline, "text": sentence, "values": {name: value, ...}}``; a bare
value is taken as the headline. ``values`` holds every name the question names (``@name[…]``),
and may hold names the model chose for a question that asks several things.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "FETCH_WHOLE",
    "FINDINGS_NAMES",
    "RESULT_LIMITS",
    "READING_DIFFERS",
    "RESULT_NAMES",
    "Reading",
    "Answer",
    "Asked",
    "answers",
    "compare",
    "named_text",
    "named_value_text",
    "python_text",
    "quoted_text",
    "reading_lines",
    "readings_of",
    "shortened_parts",
    "value_text",
]

RESULT_NAMES = ("final_answers", "final_metrics")
#: the run's findings in markdown, the first that is a non-empty string: the closing summary
#: a model's last stage writes, or the offline analyst's analysis summary
FINDINGS_NAMES = ("final_summary", "analysis_summary")
#: how much of each part of a result is reported (characters of JSON): a result is read part
#: by part, so one answer too large to report in full is shortened and the others stand
#: (``in_kernel_results.py``); the findings are one text, reported whole up to their limit
RESULT_LIMITS = {"final_answers": 8_000, "final_metrics": 8_000}
FETCH_WHOLE = {**RESULT_LIMITS, "final_summary": 200_000, "analysis_summary": 200_000}


class Asked(Protocol):
    """A question of the problem (``inputs.questions.Question``): its text and value names."""

    @property
    def text(self) -> str: ...

    @property
    def names(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Reading:
    """Another reasonable interpretation a question leaves open (sample or population
    standard deviation, the file's row order or date order, how a tie rounds), with the values
    it gives: ``final_answers[q]["readings"]`` items, ``{"reading": ..., "values": {...}}``."""

    reading: str
    values: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"reading": self.reading, "values": dict(self.values)}


def readings_of(entry: Any) -> tuple[Reading, ...]:
    given = entry.get("readings") if isinstance(entry, Mapping) else None
    if not isinstance(given, list | tuple):
        return ()
    found = []
    for r in given:
        if isinstance(r, Mapping) and str(r.get("reading") or "").strip():
            values = r.get("values")
            pairs = (
                tuple((str(k), v) for k, v in values.items()) if isinstance(values, Mapping) else ()
            )
            found.append(Reading(" ".join(str(r["reading"]).split()), pairs))
    return tuple(found)


@dataclass(frozen=True)
class Answer:
    question: str
    value: Any  # None when not answered
    text: str
    answered: bool
    values: tuple[tuple[str, Any], ...] = ()  # (name, value): the named ones first, in order
    missing: tuple[str, ...] = ()  # names the question names that the answer lacks
    added: bool = False  # a key of final_answers that is none of the problem's questions
    #: the parts reported by type, size and head only (too large, or not JSON): "value: str
    #: of 2,000,000 characters (over 8,000 characters of JSON)"
    shortened: tuple[str, ...] = ()
    #: other readings of the question, each with its own values (the headline is one reading)
    readings: tuple[Reading, ...] = ()

    @property
    def readings_differ(self) -> bool:
        """A reading gives another value for a name the headline answers: the answer depends
        on how the question is read (report.html flags it)."""
        mine = self.named
        return any(n in mine and not _same(v, mine[n]) for r in self.readings for n, v in r.values)

    @property
    def named(self) -> dict[str, Any]:
        """The named values as a dict (name -> value as the kernel held it)."""
        return dict(self.values)

    def to_json(self) -> dict[str, Any]:
        out = {
            "question": self.question,
            "value": self.value,
            "text": self.text,
            "answered": self.answered,
            "values": dict(self.values),
        }
        if self.missing:
            out["missing_values"] = list(self.missing)
        if self.added:
            out["added"] = True
        if self.shortened:
            out["shortened"] = list(self.shortened)
        if self.readings:
            out["readings"] = [r.to_json() for r in self.readings]
            out["readings_differ"] = self.readings_differ
        return out


SHORTENED = "__shortened__"  # the marker of a part reported by type, size and head


def is_shortened(value: Any) -> bool:
    """A part of a result that was too large to report in full, or not JSON (a marker)."""
    return isinstance(value, Mapping) and value.get(SHORTENED) is True


def shortened_what(marker: Mapping[str, Any]) -> str:
    """ "str of 2,000,000 characters (over 8,000 characters of JSON)"."""
    size, kind = marker.get("size"), str(marker.get("type"))
    unit = "characters" if kind == "str" else "items"
    sized = f" of {size:,} {unit}" if isinstance(size, int) else ""
    return f"{kind}{sized} ({marker.get('why')})"


def shortened_parts(value: Any, where: tuple[str, ...] = ()) -> list[str]:
    """ "values.csv: str of 2,000,000 characters (…)" for each marker in ``value``."""
    if is_shortened(value):
        return [f"{'.'.join(where) or 'value'}: {shortened_what(value)}"]
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in shortened_parts(v, (*where, str(k)))]
    return []


def python_text(value: Any) -> str:
    """A kernel value as Python writes it: ``False``, ``None``, ``2081990.36`` (a float in its
    shortest form that reads back the same), ``[1, 'a']``, ``{'k': 0.5}``. Values come from the
    kernel as JSON, so this is what the kernel held."""
    return repr(value)


def value_text(value: Any) -> str:
    """A value as summary.md, ``bcc status`` and report.html show it: a string as it is,
    anything else as Python writes it (``False``, not JSON's ``false``)."""
    if is_shortened(value):
        return f"<{shortened_what(value)}, shortened; it begins {value.get('head')!r}>"
    return value if isinstance(value, str) else python_text(value)


#: the end of a reading's line when that reading gives other values than the headline's
READING_DIFFERS = " (gives other values: the answer depends on the reading)"


def reading_lines(answer: Mapping[str, Any]) -> list[str]:
    """An answer's other readings as summary.md and ``bcc status`` list them (from its
    summary.json form): ``other reading, sample sd (ddof=1): @sd[1.3]``, each flagged
    (:data:`READING_DIFFERS`) when it gives another value for a name the headline answers."""
    mine = answer.get("values") or {}
    lines = []
    for r in answer.get("readings") or []:
        theirs = r.get("values") or {}
        differs = any(n in mine and not _same(v, mine[n]) for n, v in theirs.items())
        lines.append(
            f"other reading, {r['reading']}: {named_text(theirs)}" + READING_DIFFERS * differs
        )
    return lines


def quoted_text(value: Any) -> str:
    """A headline where it stands among other text (``bcc status``, report.html): a string in
    quotes, anything else as ``value_text`` shows it."""
    return json.dumps(value) if isinstance(value, str) else value_text(value)


def named_text(values: Mapping[str, Any], missing: Sequence[str] = ()) -> str:
    """Named values in the benchmark's form: ``@mean_age[39.21] @is_normal[False]`` (a name
    in ``missing``, which the answer does not give, shows as ``@name[]``; a value that is None
    as ``@name[None]``; a list as its items, ``@countries[Kuwait, Oman]``)."""
    return " ".join(
        f"@{n}[{'' if n in missing else named_value_text(v)}]" for n, v in values.items()
    )


def named_value_text(value: Any) -> str:
    """One named value as it stands between the brackets of ``@name[…]``: a list as its items,
    a string as it is, anything else as Python writes it."""
    if isinstance(value, list | tuple):
        return ", ".join(named_value_text(v) for v in value)
    return value_text(value)


def _key(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", str(text).lower()).strip()


def _entry(question: str, entry: Any, names: Sequence[str] = (), added: bool = False) -> Answer:
    """The Answer of one final_answers entry: {"value", "text", "values"}, or a bare value.
    The question's names come first in ``values``, in its order; a missing one is listed."""
    if isinstance(entry, Mapping) and ("value" in entry or "values" in entry):
        value, text = entry.get("value"), str(entry.get("text") or "")
        given = entry.get("values")
        given = dict(given) if isinstance(given, Mapping) else {}
    else:
        value, text, given = entry, "", {}
    named = {str(k): v for k, v in given.items()}
    values = [(n, named.pop(n)) for n in names if n in named] + list(named.items())
    if value is None and len(values) == 1:
        value = values[0][1]  # one named value is the headline
    missing = tuple(n for n in names if n not in dict(values))
    answered = value is not None or any(v is not None for _, v in values)
    shortened = tuple(shortened_parts(entry))
    readings = readings_of(entry)
    return Answer(
        question, value, text, answered, tuple(values), missing, added, shortened, readings
    )


def _match(questions: Sequence[Asked], keys: Sequence[str]) -> dict[int, str]:
    """Question index -> its key of final_answers: the question itself (letter case, spacing
    and punctuation aside), its number ("1", "q1", "question 1"), or the start of its text
    (at least 20 characters, and no other question starts so)."""
    by_key = {_key(k): k for k in keys}
    found: dict[int, str] = {}
    for i, q in enumerate(questions):
        n = i + 1
        for k in (_key(q.text), str(n), f"q{n}", f"q {n}", f"question {n}"):
            if k in by_key and by_key[k] not in found.values():
                found[i] = by_key[k]
                break
    for k, key in by_key.items():
        if key in found.values() or len(k) < 20:
            continue
        starts = [i for i, q in enumerate(questions) if _key(q.text).startswith(k)]
        if len(starts) == 1 and starts[0] not in found:
            found[starts[0]] = key
    return found


def answers(questions: Sequence[Asked], final_answers: Any) -> list[Answer]:
    """One Answer per question of the problem (in order), then any entry a model added
    (marked ``added``). A question with no entry, or with no value at all, is not answered."""
    if is_shortened(final_answers):  # not one entry could be read
        why = f"not answered: final_answers could not be read ({shortened_what(final_answers)})"
        return [
            Answer(q.text, None, why, False, tuple((n, None) for n in q.names), q.names)
            for q in questions
        ]
    given = dict(final_answers) if isinstance(final_answers, Mapping) else {}
    keys = _match(questions, [str(k) for k in given])
    by_text = {str(k): v for k, v in given.items()}
    out: list[Answer] = []
    for i, q in enumerate(questions):
        if i not in keys:
            out.append(
                Answer(q.text, None, "not answered: final_answers has no entry", False,
                       tuple((n, None) for n in q.names), q.names)
            )  # fmt: skip
            continue
        out.append(_entry(q.text, by_text[keys[i]], q.names))
    used = set(keys.values())
    out += [_entry(k, v, added=True) for k, v in by_text.items() if k not in used]
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-9 relative (NaN equal to NaN), containers item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _reading_differences(where: str, ours: Any, theirs: Any) -> list[str]:
    """A reading's values are checked like the headline's (``…['readings'][0]['values']…``)."""
    ours = ours if isinstance(ours, list) else []
    theirs = theirs if isinstance(theirs, list) else []
    lines = []
    for i, reading in enumerate(ours):
        mine = reading.get("values") if isinstance(reading, Mapping) else None
        other = theirs[i] if i < len(theirs) and isinstance(theirs[i], Mapping) else {}
        got = other.get("values") if isinstance(other.get("values"), Mapping) else {}
        for name, value in (mine or {}).items():
            if name not in got or not _same(value, got[name]):
                lines.append(
                    f"{where}['readings'][{i}]['values'][{name!r}]: {value!r} in the run, "
                    f"{got.get(name)!r} on re-execution"
                )
    return lines


def _differences(where: str, a: Any, b: Any) -> list[str]:
    """One line per part of ``a`` that ``b`` does not reproduce: an answer's value, text and
    each named value apart (``final_answers['q']['values']['p_value']``)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping) and (a.keys() & {"value", "values"}):
        lines = []
        for part in ("value", "text"):
            if part in a and not _same(a[part], b.get(part)):
                lines.append(
                    f"{where}[{part!r}]: {a[part]!r} in the run, {b.get(part)!r} on re-execution"
                )
        ours, theirs = a.get("values"), b.get("values")
        if isinstance(ours, Mapping):
            theirs = theirs if isinstance(theirs, Mapping) else {}
            for name, value in ours.items():
                if name not in theirs or not _same(value, theirs[name]):
                    lines.append(
                        f"{where}['values'][{name!r}]: {value!r} in the run, "
                        f"{theirs.get(name)!r} on re-execution"
                    )
        lines += _reading_differences(where, a.get("readings"), b.get("readings"))
        return lines
    if not _same(a, b):
        return [f"{where}: {a!r} in the run, {b!r} on re-execution"]
    return []


def compare(run: Mapping[str, Any], verified: Mapping[str, Any]) -> list[str]:
    """What the re-execution did not reproduce, one line per result variable, entry or named
    value (by question and name)."""
    problems = []
    for name in RESULT_NAMES:
        if name not in run:
            continue
        if name not in verified:
            problems.append(f"{name} is not defined after re-execution")
            continue
        a, b = run[name], verified[name]
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for k in a:
                if k not in b:
                    problems.append(f"{name}[{k!r}]: {a[k]!r} in the run, missing on re-execution")
                else:
                    problems += _differences(f"{name}[{k!r}]", a[k], b[k])
        else:
            problems += _differences(name, a, b)
    return problems
