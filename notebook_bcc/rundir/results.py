"""The results contract (README, "Results: answers and key results"): ``final_answers`` and ``final_metrics``, read from the
kernel at the end of a run, matched to the problem's questions, and compared with what the
verification re-execution computed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RESULT_NAMES", "Answer", "answers", "compare"]

RESULT_NAMES = ("final_answers", "final_metrics")


@dataclass(frozen=True)
class Answer:
    question: str
    value: Any  # None when not answered
    text: str
    answered: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "value": self.value,
            "text": self.text,
            "answered": self.answered,
        }


def _key(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", str(text).lower()).strip()


def _split(entry: Any) -> tuple[Any, str]:
    """(value, text) of one final_answers entry: {"value": v, "text": t}, or a bare value."""
    if isinstance(entry, Mapping) and "value" in entry:
        return entry["value"], str(entry.get("text") or "")
    return entry, ""


def answers(questions: Sequence[str], final_answers: Any) -> list[Answer]:
    """One Answer per question of the problem (in order), then any extra entries.

    A question matches the entry whose key is the question itself (letter case, spacing and
    punctuation aside), or its number ("1", "q1"). A question with no entry, or whose value is
    None, is not answered.
    """
    given = dict(final_answers) if isinstance(final_answers, Mapping) else {}
    by_key = {_key(k): k for k in given}
    out: list[Answer] = []
    used: set[str] = set()
    for i, question in enumerate(questions, 1):
        key = next(
            (by_key[k] for k in (_key(question), str(i), f"q{i}", f"q {i}") if k in by_key), None
        )
        if key is None:
            out.append(Answer(question, None, "not answered: final_answers has no entry", False))
            continue
        used.add(key)
        value, text = _split(given[key])
        out.append(Answer(question, value, text, value is not None))
    for key, entry in given.items():
        if key not in used:
            value, text = _split(entry)
            out.append(Answer(str(key), value, text, value is not None))
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def compare(run: Mapping[str, Any], verified: Mapping[str, Any]) -> list[str]:
    """What the re-execution did not reproduce, one line per result variable or entry."""
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
                if k not in b or not _same(a[k], b[k]):
                    problems.append(
                        f"{name}[{k!r}]: {a[k]!r} in the run, {b.get(k)!r} on re-execution"
                    )
        elif not _same(a, b):
            problems.append(f"{name}: {a!r} in the run, {b!r} on re-execution")
    return problems
