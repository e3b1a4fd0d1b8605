"""DABench-style trials (issue 23): build a problem from the benchmark's questions on one table,
then score a finished run by the benchmark's rule.

The questions and labels are read from ``../shared/dabench`` at run time (CC BY-NC 4.0: never
copied into the repository).

    problem TABLE OUT_DIR   writes OUT_DIR/problem.md (every question on TABLE, with its
                            constraints and answer format, as a numbered item) and prints the
                            path of the table
    score RUN_DIR [--relay RELAY_DIR]
                            prints, per question, the labelled names found with the right value,
                            then the run's model calls, calls per question, prompt characters
                            per question (from the relay's request files when given, else the
                            run's logs) and accuracy

The benchmark's rule: a question is right when every labelled name is present among the
answer's ``@name[value]`` pairs and each value equals the label as a string or, read as
floats, differs by less than 1e-6. A run's pairs are taken from ``answers[i].values`` in
summary.json, and from ``@name[value]`` written in an answer's value or text (the forms models
improvised before named values had a place).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[1]
DABENCH = ROOT.parent / "shared" / "dabench"
_PAIR = re.compile(r"@(\w+)\[([^\]]*)\]")


def _questions(table: str) -> list[dict]:
    rows = [json.loads(line) for line in (DABENCH / "questions.jsonl").open()]
    return [r for r in rows if r["file_name"] == table]


def _labels() -> dict[int, list[tuple[str, str]]]:
    rows = [json.loads(line) for line in (DABENCH / "labels.jsonl").open()]
    return {r["id"]: [tuple(p) for p in r["common_answers"]] for r in rows}


def problem_text(table: str) -> str:
    items = []
    for i, q in enumerate(_questions(table), 1):
        asked = q["question"].strip().splitlines()  # a question's own lines stay in its item
        lines = [f"{i}. {asked[0]}", *(f"   {ln.strip()}" for ln in asked[1:] if ln.strip())]
        lines += [f"   Constraints: {' '.join(q['constraints'].split())}"]
        lines += [f"   Answer format: {' '.join(q['format'].split())}"]
        items.append("\n".join(lines))
    return f"# Questions on {table}\n\n" + "\n\n".join(items) + "\n"


def _same(value: str, label: str) -> bool:
    if str(value).strip() == str(label).strip():
        return True
    try:
        return abs(float(value) - float(label)) < 1e-6
    except (TypeError, ValueError):
        return False


def _pairs(answer: dict) -> dict[str, str]:
    found: dict[str, str] = {}
    for blob in (answer.get("value"), answer.get("text")):
        if isinstance(blob, dict):
            found.update({str(k): str(v) for k, v in blob.items()})
        elif blob is not None:
            found.update(dict(_PAIR.findall(str(blob))))
    found.update({str(k): str(v) for k, v in (answer.get("values") or {}).items()})
    return found


def _key(text: str) -> str:
    """Letters and digits only, without a leading "1." or "Question 2:"."""
    text = re.sub(r"^\s*(?:question\s*\d+\s*[:.)]|\d{1,2}[.)])\s+", "", str(text), flags=re.I)
    return re.sub(r"[^0-9a-z]+", " ", text.lower()).strip()


def _matching(answers: list[dict], question: str, number: int) -> dict | None:
    """The answer entry of a question: its key starts with the question's text, or is its
    number."""
    head = _key(question)[:60]
    for answer in answers:
        key = _key(answer.get("question", ""))
        if key and (
            key.startswith(head)
            or head.startswith(key[:60])
            or key in (str(number), f"q{number}", f"q {number}")
        ):
            return answer
    return None


def _listed(run: Path) -> int:
    """How many questions the stage planner's prompt listed (its questions section)."""
    parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
    first = etree.parse(str(run / "logs" / "0001_START_WORKFLOW.xml"), parser).getroot()
    user = next(p.text or "" for p in first.iter("prompt") if p.get("role") == "user")
    section = user.split("## Questions the problem asks", 1)[-1].split("\n## ", 1)[0]
    return len(re.findall(r"^\d+\. ", section, re.MULTILINE))


def _prompt_chars(run: Path, relay: Path | None) -> int:
    if relay is not None:
        return sum(len(p.read_text(errors="replace")) for p in (relay / "q").glob("*.md"))
    parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
    total = 0
    for path in sorted((run / "logs").glob("[0-9]*_*.xml")):
        root = etree.parse(str(path), parser).getroot()
        total += sum(len(p.text or "") for p in root.iter("prompt"))
    return total


def score(run: Path, relay: Path | None = None) -> dict:
    summary = json.loads((run / "summary.json").read_text())
    text = (run / "problem.md").read_text()
    table = re.search(r"^# Questions on (.+)$", text, re.MULTILINE).group(1).strip()
    labels = _labels()
    questions = _questions(table)
    answers = summary.get("answers") or []
    pooled: dict[str, str] = {}
    for answer in answers:
        pooled.update(_pairs(answer))
    right = 0
    for i, q in enumerate(questions):
        answer = _matching(answers, q["question"], i + 1)
        # no entry of its own (a run that did not list the question): every answer's pairs
        pairs = _pairs(answer) if answer is not None else pooled
        expected = labels[q["id"]]
        ok = all(n in pairs and _same(pairs[n], v) for n, v in expected)
        right += ok
        shown = ", ".join(f"{n}={pairs.get(n, '—')} (label {v})" for n, v in expected)
        print(f"  q{i + 1} [{q['id']}] {'right' if ok else 'WRONG'}: {shown}")
    calls = summary["counts"]["llm_calls"]
    chars = _prompt_chars(run, relay)
    n = len(questions)
    figures = {
        "table": table,
        "questions": n,
        "listed": _listed(run),
        "right": right,
        "calls": calls,
        "calls_per_question": round(calls / n, 2),
        "prompt_chars_per_question": chars // n,
        "outcome": summary.get("outcome"),
    }
    print(json.dumps(figures))
    return figures


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "problem":
        out = Path(argv[2])
        out.mkdir(parents=True, exist_ok=True)
        (out / "problem.md").write_text(problem_text(argv[1]))
        print(DABENCH / "tables" / argv[1])
        return 0
    if len(argv) >= 2 and argv[0] == "score":
        relay = Path(argv[3]) if len(argv) >= 4 and argv[2] == "--relay" else None
        score(Path(argv[1]), relay)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
