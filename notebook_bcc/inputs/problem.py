"""Reading problem.md: optional YAML front matter (title, target, task, metric, drop, id, keep,
sheet, fork, questions, answers), else heuristics on the text (the questions: :mod:`questions`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from notebook_bcc.inputs.modules import named_modules
from notebook_bcc.inputs.questions import Question, questions_from

__all__ = ["ProblemSpec", "Question", "read_problem", "resolve_target"]

#: wording that asks for a model of a target (docs/problems.md, "Writing a problem", lists them)
#: ("Determine the mean …" and "explain the findings" ask for no model; "what determines y",
#: "estimate y from …" and "explain y from …" do)
_WHAT = r"(?:what|which\s+\w+(?:\s+\w+)?)\s+"
_SUPERVISED = re.compile(
    r"\b(predict\w*|classif\w*|forecast\w*|regress\w*|"
    rf"{_WHAT}(?:explains?|determines?)|(?:explain|estimat)\w*\b[^.?!]*?\bfrom|"
    r"what drives|influenc\w*|affects?|which factors|depends? on|target)\b",
    re.IGNORECASE,
)
#: wording that asks to put the data files together, and the key it names ("on `id`")
_JOIN = re.compile(r"\b(join\w*|merg\w*|combin\w*|link\w*)\b", re.IGNORECASE)
_JOIN_ON = re.compile(r"\b(?:on|by|using|via)\s+`([^`]+)`", re.IGNORECASE)
_FILE_NAME = re.compile(r"\.(csv|tsv|txt|xlsx?|parquet|feather|json|jsonl|gz|zip)$", re.I)
_CLASSIFY = re.compile(
    r"\b(classif\w*|which class|categor\w*|species|type of|who survived)\b", re.I
)


@dataclass(frozen=True)
class ProblemSpec:
    title: str
    text: str
    target: str | None  # as written in the problem (resolved against columns later)
    task: str  # classification | regression | eda | auto
    metric: str | None = None
    drop: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    reason: str = ""
    keep: tuple[str, ...] = ()  # columns used as features even if a leakage guard objects
    questions: tuple[Question, ...] = ()  # what the text asks, in order (final_answers keys)
    join: bool = False  # the text asks to join (merge, combine, link) the data files
    join_on: str | None = None  # the key it names: "on `customer_id`"
    modules: tuple[str, ...] = ()  # the Python modules it names ("pmdarima's auto_arima")
    sheet: str | None = None  # the Excel sheet to read (front matter sheet:), else the first
    fork: bool | None = None  # front matter fork: yes/no (None: the offline analyst decides)

    @property
    def supervised(self) -> bool:
        return self.task in ("classification", "regression", "auto")


def _front_matter(text: str) -> tuple[dict, str]:
    match = re.match(r"\A\ufeff?---\s*\n(.*?)\n---\s*\n?", text, re.DOTALL)
    if not match:
        return {}, text
    try:
        data = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError:
        return {}, text
    return (data if isinstance(data, dict) else {}), text[match.end() :]


def _as_tuple(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return (str(value),)


@functools.lru_cache(maxsize=8)  # the agents read the same problem at every transition
def read_problem(text: str) -> ProblemSpec:
    meta, body = _front_matter(text)
    body = body.strip()
    heading = re.search(r"^#+\s*(.+)$", body, re.MULTILINE)
    first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "Analysis")
    title = str(meta.get("title") or (heading.group(1) if heading else first)).strip()
    title = title.lstrip("# ").strip()[:80] or "Analysis"
    target = meta.get("target")
    task = str(meta.get("task") or "").lower() or None
    if task and task not in ("classification", "regression", "eda"):
        task = None
    if target:
        reason = f"front matter names target `{target}`"
        task = task or "auto"
    elif task == "eda":
        reason = "front matter says task: eda"
    join_on = _JOIN_ON.search(body) if _JOIN.search(body) else None
    if not target and task != "eda":
        quoted = [
            q
            for q in re.findall(r"`([^`]+)`", body)
            if not (join_on and q == join_on[1]) and not _FILE_NAME.search(q)
        ]
        target = quoted[0] if quoted and _SUPERVISED.search(body) else None
        if _SUPERVISED.search(body):
            task = task or ("classification" if _CLASSIFY.search(body) else "auto")
            reason = "the problem asks to " + _SUPERVISED.search(body).group(0).lower()
        else:
            task = "eda"
            reason = "the problem asks for a description, not a prediction"
    return ProblemSpec(
        title=title,
        text=body,
        target=str(target) if target else None,
        task=task or "eda",
        metric=meta.get("metric"),
        drop=_as_tuple(meta.get("drop")),
        ids=_as_tuple(meta.get("id")),
        keep=_as_tuple(meta.get("keep")),
        reason=reason,
        questions=questions_from(meta, body),
        join=bool(_JOIN.search(body)),
        join_on=join_on[1] if join_on else None,
        sheet=None if meta.get("sheet") is None else str(meta["sheet"]),
        modules=named_modules(body),
        fork=None if meta.get("fork") is None else bool(meta["fork"]),
    )


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def resolve_target(spec: ProblemSpec, columns: Sequence[str]) -> str | None:
    """The column the problem asks to predict: the named target, else a column the text names."""
    if not columns:
        return None
    by_norm = {_norm(c): c for c in columns}
    if spec.target:
        if spec.target in columns:
            return spec.target
        return by_norm.get(_norm(spec.target))
    if not spec.supervised:
        return None
    # a column mentioned in the text: prefer the one closest after a "predict"-like word
    text = spec.text
    hits: list[tuple[int, int, str]] = []
    verb = _SUPERVISED.search(text)
    anchor = verb.start() if verb else 0
    # "how does X depend on ..." names the target before the verb; the others after it
    before = bool(verb) and verb.group(0).lower().startswith("depend")
    for col in columns:
        if len(_norm(col)) < 2:
            continue
        pattern = r"(?<![A-Za-z0-9_])" + re.escape(col) + r"(?![A-Za-z0-9_])"
        for m in re.finditer(pattern, text, flags=re.IGNORECASE):
            ahead = m.start() >= anchor
            distance = abs(m.start() - anchor) + (10_000 if ahead == before else 0)
            hits.append((distance, -len(col), col))
    return min(hits)[2] if hits else None
