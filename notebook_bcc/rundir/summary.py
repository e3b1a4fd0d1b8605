"""summary.json (fixed keys: docs/run-directory.md, "A run directory") and summary.md (the same, for people)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from notebook_bcc.rundir.results import (
    FINDINGS_NAMES,
    Asked,
    answers,
    named_text,
    reading_lines,
    value_text,
)
from notebook_bcc.rundir.state import Usage, WorkflowState

__all__ = [
    "build_summary",
    "does_not_rerun",
    "kernel_words",
    "render_summary_md",
    "per_transitions",
    "rounds_record",
]


def rounds_record(mode: str, events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The transitions the model's replies answered (summary.json ``rounds``): with compact
    rounds one reply may answer the next transitions too (docs/agents.md)."""
    moves = [e for e in events if e.get("type") == "transition" and e.get("agent")]
    ahead: dict[int, list[int]] = {}
    for e in moves:
        if e.get("answered_by"):
            ahead.setdefault(int(e["answered_by"]), []).append(int(e["seq"]))
    return {
        "mode": mode,
        "agent_transitions": len(moves),
        "answered_without_a_call": sum(len(v) for v in ahead.values()),
        "replies_that_answered_more": [
            {"seq": k, "also_answered": v} for k, v in sorted(ahead.items())
        ],
    }


