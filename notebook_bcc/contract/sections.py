"""The sections of a prompt: what each ``$name`` placeholder of ``prompts/<EVENT>.md`` holds for
an Observation (:func:`fields`).

Sections a decision depends on are plain text and never cut. History (variable details,
earlier attempts and outputs, findings, lessons, deleted names) is a
:class:`History` of whole items that :func:`notebook_bcc.contract.prompts.render` trims to the
prompt's budget, least needed first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from notebook_bcc.contract.observation import Attempt, CellFact, Checks, Observation, StepView
from notebook_bcc.contract.phrases import phrase
from notebook_bcc.contract.plan_view import (
    COMPACT_STEP_CALLS,
    behavior_text,
    focus_text,
    offers_text,
    plan_text,
    position_text,
    step_text,
)
from notebook_bcc.contract.reply import resource_dir
from notebook_bcc.fsm import Event

__all__ = ["History", "fields"]

DELETED_WITH_REASON = 20  # the latest deleted names say why (deprecated, replacement)


@dataclass(frozen=True)
class History:
    """A section of whole items that may be trimmed, ``drop_first`` of them first."""

    items: tuple[tuple[str, str], ...]  # (label, text)
    what: str  # what an item is, for the omission note ("earlier cells")
    empty: str
    rank: int  # sections of lower rank lose items first
    drop_from_end: bool = False  # ranked lists lose their last items; histories their oldest
    dropped: tuple[str, ...] = ()
    joiner: str = "\n"
    prefix: str = ""
    ranks: tuple[int, ...] = ()  # per item: the highest is dropped first (else by position)

    def text(self) -> str:
        body = self.joiner.join(t for _, t in self.items)
        body = self.prefix + body if body else body
        if not self.dropped:
            return body or self.empty
        note = (
            f"({len(self.dropped)} {self.what} left out to keep this prompt within its "
            f"budget: {', '.join(self.dropped)})"
        )
        return f"{body}\n{note}" if body else note

    def drop_one(self) -> History:
        if self.ranks:
            i = max(range(len(self.items)), key=self.ranks.__getitem__)
        else:
            i = len(self.items) - 1 if self.drop_from_end else 0
        dropped = (*self.dropped, self.items[i][0])
        ranks = self.ranks[:i] + self.ranks[i + 1 :]
        items = self.items[:i] + self.items[i + 1 :]
        return replace(self, items=items, dropped=dropped, ranks=ranks)


def _indent(text: str, prefix: str = "  ") -> str:
    """Continuation lines of a bullet, indented so the whole text stays inside it."""
    lines = text.strip().splitlines() or [""]
    return "\n".join([lines[0], *(prefix + ln if ln.strip() else "" for ln in lines[1:])])


# -- sections that are never cut ----------------------------------------------------------
def check_lines(checks: Checks) -> list[str]:
    """The runner's checks as prompt lines: artifacts present or MISSING, criteria, notes."""
    lines = [f"artifact {n}: {'present' if ok else 'MISSING'}" for n, ok in checks.artifacts]
    lines += [f"criterion `{e}`: {s}" + (f" ({d})" if d else "") for e, s, d in checks.criteria]
    return lines + [f"note: {n}" for n in checks.notes]


def _checks(obs: Observation) -> str:
    lines = check_lines(Checks(obs.artifacts, obs.criteria, obs.notes))
    return "\n".join(lines) or "(no checks)"


def _protected(obs: Observation) -> str:
    return "\n".join(f"- {n}: {why}" for n, why in obs.protected) or "(none)"


def _code_names(obs: Observation) -> str:
    """Modules and callables in the kernel (not variables, so not in the ledger), by name."""
    imported = [n if n == m else f"{n} = {m}" for n, m in obs.modules]
    imported += [f"{n} (from {_public(m)})" for n, m in obs.callables if _is_module_path(m)]
    defined = [f"{n} ({m})" if m else n for n, m in obs.callables if not _is_module_path(m)]
    lines = []
    if imported:
        lines.append(phrase("imported", names=", ".join(imported)))
    if defined:
        lines.append(phrase("defined", names=", ".join(defined)))
    return "\n".join(lines)


def _is_module_path(where: str) -> bool:
    return bool(where) and not where.startswith("signature")


