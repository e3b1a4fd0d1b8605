"""What the offline analyst says in words: the decision text at the top of the analysis, the
behavior reflector's comment on a step, and a completed stage's lesson."""

from __future__ import annotations

import re

from notebook_bcc.contract.observation import Observation
from notebook_bcc.inputs.problem import ProblemSpec
from notebook_bcc.syntax import literal

__all__ = ["decision_text", "comment", "experience"]


def decision_text(spec: ProblemSpec, target: str | None, task: str) -> str:
    if target:
        return (
            f"**What this analysis will do.** The target is `{target}` and the task is "
            f"**{task}**, because {spec.reason}. After checking integrity and exploring the data, "
            "the notebook compares a baseline, a linear model and gradient boosting."
        )
    if spec.supervised:
        return (
            f"**What this analysis will do.** The problem asks for a prediction ({spec.reason}), "
            "but no column of the table matches the target it names, so this notebook describes "
            "the data; name the target in front matter (`target: column`) to add modelling."
        )
    return (
        "**What this analysis will do.** No target column was named "
        f"({spec.reason}), so this is an exploratory analysis: integrity, distributions and "
        "relationships."
    )


_RESULT = re.compile(r"^\s*Result:\s*(.+)$", re.MULTILINE)


def comment(obs: Observation) -> str:
    """A short markdown comment on what the step produced (from the ledger); none when its
    cells already show their ``Result:`` line (rendered under the code: once is enough)."""
    lines = []
    if any(_RESULT.search(cell.excerpt) for cell in obs.cells):
        return ""
    for name, present in obs.artifacts:
        rec = obs.variable(name)
        if present and rec is not None:
            lines.append(_describe_value(rec.name, rec.kind, rec.shape, rec.repr))
    return "\n".join(f"- {x}" for x in lines[:8])


def _describe_value(name: str, kind: str, shape: str | None, text: str) -> str:
    if shape:
        rows, _, cols = shape.partition("x")
        return f"`{name}` holds {rows} rows" + (f" and {cols} columns." if cols else ".")
    try:
        value = literal(text)
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, dict):
        items = ", ".join(f"{k} = {v}" for k, v in list(value.items())[:8])
        return f"`{name}`: {items}."
    if value is not None and not isinstance(value, (dict, list, tuple, set)):
        return f"`{name}` = {value!r}."
    return f"`{name}` is a {kind}."


def experience(obs: Observation) -> str:
    stage = obs.stage
    assert stage is not None
    failed = [s.id for s in stage.steps if s.status == "failed"]
    text = f"Stage {stage.id}: {sum(1 for s in stage.steps if s.status == 'complete')} of {len(stage.steps)} steps complete"
    if failed:
        text += "; failed: " + ", ".join(failed)
    return text + "."