def build_summary(
    state: WorkflowState,
    verification: dict[str, Any],
    artifacts: dict[str, Any],
    root: Path,
    question: str = "",
    questions: Sequence[Asked] = (),
    sandboxed: bool = False,
    where: str = "local",
    follow_up_questions: Sequence[Sequence[Asked]] = (),
    rounds: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``follow_up_questions``: the questions of each of ``state.follow_ups``, in order;
    ``rounds``: :func:`rounds_record` of the run's events."""
    c, u = state.counters, state.usage
    metrics = artifacts.get("final_metrics")
    own, asked = _answers(state, artifacts, questions, follow_up_questions)
    return {
        "run_id": state.run_id,
        "title": state.project_title or state.problem_title,
        "question": _asked(question),
        "final_state": state.fsm_state.value,
        "outcome": _outcome(state, verification),
        "error": state.error or None,
        "counts": {
            "transitions": c.transitions,
            "llm_calls": c.llm_calls,
            "cells": c.cells,
            "failed_behaviors": c.failed_behaviors,
            "forced_transitions": c.forced_transitions,
            "failed_steps": len(state.failed_steps()),
            "skipped": len(state.blocked()),
            "guard_overrides": c.guard_overrides,
            "kernel_restarts": c.kernel_restarts,
        },
        "rounds": rounds or rounds_record("full", ()),
        "usage": _usage(u),
        "usage_by_location": {
            k: _usage(v) for k, v in state.usage_by_location.items() if k.count("/") <= 1
        },
        "verification": verification,
        "artifacts": artifacts,
        "answers": own,
        **({"follow_ups": asked} if state.follow_ups else {}),
        "alternatives": [_fork(f) for f in state.forks],
        "key_results": metrics if isinstance(metrics, dict) else None,
        "findings": findings(state, artifacts),
        "stages": [
            {
                "id": st.id,
                "title": st.title,
                "status": st.status,
                **({"skipped_because": st.blocked_by} if st.blocked_by else {}),
                "steps": [
                    {
                        "id": t.id,
                        "status": t.status,
                        "behaviors": t.behaviors,
                        **({"skipped_because": t.blocked_by} if t.blocked_by else {}),
                    }
                    for t in st.steps
                ],
            }
            for st in state.stages
        ],
        "elapsed_s": state.elapsed_s,
        "kernel": {"where": where, "sandboxed": sandboxed},
        "notebook": str(root / "notebook.ipynb"),
    }


def _answers(
    state: WorkflowState,
    artifacts: dict[str, Any],
    questions: Sequence[Asked],
    follow_up_questions: Sequence[Sequence[Asked]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The problem's answers (with those a model added), and each follow-up with its stages
    and answers: all read from the one ``final_answers``."""
    every = [*questions, *(q for group in follow_up_questions for q in group)]
    found = [a.to_json() for a in answers(every, artifacts.get("final_answers"))]
    own = found[: len(questions)] + found[len(every) :]
    asked, at = [], len(questions)
    ends = [f.first_stage for f in state.follow_ups[1:]] + [len(state.stages)]
    for f, group, end in zip(state.follow_ups, follow_up_questions, ends, strict=False):
        stages = [st.id for st in state.stages[f.first_stage : end]] if f.seq else []
        asked.append({"question": f.text, "stages": stages, "answers": found[at : at + len(group)]})
        at += len(group)
    return own, asked


def _usage(u: Usage) -> dict[str, Any]:
    """Tokens and cost; ``cached_tokens`` and ``cache_write_tokens`` are part of the prompt
    tokens, and the cost already has the provider's cache discount (litellm's price)."""
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "cached_tokens": u.cached_tokens,
        "cache_write_tokens": u.cache_write_tokens,
        "cost_usd": round(u.cost_usd, 6),
    }


def findings(state: WorkflowState, artifacts: dict[str, Any]) -> dict[str, str] | None:
    """What the run found, in markdown, and where it came from: the kernel's closing summary
    (``FINDINGS_NAMES``) or, failing that, the stage reflectors' findings."""
    for name in FINDINGS_NAMES:
        text = artifacts.get(name)
        if isinstance(text, str) and text.strip():
            return {"source": name, "text": text.strip()}
    found = [
        f"- {text.strip()} ({st.id}/{t.id})"
        for st in state.stages
        for t in st.steps
        for _, text in t.findings
        if text.strip() and not _superseded(text, t.superseded)
    ]
    return {"source": "stage reflectors", "text": "\n".join(found)} if found else None


def _under_heading(markdown: str) -> str:
    """Markdown placed under a ``##`` heading: its own headings two levels down."""
    return re.sub(r"^(#{1,4})(?=\s)", r"\1##", markdown, flags=re.M)


def _superseded(text: str, superseded: list[list[str]]) -> bool:
    return any(not part or part.lower() in text.lower() for part, _ in superseded)


def _asked(text: str, limit: int = 1000) -> str:
    """The problem's text, cut at a paragraph (or line) break within ``limit`` characters."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = head.rfind("\n\n") if head.rfind("\n\n") > limit // 2 else head.rfind("\n")
    return head[: cut if cut > 0 else limit].rstrip() + "\n\n(… the rest is in problem.md)"


def _outcome(state: WorkflowState, verification: dict[str, Any]) -> str:
    """The final state in words a script and a reader cannot mistake for a clean success:
    a completed run says its failed steps, and first of all a notebook that does not re-run."""
    if state.fsm_state != "WORKFLOW_COMPLETED":
        return state.fsm_state.value
    shortfall = state.shortfall()
    done = f"completed with {shortfall}" if shortfall else "completed"
    failed = does_not_rerun(verification)
    return f"{done}, but {failed}" if failed else done


def does_not_rerun(verification: dict[str, Any]) -> str:
    """What a failed verification means for the reader, in words ("" when it did not fail)."""
    if verification.get("status") != "failed":
        return ""
    error = " ".join(str(verification.get("error") or "").split())
    if verification.get("verifier_failed"):
        return f"the notebook could not be verified: verification failed ({error})"
    if verification.get("results") == "differ":
        return f"the notebook does not re-run to its results: verification failed ({error})"
    cell = verification.get("first_failing_cell")
    at = f" at cell {cell}" if cell is not None else ""
    return f"the notebook does not re-run: verification failed{at} ({error})"


def kernel_words(kernel: dict[str, Any]) -> str:
    """Where the code ran, and whether it was confined (summary.md, ``bcc status``)."""
    where = kernel.get("where", "local")
    where = where if where == "local" else f"gateway {where}"
    if kernel.get("sandboxed"):
        return f"{where}, sandboxed (bubblewrap: nothing of the host, only outputs/ writable)"
    return f"{where}, not sandboxed"


def render_summary_md(summary: dict[str, Any]) -> str:
    c, u, v = summary["counts"], summary["usage"], summary["verification"]
    lines = [
        f"# {summary['title']}",
        "",
        f"**Outcome:** {summary.get('outcome') or summary['final_state']}"
        + (f" — {summary['error']}" if summary.get("error") else ""),
        "",
    ]
    if summary.get("question"):
        lines += ["## What was asked", "", summary["question"], ""]
    lines += ["## What was done", ""]
    for st in summary["stages"]:
        steps = ", ".join(f"{t['id']} ({t['status']})" for t in st["steps"])
        steps = steps or st.get("skipped_because") or "not planned"
        lines.append(f"- **{st['title']}** — {st['status']}: {steps}")
    if summary.get("answers"):
        lines += ["", "## Answers", "", *_answer_lines(summary["answers"])]
    for n, f in enumerate(summary.get("follow_ups", []), 1):
        lines += ["", f"## Follow-up {n}: {' '.join(f['question'].split())}", ""]
        lines += _answer_lines(f["answers"]) or ["*not planned yet*"]
    if summary.get("alternatives"):
        lines += ["", "## Alternatives tried", ""]
        for f in summary["alternatives"]:
            tried = "; ".join(
                f"`{b['behavior']}` "
                + (f"{b['score']:.4g}" if b["score"] is not None else f"dropped ({b['dropped']})")
                + (" **(kept)**" if b["kept"] else "")
                for b in f["branches"]
            )
            lines.append(f"- {f['step']}, by `{f['choose']}` ({f['better']} is better): {tried}")
    metrics = summary.get("key_results") or summary["artifacts"].get("final_metrics")
    if isinstance(metrics, dict):
        lines += ["", "## Key results", ""]
        lines += [f"- {k}: {val}" for k, val in metrics.items()]
    found = summary.get("findings")
    if found:
        source = "the stage reflectors" if found["source"] == "stage reflectors" else None
        source = source or f"`{found['source']}`, written in the kernel"
        lines += ["", "## Findings", "", f"*From {source}.*", "", _under_heading(found["text"])]
    failed = [
        f"{st['id']}/{t['id']}"
        for st in summary["stages"]
        for t in st["steps"]
        if t["status"] != "complete"
    ]
    if failed or c["forced_transitions"] or c.get("skipped"):
        lines += ["", "## Failures", ""]
        lines += [f"- step not completed: {f}" for f in failed]
        lines += [
            f"- stage skipped: {st['id']} ({st['skipped_because']})"
            for st in summary["stages"]
            if st.get("skipped_because")
        ]
        lines.append(
            f"- forced transitions: {c['forced_transitions']} (see `bcc logs` and events.jsonl)"
        )
    verdict = verification_text(v)
    lines += [
        "",
        "## Run",
        "",
        f"- transitions: {c['transitions']}, cells run: {c['cells']}, failed behaviors: "
        f"{c['failed_behaviors']}, forced transitions: {c['forced_transitions']}",
        f"- model calls: {c['llm_calls']}{per_transitions(summary)}, tokens: {u['prompt_tokens']} "
        f"({u.get('cached_tokens', 0)} of them cached) + {u['completion_tokens']}, "
        f"cost: ${u['cost_usd']:.4f}",
        f"- wall time: {summary['elapsed_s']:.1f} s",
        f"- kernel: {kernel_words(summary.get('kernel') or {})}",
        f"- re-execution check: {verdict}",
        "",
        "Open `notebook.ipynb` in Jupyter; re-run it with "
        "`jupyter nbconvert --to notebook --execute notebook.ipynb` or papermill "
        "(`-p user_submit_files '[\"other.csv\"]'`). Why each step happened: `logs/`.",
        "",
    ]
    return "\n".join(lines)


def verification_text(v: dict[str, Any]) -> str:
    """The verification's verdict in words: whose failure it was (the notebook's, at its
    first failing cell, or the verification kernel's), or what it reproduced."""
    status = str(v.get("status"))
    if v.get("verifier_failed"):
        return f"{status} (the verification kernel failed, not the notebook: {v.get('error')})"
    if status == "failed":
        return f"{status} (first failing cell: {v.get('first_failing_cell')}; {v.get('error')})"
    if v.get("results") == "reproduced":
        return f"{status} (final_answers / final_metrics reproduced)"
    return status


def _answer_lines(found: list[dict[str, Any]]) -> list[str]:
    lines = []
    for i, a in enumerate(found, 1):
        question = a["question"] + (" *(added by the model)*" if a.get("added") else "")
        if a["answered"]:
            lines.append(
                f"{i}. {question} **{value_text(a['value'])}**"
                + (f" — {a['text']}" if a["text"] else "")
            )
        else:
            why = a["text"].removeprefix("not answered: ") or "no value"
            lines.append(f"{i}. {question} *not answered* ({why})")
        if a.get("values"):
            lines.append(f"   {named_text(a['values'], a.get('missing_values', ()))}")
        if a.get("missing_values"):
            lines.append(f"   missing: {', '.join(a['missing_values'])}")
        lines += [f"   {line}" for line in reading_lines(a)]
        if a.get("shortened"):
            lines.append(f"   shortened (too large to report in full): {'; '.join(a['shortened'])}")
    return lines


def _fork(record: dict[str, Any]) -> dict[str, Any]:
    """A fork as summary.json lists it: its step, how it chose, each branch (no cells)."""
    keys = ("behavior", "task", "score", "kept", "dropped")
    return {
        "step": record["step"],
        "seq": record["seq"],
        "choose": record["choose"],
        "better": record["better"],
        "branches": [{k: b.get(k) for k in keys} for b in record["branches"]],
    }


def per_transitions(summary: dict[str, Any]) -> str:
    """ " for 6 agent transitions (3 answered by an earlier reply, compact rounds)"."""
    r = summary.get("rounds") or {}
    if not r.get("agent_transitions"):
        return ""
    ahead = r.get("answered_without_a_call", 0)
    more = f" ({ahead} answered by an earlier reply, {r['mode']} rounds)" if ahead else ""
    return f" for {r['agent_transitions']} agent transitions{more}"
