"""The guards the runner enforces where facts are checkable (docs/architecture.md, "Guards").

Pure functions of plain values: each returns what the runner must do and, when the guard
fires, a ``Guard`` for the transition log and ``events.jsonl``. G2 (a reflection's flag agrees
with its next state) is checked by the payload parser; G5 (no deprecation of a variable still
needed) by ``VariableLedger.deprecate``; G6 (budgets) by ``budget_exhausted`` below.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from notebook_bcc.syntax import parse_module

__all__ = [
    "Guard",
    "blocked",
    "budget_exhausted",
    "cap_plan",
    "code_digest",
    "completion",
    "names_bound",
    "plan_move",
    "repeated_code",
    "step_cap",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Guard:
    name: str  # G1 ... G8
    effect: str  # what the runner did, e.g. "completion_overridden"
    reason: str


def cap_plan(items: Sequence[T], cap: int, what: str) -> tuple[list[T], Guard | None]:
    """G3 on a plan: the first ``cap`` stages or steps."""
    if len(items) <= cap:
        return list(items), None
    return list(items[:cap]), Guard(
        "G3", f"{what}_truncated", f"{len(items)} {what} planned, cap {cap}"
    )


def completion(
    claims_complete: bool, missing: Sequence[str], why: Mapping[str, str] | None = None
) -> Guard | None:
    """G1: a completion claim while a declared artifact is missing is overridden. ``why``:
    the artifacts in the kernel that only a failed cell made (not in the notebook), each
    with that cell; they count as missing."""
    if claims_complete and missing:
        why = why or {}
        absent = [name for name in missing if name not in why]
        parts = ["declared artifacts missing in the kernel: " + ", ".join(absent)] if absent else []
        parts += [
            f"{name} is not in the notebook (made only by {why[name]})"
            for name in missing
            if name in why
        ]
        return Guard("G1", "completion_overridden", "; ".join(parts))
    return None


_MAGIC = re.compile(r"^(\s*)[%!].*$", re.MULTILINE)


def names_bound(code: str) -> set[str]:
    """The names a cell binds at the top level of the kernel's namespace, read from its code
    (assignments, imports, definitions, loop and ``with`` targets); none when it does not
    parse. IPython's ``%`` and ``!`` lines are read as ``pass``."""
    try:
        tree = parse_module(_MAGIC.sub(r"\1pass", code))  # one parse at a time (syntax.py)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    scoped = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    comprehensions = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, scoped):
            if not isinstance(node, ast.Lambda):
                names.add(node.name)
            continue  # its own scope
        if isinstance(node, comprehensions):
            continue  # its targets are its own (a walrus inside is rare enough)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        todo.extend(ast.iter_child_nodes(node))
    names.discard("*")
    return names


def step_cap(behaviors: int, cap: int) -> Guard | None:
    """G3 on a step: after ``cap`` behaviors that did not complete it, the step has failed."""
    if behaviors >= cap:
        return Guard("G3", "step_failed", f"{behaviors} behaviors tried (cap {cap})")
    return None


def plan_move(wants_next_step: bool, pending: Sequence[str]) -> tuple[bool, Guard | None]:
    """G4: "next step" with none pending completes the stage; completing the stage with steps
    pending skips them. Returns whether to go to the next step, and the guard if it fired."""
    if wants_next_step and not pending:
        return False, Guard("G4", "stage_completed", "next step requested but no steps are left")
    if not wants_next_step and pending:
        reason = "stage completed with steps left: " + ", ".join(pending)
        return False, Guard("G4", "steps_skipped", reason)
    return wants_next_step, None


def blocked(what: str, required: Sequence[str], unmade: Mapping[str, str]) -> Guard | None:
    """G8: a stage or step that requires a variable which was never made, because the step or
    stage that was to make it failed or was skipped, cannot start. It is skipped at once: no
    agent call, no cell. ``unmade`` maps such variables to what failed to make them."""
    missing = [name for name in required if name in unmade]
    if not missing:
        return None
    reason = "; ".join(f"{name} was never made ({unmade[name]})" for name in missing)
    return Guard("G8", f"{what}_skipped", f"cannot start: the required {reason}")


def code_digest(code: str) -> str:
    return hashlib.sha256(code.strip().encode()).hexdigest()[:16]


def repeated_code(code: str, failed_digests: Sequence[str]) -> Guard | None:
    """G7: code identical to code that already failed in this step is not run again."""
    if code_digest(code) in failed_digests:
        reason = "identical to code that already failed in this step; not re-run"
        return Guard("G7", "not_rerun", reason)
    return None


def budget_exhausted(
    *,
    llm_calls: int,
    cost_usd: float,
    elapsed_s: float,
    max_llm_calls: int | None,
    max_cost_usd: float | None,
    max_wall_s: float | None,
) -> str | None:
    """G6: which budget is spent, as the message of the abort; None while all remain."""
    if max_llm_calls is not None and llm_calls >= max_llm_calls:
        return f"--max-llm-calls {max_llm_calls} reached"
    if max_cost_usd is not None and cost_usd >= max_cost_usd:
        return f"--max-cost-usd {max_cost_usd} reached"
    if max_wall_s is not None and elapsed_s >= max_wall_s:
        return f"--max-wall-s {max_wall_s} reached"
    return None