def _public(module: str) -> str:
    """``sklearn.linear_model._base`` -> ``sklearn.linear_model``: where a user imports from."""
    parts = module.split(".")
    keep = next((i for i, p in enumerate(parts) if p.startswith("_") and i), len(parts))
    return ".".join(parts[:keep])


def _deleted(obs: Observation) -> History:
    """Names no longer in the kernel: the latest ``DELETED_WITH_REASON`` with why, older ones
    by name only; over budget the oldest go first."""
    gone = obs.ledger_view.deleted
    cut = max(0, len(gone) - DELETED_WITH_REASON)
    items = tuple((g.split(" ", 1)[0], g.split(" ", 1)[0]) for g in gone[:cut])
    items += tuple((g.split(" ", 1)[0], g) for g in gone[cut:])
    return History(
        items,
        "deleted variables",
        "",
        rank=0,
        joiner="; ",
        prefix=phrase("deleted", names=""),
    )


# -- history, trimmed whole items at a time -----------------------------------------------
def _cell_text(i: int, cell: CellFact, with_code: bool = False) -> str:
    head = f"cell {i}: {cell.status}"
    if cell.error_name:
        head += f" — {cell.error_name}: {cell.error_value or ''}"
    if with_code and cell.code.strip():
        head += f"\ncode:\n```python\n{cell.code.strip()}\n```\noutput:"
    body = cell.excerpt.rstrip().lstrip("\n")  # keep a table's first-line indent
    figs = "".join(f"\n[figure] {f}" for f in cell.figures)
    return f"{head}\n{body}{figs}" if body else head + figs


def _cells(cells: tuple[CellFact, ...], empty: str) -> History:
    items = tuple((f"cell {i}", _cell_text(i, c, with_code=True)) for i, c in enumerate(cells, 1))
    return History(items, "cells' output", empty, rank=4, joiner="\n\n")


def _attempt_text(a: Attempt, with_cells: bool, with_code: bool = False) -> str:
    lines = [f"#### {a.behavior} (iteration {a.iteration})", f"Task: {a.task}"]
    if with_cells:
        lines += [_cell_text(i, c) for i, c in enumerate(a.cells, 1)] or ["(no code ran)"]
    else:
        if with_code and a.cells:  # what a retry fixes rather than writes again
            code = "\n\n".join(
                f"# cell {i}: {_in_notebook(c.status)}\n{c.code.strip()}"
                for i, c in enumerate(a.cells, 1)
                if c.code.strip()
            )
            lines.append(f"Its code (the cells it ran, in order):\n```python\n{code}\n```")
        status = ", ".join(c.status for c in a.cells) or "no code ran"
        errors = [f"{c.error_name}: {c.error_value}" for c in a.cells if c.error_name]
        lines.append(f"Cells: {status}" + (f" ({'; '.join(errors)})" if errors else ""))
    lines += _checks_in_brief(a.checks)
    if a.verdict:
        lines.append(f"Behavior reflector: {a.verdict}. {a.reasoning}".strip())
    if a.produced:
        lines.append("Produced: " + "; ".join(f"{n}: {d}" for n, d in a.produced))
    if a.recommendations:  # (its comment for the notebook says the same in prose: left out)
        lines.append(f"Recommendations: {a.recommendations}")
    return "\n".join(lines)


def _in_notebook(status: str) -> str:
    """Where a cell of an earlier attempt is: a cell that ran without error is in the
    notebook (and what it made is in the kernel); a failed one is not."""
    return "ok, in the notebook" if status == "ok" else f"{status}, not in the notebook"


def _checks_in_brief(checks: Checks) -> list[str]:
    """An attempt's checks: the ones that failed whole, the ones that passed counted (the
    reflector that judged the attempt read them all)."""
    n_art = sum(ok for _, ok in checks.artifacts)
    n_crit = sum(verdict == "passed" for _, verdict, _ in checks.criteria)
    failed = Checks(
        tuple(a for a in checks.artifacts if not a[1]),
        tuple(c for c in checks.criteria if c[1] != "passed"),
        checks.notes,
    )
    rest = check_lines(failed)
    if not n_art + n_crit:
        return rest
    counts = [(n_art, "artifacts present"), (n_crit, "criteria passed")]
    return ["checks passed: " + ", ".join(f"{n} {what}" for n, what in counts if n), *rest]


