"""The run's block: the text every prompt of a run starts with (``prompts/RUN.md``).

It holds what does not change during a run (the rules every agent follows, the kernel's
packages, the results contract as it applies to this problem, the problem, its questions and
the data preview), so a provider's prompt cache serves it after the first call. Nothing in it
depends on the run's progress (a follow-up, `bcc ask`, adds its questions: the block changes once
per follow-up), and nothing in it is trimmed: an agent's own instructions and
the run's state follow it (:mod:`notebook_bcc.contract.prompts`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from string import Template

from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.reply import resource_dir

__all__ = ["questions_text", "results_contract", "run_block"]

ANCHOR_WORDS = 12  # a question the problem lists as an item is named by its first words


@lru_cache(maxsize=2)
def _texts() -> tuple[Template, dict[str, str]]:
    run = (resource_dir() / "RUN.md").read_text(encoding="utf-8")
    parts = re.split(r"<!-- (\w+) -->\n", (resource_dir() / "RESULTS.md").read_text("utf-8"))
    contract = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    return Template(run.strip() + "\n"), contract


def results_contract(obs: Observation) -> str:
    """The results the run leaves: answers when it has questions, metrics when the problem
    asks for a model of a target, a summary always."""
    contract = _texts()[1]
    kinds = [k for k, wanted in (("answers", obs.questions), ("metrics", obs.supervised)) if wanted]
    return "\n".join(contract[k] for k in (*kinds, "summary"))


def _words(text: str) -> str:
    return " ".join(text.split())


def questions_text(obs: Observation) -> str:
    """Each question by its number, with the names its answer must carry. A question the
    problem holds word for word as an item of a list is named by its first words: the problem
    above has it whole, and the item ends where the next begins. A question from the problem's
    prose is whole (trials G and H: a sentence of a paragraph named by some of its words did not
    say what it asks). The follow-ups' questions come after the problem's, numbered on."""
    own = obs.questions[: len(obs.questions) - obs.asked_questions]
    lines = [] if own else [
        "(none found, so `final_answers` is optional; a value the problem asks for all the "
        "same may go in it, under a short question of your own, and the results list it as "
        "an answer you added)"
    ]  # fmt: skip
    problem, shortened = _words(obs.problem), False
    for i, q in enumerate(obs.questions, 1):
        if i == len(own) + 1:
            lines.append(
                "Follow-up questions, asked after the run completed (`bcc ask`): each is "
                "answered in `final_answers` under its number or text, next to the earlier "
                "answers, which stay as they are:"
            )
        words = q.text.split()
        short = (
            len(words) > ANCHOR_WORDS
            and _words(q.text) in problem
            and _is_item(words[:ANCHOR_WORDS], obs.problem)
        )
        shortened |= short
        lines.append(f"{i}. " + (" ".join(words[:ANCHOR_WORDS]) + " …" if short else q.text))
        if q.names:
            lines.append("   values: " + ", ".join(q.names))
    if shortened:
        lines.append("(a question shortened with … is whole in the problem above, as an item)")
    return "\n".join(lines)


def _is_item(first: list[str], problem: str) -> bool:
    """Whether the problem has a list item (``1.``, ``-``, ``Question 2:``) starting with these
    words, its lines wrapped anywhere."""
    words = r"\s+".join(re.escape(w) for w in first)
    marker = r"(?:[-*+]|\(?\d{1,2}[.)]|question\s*\d+\s*[:.)])"
    return re.search(rf"(?im)^\s*{marker}\s+(?:\*\*)?{words}", problem) is not None


def run_block(obs: Observation) -> str:
    """The block every prompt of the run starts with, the same text each time."""
    environment = obs.environment or ("(not reported; import only what the cells above import)")
    return _texts()[0].safe_substitute(
        environment=environment,
        seed=str(obs.seed),
        results_contract=results_contract(obs),
        problem=obs.problem.strip(),
        questions=questions_text(obs),
        files="\n".join(f"- {f}" for f in obs.files) or "(none)",
        preview="\n\n".join(obs.data_preview) or "(no preview)",
    )
