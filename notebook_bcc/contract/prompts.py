"""Renders ``prompts/<EVENT>.md`` from an Observation into a (system, user) pair.

Every prompt of a run is laid out for a provider's prompt cache: the system part starts with
the run's block (:func:`run_block`, the same text in every prompt), then
the agent's own instructions (the same in every prompt of that kind); the user part is the
run's state, least volatile first (focus, plan, lessons, findings, variables) and the current
position last. A template is markdown with ``$name`` placeholders (``string.Template``),
filled from :func:`notebook_bcc.contract.sections.fields`; the line ``<!-- user -->``
separates the agent's instructions from the state.

What a decision depends on is never cut: the problem and its questions, the plan, the focus,
the current stage and step goals, the behavior task and its acceptance criteria, the checks
and the reviewer's feedback. History (the variable details, earlier attempts and outputs,
findings, lessons, the data preview) is a list of whole items; when the rendered prompt is
over ``PROMPT_BUDGET_CHARS``, whole items are dropped (the least needed kind first, oldest or
lowest ranked first) and the prompt says which ones by name. A variable whose details are
dropped keeps its name and status.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from string import Template

from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.payloads import resource_dir
from notebook_bcc.contract.sections import History, fields
from notebook_bcc.redaction import redact

__all__ = [
    "PROMPT_BUDGET_CHARS",
    "History",
    "RenderedPrompt",
    "questions_text",
    "render",
    "results_contract",
    "run_block",
    "template_examples",
    "template_path",
]

SEPARATOR = "<!-- user -->"
#: one generous budget for a whole prompt (system + user), in characters (~15k tokens)
PROMPT_BUDGET_CHARS = 60_000


@dataclass(frozen=True)
class RenderedPrompt:
    event: str
    system: str
    user: str
    omitted: tuple[str, ...] = ()  # what the budget left out, by name
    run_chars: int = 0  # system[:run_chars] is the run's block, the same in every prompt

    @property
    def size(self) -> int:
        return len(self.system) + len(self.user)


# The run's block: the text every prompt of a run starts with (``prompts/RUN.md``). It holds
# what does not change during a run (the rules every agent follows, the kernel's packages, the
# results contract as it applies to this problem, the problem, its questions and the data
# preview), so a provider's prompt cache serves it after the first call. Nothing in it depends
# on the run's progress (a follow-up, `bcc ask`, adds its questions: the block changes once per
# follow-up), and nothing in it is trimmed.

ANCHOR_WORDS = 12  # a question the problem lists as an item is named by its first words


@lru_cache(maxsize=2)
def _run_texts() -> tuple[Template, dict[str, str]]:
    run = (resource_dir() / "RUN.md").read_text(encoding="utf-8")
    parts = re.split(r"<!-- (\w+) -->\n", (resource_dir() / "RESULTS.md").read_text("utf-8"))
    contract = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    return Template(run.strip() + "\n"), contract


def results_contract(obs: Observation) -> str:
    """The results the run leaves: answers when it has questions, metrics when the problem
    asks for a model of a target, a summary always."""
    contract = _run_texts()[1]
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
    return _run_texts()[0].safe_substitute(
        environment=environment,
        seed=str(obs.seed),
        results_contract=results_contract(obs),
        problem=obs.problem.strip(),
        questions=questions_text(obs),
        files="\n".join(f"- {f}" for f in obs.files) or "(none)",
        preview="\n\n".join(obs.data_preview) or "(no preview)",
    )


def template_path(event: str):  # -> Path
    return resource_dir() / f"{event}.md"


@lru_cache(maxsize=16)
def _template(event: str) -> tuple[Template, Template]:
    text = template_path(event).read_text(encoding="utf-8")
    system, _, user = text.partition(SEPARATOR)
    return Template(system.strip() + "\n"), Template(user.strip() + "\n")


def _substitute(obs: Observation, parts: dict[str, str | History], run: str) -> tuple[str, str]:
    text = {k: v.text() if isinstance(v, History) else v for k, v in parts.items()}
    system_t, user_t = _template(obs.event.value)
    # an empty ``$combined`` (or other closing part) leaves no blank lines behind
    system = system_t.safe_substitute(text).rstrip() + "\n"
    return run + "\n" + system, user_t.safe_substitute(text)


def render(obs: Observation, budget: int = PROMPT_BUDGET_CHARS) -> RenderedPrompt:
    """Render the template for ``obs.event`` within ``budget`` characters of history.

    Only the sections the template uses count. Over budget, the used history section of the
    lowest rank (then the largest) loses one whole item, until the prompt fits or no history
    is left; text a decision depends on is never cut, so a prompt may still exceed the budget.
    """
    parts, run = fields(obs), run_block(obs)
    system_t, user_t = _template(obs.event.value)
    used = {name for t in (system_t, user_t) for name in _placeholders(t)}
    system, user = _substitute(obs, parts, run)
    while len(system) + len(user) > budget:
        trimmable = [
            k for k, v in parts.items() if k in used and isinstance(v, History) and v.items
        ]
        if not trimmable:
            break
        name = min(trimmable, key=lambda k: (parts[k].rank, -len(parts[k].text())))  # type: ignore[union-attr]
        parts[name] = parts[name].drop_one()  # type: ignore[union-attr]
        system, user = _substitute(obs, parts, run)
    omitted = tuple(
        f"{k}: {label}" for k, v in parts.items() if isinstance(v, History) for label in v.dropped
    )
    # nothing of bcc's secrets goes to a model (docs/sandbox.md, "Secrets"): one pass over the prompt
    system, user = redact(system), redact(user)
    return RenderedPrompt(obs.event.value, system, user, omitted, run_chars=len(run) + 1)


def _placeholders(template: Template) -> set[str]:
    return {
        m.group("named") or m.group("braced") for m in template.pattern.finditer(template.template)
    } - {None}


def template_examples() -> list[tuple[str, str]]:
    """Every ```xml example of the templates, as (root element, text), template by template."""
    found = []
    for path in sorted(resource_dir().glob("*.md")):
        for block in re.findall(r"```xml\n(.*?)```", path.read_text(encoding="utf-8"), re.S):
            root = re.search(r"<([a-z_]+)[\s>]", block)
            if root:
                found.append((root.group(1), block))
    return found


def with_repair(
    prompt: RenderedPrompt, error: Exception, root: str, carried: str = ""
) -> RenderedPrompt:
    """The same prompt plus the exact validation error of the previous reply; ``carried``: the
    rejected part an earlier reply carried for this transition (compact rounds), shown whole."""
    if carried:
        note = (
            f"\n\n## The <{root}> your previous reply carried for this step was rejected\n"
            f"{error}\nIt was:\n```xml\n{carried}\n```\n"
            f"Answer now with exactly one <{root}> element that fixes this; put code in CDATA.\n"
        )
    else:
        note = (
            "\n\n## Your previous reply was rejected\n"
            f"{error}\n"
            f"Answer again with exactly one <{root}> element that fixes this; put code in CDATA.\n"
        )
    return replace(prompt, user=prompt.user + redact(note))