def _attempts(
    obs: Observation,
    *,
    with_cells: bool,
    current_too: bool,
    feedback_apart: bool = False,
    code_of_last: bool = False,
) -> History:
    """The step's attempts. ``feedback_apart``: the prompt shows the reviewer's feedback in
    a section of its own, so the last attempt's verdict does not repeat it. ``code_of_last``:
    the last attempt shows its code (the generator's retry changes it)."""
    attempts = obs.attempts if current_too else tuple(a for a in obs.attempts if a.verdict)
    if feedback_apart and obs.feedback and attempts and obs.feedback in attempts[-1].reasoning:
        rest = attempts[-1].reasoning.replace(obs.feedback, "").strip()
        note = "(the feedback on it follows, under its own heading)"
        attempts = (*attempts[:-1], replace(attempts[-1], reasoning=f"{rest} {note}".strip()))
    last = len(attempts) - 1
    items = tuple(
        (a.behavior, _attempt_text(a, with_cells, with_code=code_of_last and i == last))
        for i, a in enumerate(attempts)
    )
    rank = 3 if with_cells else 2
    return History(items, "earlier attempts", "(none: this is the first)", rank, joiner="\n\n")


def _cited(name: str, text: str) -> bool:
    """Whether ``text`` names the variable as code: in backticks, or as an identifier no prose
    word looks like (with an underscore or a digit). Plain words ("counts", "table") are not
    taken for variables."""
    if re.search(rf"`[^`]*(?<![\w.]){re.escape(name)}(?!\w)[^`]*`", text):
        return True
    code_like = "_" in name or any(ch.isdigit() for ch in name)
    return code_like and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def _lessons(obs: Observation) -> History:
    items = []
    held = " ".join(v.repr for v in obs.ledger)  # a deleted name may live on as a dict's key
    deleted = (v.split(" ", 1)[0] for v in obs.ledger_view.deleted)
    deleted = [n for n in deleted if f"'{n}'" not in held and f'"{n}"' not in held]
    for stage, text in obs.lessons:
        gone = [n for n in deleted if _cited(n, text)]
        note = f" (since deleted from the kernel: {', '.join(gone)})" if gone else ""
        label = f"lesson of {stage}" if stage else "lesson"
        items.append((label, "- " + _indent((f"[{stage}] " if stage else "") + text) + note))
    return History(tuple(items), "lessons", "(none yet)", rank=2)


def _findings(obs: Observation) -> History:
    items = []
    for i, stage in enumerate(obs.stages):
        for j, step in enumerate(stage.steps):
            later = i == obs.stage_index and j >= obs.step_index
            if later and obs.event not in (Event.START_STEP, Event.FOLLOW_UP):
                continue
            if not (step.comment or step.findings) and step.status == "pending":
                continue
            lines = [f"- {stage.id}/{step.id} [{step.status}]"]
            current, gone = _current_findings(step)
            lines += [f"  - ({p}) {_indent(x, '    ')}" for p, x in current]
            whole = not any(not text for text, _ in step.superseded)
            if step.comment and whole and not step.findings:  # the findings say it already
                lines.append("  - result: " + _indent(step.comment, "    "))
            lines += [f"  - superseded since: {n} ({why})" for n, why in gone]
            items.append((f"{stage.id}/{step.id}", "\n".join(lines)))
    empty = "(no step has finished yet)"
    if obs.event == Event.COMPLETE_STAGE:  # its step just finished: the run's first
        empty = "(none: the step just finished is the run's first)"
    return History(tuple(items), "earlier steps' findings", empty, rank=3)


