"""The report's plan: a tree of stages, steps and behaviors, each with its status and what
its transitions cost (time, agent calls, tokens), guards and forced transitions marked. The
follow-ups asked of the run (``bcc ask``) are branches of their own, each holding its stages.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

__all__ = ["Transition", "plan_html"]

e = html.escape


@dataclass(frozen=True)
class Transition:
    seq: int
    event: str
    source: str
    target: str
    agent: str
    location: str
    iteration: int
    forced: bool
    duration_ms: int
    guards: tuple[tuple[str, str, str], ...] = ()
    log: etree._Element | None = None  # logs/NNNN_<EVENT>.xml, parsed once


@dataclass
class Node:
    """A stage, step or behavior of the plan tree, with what its transitions cost."""

    title: str
    status: str
    path: str
    children: list[Node] = field(default_factory=list)
    transitions: int = 0
    duration_ms: int = 0
    calls: int = 0
    guards: list[str] = field(default_factory=list)
    forced: int = 0
    note: str = ""


def _calls(t: Transition) -> int:
    return 0 if t.log is None else len(t.log.findall("request"))


def _tree(state: dict[str, Any], transitions: list[Transition]) -> list[Node]:
    """The stages (the problem's, then each follow-up's branch) with their steps and behaviors."""
    stages = []
    for st in state.get("stages", []):
        stage = Node(st["title"], st["status"], st["id"], note=st.get("blocked_by", ""))
        for t in st.get("steps", []):
            step = Node(
                t["title"], t["status"], f"{st['id']}/{t['id']}", note=t.get("blocked_by", "")
            )
            stage.children.append(step)
        stages.append(stage)
    behaviors: dict[str, Node] = {}
    for tr in transitions:
        parts = tr.location.split("/")
        if tr.event == "START_BEHAVIOR" and len(parts) == 3:
            node = Node(f"{parts[2]} (attempt {tr.iteration})", "running", tr.location)
            behaviors[tr.location] = node
            for stage in stages:
                for step in stage.children:
                    if step.path == "/".join(parts[:2]):
                        step.children.append(node)
        if tr.event == "COMPLETE_STEP" and tr.location in behaviors:
            done = tr.target == "STEP_COMPLETED" and not tr.forced
            behaviors[tr.location].status = "complete" if done else "retried"
            if tr.forced:
                behaviors[tr.location].status = "failed"
    for tr in transitions:
        calls = _calls(tr)
        for node in _walk(stages):
            if tr.location == node.path or tr.location.startswith(node.path + "/"):
                node.transitions += 1
                node.duration_ms += tr.duration_ms
                node.calls += calls
                node.forced += int(tr.forced)
                node.guards += [g for g, _, _ in tr.guards]
    return _branches(state, stages)


def _branches(state: dict[str, Any], stages: list[Node]) -> list[Node]:
    """The problem's stages, then one branch per follow-up holding the stages it planned."""
    asked = state.get("follow_ups") or []
    starts = [f.get("first_stage", 0) if f.get("seq") else len(stages) for f in asked]
    out = stages[: starts[0]] if starts else stages
    for n, (f, start) in enumerate(zip(asked, starts, strict=True), 1):
        end = starts[n] if n < len(starts) else len(stages)
        own = stages[start:end]
        title = " ".join(f.get("text", "").split())[:200]
        status = "pending" if not own else own[-1].status
        branch = Node(f"Follow-up {n}: {title}", status, f"follow-up {n}", own)
        for node in own:
            branch.transitions += node.transitions
            branch.duration_ms += node.duration_ms
            branch.calls += node.calls
        out.append(branch)
    return out


def _walk(nodes: list[Node]) -> list[Node]:
    out = []
    for n in nodes:
        out.append(n)
        out += _walk(n.children)
    return out


def _node_html(node: Node, usage: dict[str, Any]) -> str:
    spent = usage.get(node.path) or {}
    badges = "".join(f'<span class="guard">{e(g)}</span>' for g in dict.fromkeys(node.guards))
    if node.forced:
        badges += f'<span class="forced">{node.forced} forced</span>'
    cost = (
        f", {spent.get('prompt_tokens', 0)}+{spent.get('completion_tokens', 0)} tokens "
        f"({spent.get('cached_tokens', 0)} cached), ${float(spent.get('cost_usd', 0)):.4f}"
        if spent.get("prompt_tokens")
        else ""
    )
    facts = (
        f"{node.transitions} transitions, {node.duration_ms / 1000:.1f} s, "
        f"{node.calls} agent calls{cost}"
    )
    note = f'<div class="note">{e(node.note)}</div>' if node.note else ""
    kids = "".join(_node_html(c, usage) for c in node.children)
    return (
        f'<li><span class="status {e(node.status)}">{e(node.status)}</span> '
        f"<b>{e(node.title)}</b> <code>{e(node.path)}</code> {badges}"
        f'<div class="facts">{facts}</div>{note}' + (f"<ul>{kids}</ul>" if kids else "") + "</li>"
    )


def plan_html(state: dict[str, Any], transitions: list[Transition]) -> str:
    """The plan tree's ``<li>`` items."""
    usage = state.get("usage_by_location", {})
    return "".join(_node_html(n, usage) for n in _tree(state, transitions))