def _current_findings(
    step: StepView,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """A step's findings still current, and how many each supersession retired, with why
    (a superseded finding is not shown as current: its text is left out)."""
    current, gone = list(step.findings), []
    for text, why in step.superseded:
        keep = [f for f in current if text and text.lower() not in f[1].lower()]
        n = len(current) - len(keep) + (0 if text else int(bool(step.comment)))
        if n:
            which = f"naming {text!r}" if text else "all of this step's"
            gone.append((f"{n} finding{'s' if n > 1 else ''} {which}", why))
        current = keep
    return current, gone


def _born_order(obs: Observation) -> list[int]:
    """The ledger's lines (ranked) in the order their variables were born: a list that only
    grows at its end, so consecutive prompts share its start."""
    view = obs.ledger_view
    born = view.born or tuple(range(len(view.lines)))
    return sorted(range(len(view.lines)), key=born.__getitem__)


def _ledger(obs: Observation) -> History:
    """Every variable with its details, oldest first; over budget, the lowest ranked (the
    current step's needs and artifacts rank first) lose their details first."""
    order = _born_order(obs)
    return History(
        tuple(obs.ledger_view.lines[i] for i in order),
        "variables' details (still in the kernel)",
        "(no variables yet)",
        rank=1,
        ranks=tuple(order),
    )


def _ledger_brief(obs: Observation) -> str:
    """Every variable in the kernel by name, kind, size and status, without its details: for
    the reflectors, who read the values in the cells' output."""
    view = obs.ledger_view
    heads = view.heads or tuple(f"- {label}" for label, _ in view.lines)
    return "\n".join(heads[i] for i in _born_order(obs)) or "(no variables yet)"


def _follow_up(obs: Observation) -> str:
    """The latest follow-up whole, and the numbers its questions have in the run's list."""
    if not obs.follow_ups:
        return "(none)"
    n = obs.follow_up_counts[-1]
    numbers = range(len(obs.questions) - n + 1, len(obs.questions) + 1)
    keys = ", ".join(f'"{i}"' for i in numbers)
    return f"{obs.follow_ups[-1].strip()}\n(its question{'s' * (n > 1)} in the run's list: {keys})"


def fields(obs: Observation) -> dict[str, str | History]:
    """What each ``$name`` of a template holds for ``obs``: text, or a trimmable History.
    (What every prompt starts with is the run's block:
    :func:`notebook_bcc.contract.prompts.run_block`.)"""
    return {
        "location": obs.location or "(start)",
        "iteration": str(obs.iteration),
        "plan": plan_text(obs),
        "position": position_text(obs),
        "current_step": step_text(obs),
        "behavior": behavior_text(obs),
        "focus": focus_text(obs),
        "ledger": _ledger(obs),
        "ledger_brief": _ledger_brief(obs),
        "deleted": _deleted(obs),
        "code_names": _code_names(obs),
        "execution": _cells(obs.cells, "(no code ran in this behavior)").text(),
        "checks": _checks(obs),
        "feedback": obs.feedback or "(none)",
        "attempts": _attempts(obs, with_cells=False, current_too=False),
        "attempts_before_feedback": _attempts(
            obs, with_cells=False, current_too=False, feedback_apart=True
        ),
        "attempts_with_code": _attempts(
            obs, with_cells=False, current_too=False, feedback_apart=True, code_of_last=True
        ),
        "step_record": replace(_attempts(obs, with_cells=True, current_too=True), rank=5),
        "lessons": _lessons(obs),
        "findings": _findings(obs),
        "protected": _protected(obs),
        "behaviors_in_step": str(obs.behaviors_in_step),
        "max_behaviors": str(obs.max_behaviors),
        "follow_up": _follow_up(obs),
        "alternatives": _alternatives(obs),
        "combined": offers_text(obs, _stage_reflector_sees),
        "step_calls": COMPACT_STEP_CALLS if obs.rounds == "compact" else "four",
        "branch_note": obs.branch_note,
    }


def _alternatives(obs: Observation) -> str:
    """The arranger's other answer, a fork (``prompts/ALTERNATIVES.md``), when forks are on."""
    if obs.max_alternatives < 2:
        return ""
    text = (resource_dir() / "ALTERNATIVES.md").read_text(encoding="utf-8")
    return text.replace("$max_alternatives", str(obs.max_alternatives)).strip()


def _stage_reflector_sees(obs: Observation) -> str:
    """What the stage reflector's prompt shows beside its format, for its offered part."""
    findings = _findings(obs).text() or "(none)"
    return f"Protected variables (never deprecate them):\n{_protected(obs)}\n\n" + (
        f"Findings of earlier steps:\n{findings}"
    )
