"""DABench through ``bcc batch``: one run a table, each question scored by the benchmark's rule.

    python benchmarks/dabench.py DIR --model M --out OUT [--jobs N] [--tables K]
                                 [--executor local|dask --scheduler ADDR] [--api-base URL]
                                 [any option of bcc run, given to every run]

DIR is in DABench's own layout: ``questions.jsonl`` (id, question, constraints, format,
file_name, level, concepts), ``labels.jsonl`` (id, common_answers: [name, value] pairs) and
``tables/``. For each table (the first K, in the order the questions name them) OUT/problems/
TABLE/problem.md lists every question on it as a numbered item with its constraints and answer
format, so each ``@name`` becomes a named value of the answer; OUT/manifest.jsonl sends them
through ``bcc batch`` (OUT/batch; a second invocation skips the completed runs). A question is
right when every labelled name is among its answer's named values (or ``@name[value]`` pairs in
its value or text) and each equals the label as a string or, read as floats, within 1e-6.

Prints accuracy overall, by level and by concept, the questions with ill-formed labels apart
(no pair, a name twice, an empty value, a file path, the format's own placeholder, a name the
format does not ask for), runs that did not complete, and model calls, prompt tokens and wall
time per question. OUT/results.jsonl: one record per question (id, level, concepts, table,
expected, got, correct, ill_formed).

The benchmark's data is read from DIR at run time (``../shared/dabench`` here; CC BY-NC 4.0:
never copied into the repository).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from notebook_bcc.rundir.results import named_value_text

ROOT = Path(__file__).resolve().parents[1]
_PAIR = re.compile(r"@(\w+)\[([^\]]*)\]")


def questions(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "questions.jsonl").open() if line.strip()]


def labels(root: Path) -> dict[int, list[tuple[str, str]]]:
    rows = [json.loads(line) for line in (root / "labels.jsonl").open() if line.strip()]
    return {r["id"]: [(str(n), str(v)) for n, v in r["common_answers"]] for r in rows}


def problem_text(table: str, asked: list[dict]) -> str:
    items = []
    for i, q in enumerate(asked, 1):
        # a question's own lines stay in its item; its own number ("2. Which ...", as 50 of
        # the 137 dev questions have) gives way to the item's
        lines_ = re.sub(r"^\d+\.\s+", "", q["question"].strip()).splitlines()
        lines = [f"{i}. {lines_[0]}", *(f"   {ln.strip()}" for ln in lines_[1:] if ln.strip())]
        lines += [f"   Constraints: {' '.join(q['constraints'].split())}"]
        lines += [f"   Answer format: {' '.join(q['format'].split())}"]
        items.append("\n".join(lines))
    return f"# Questions on {table}\n\n" + "\n\n".join(items) + "\n"


def ill_formed(question: dict, label: list[tuple[str, str]]) -> str:
    """Why a label cannot be scored fairly ("" when it can)."""
    asked = dict(_PAIR.findall(question["format"]))
    names = [n for n, _ in label]
    if not label:
        return "no labelled pair"
    if len(set(names)) < len(names):
        return "a name labelled twice"
    for name, value in label:
        if not value.strip():
            return f"{name}: empty value"
        if re.search(r"[/\\]\w+.*\.\w{2,4}$", value):
            return f"{name}: a file path"
        if name in asked and value.strip() == asked[name].strip():
            return f"{name}: the format's placeholder"
        if name not in asked:
            return f"{name}: not asked for by the format"
    return ""


def same(value: str, label: str) -> bool:
    if str(value).strip() == str(label).strip():
        return True
    try:
        return abs(float(value) - float(label)) < 1e-6
    except (TypeError, ValueError):
        return False


def pairs(answer: dict) -> dict[str, str]:
    found: dict[str, str] = {}
    for blob in (answer.get("value"), answer.get("text")):
        if isinstance(blob, dict):
            found.update({str(k): named_value_text(v) for k, v in blob.items()})
        elif blob is not None:
            found.update(dict(_PAIR.findall(str(blob))))
    named = (answer.get("values") or {}).items()  # as bcc writes them: @name[value]
    found.update({str(k): named_value_text(v) for k, v in named if v is not None})
    return found


def _key(text: str) -> str:
    """Letters and digits only, without a leading "1." or "Question 2:"."""
    text = re.sub(r"^\s*(?:question\s*\d+\s*[:.)]|\d{1,2}[.)])\s+", "", str(text), flags=re.I)
    return re.sub(r"[^0-9a-z]+", " ", text.lower()).strip()


def matching(answers: list[dict], question: str, number: int, asked: int = 0) -> dict | None:
    """A question's answer. By number first: summary.json lists one answer per question of
    the problem, in order (then any the model added), so when it lists as many as were asked,
    the number-th is this question's. Else by text: an answer keyed by the question's number,
    then one whose question is this one's whole text, then the one answer whose text starts
    with this one's (or this one's with it). Two questions may share their first 60
    characters; their whole texts differ."""
    own = [a for a in answers if not a.get("added")]
    if asked and len(own) == asked and 1 <= number <= asked:
        return own[number - 1]
    head = _key(question)
    keys = [(_key(a.get("question", "")), a) for a in answers]
    for key, answer in keys:
        if key in (str(number), f"q{number}", f"q {number}"):
            return answer
    for key, answer in keys:
        if key and key == head:
            return answer
    starts = [a for key, a in keys if key and (key.startswith(head) or head.startswith(key))]
    return starts[0] if len(starts) == 1 else None


def score_table(summary: dict, asked: list[dict], truth: dict) -> list[dict]:
    """One record per question of a table's run (its summary.json; {} for no run)."""
    answers = summary.get("answers") or []
    pooled: dict[str, str] = {}
    for answer in answers:
        pooled.update(pairs(answer))
    records = []
    for i, q in enumerate(asked, 1):
        answer = matching(answers, q["question"], i, len(asked))
        got = pairs(answer) if answer is not None else pooled  # no entry: every answer's pairs
        expected = truth.get(q["id"], [])
        correct = bool(expected) and all(n in got and same(got[n], v) for n, v in expected)
        records.append(
            {
                "id": q["id"],
                "level": q.get("level", ""),
                "concepts": q.get("concepts", []),
                "table": q["file_name"],
                "expected": dict(expected),
                "got": {n: got.get(n) for n, _ in expected},
                "correct": correct,
                "ill_formed": ill_formed(q, expected),
            }
        )
    return records


def _safe(table: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(table).stem).strip("._-")[:90] or "table"


def prepare(root: Path, out: Path, tables: int | None) -> dict[str, list[dict]]:
    """problem.md per table and the manifest; the questions of each run id."""
    by_table: dict[str, list[dict]] = defaultdict(list)
    for q in questions(root):
        by_table[q["file_name"]].append(q)
    chosen = list(by_table)[:tables] if tables else list(by_table)
    rows, runs = [], {}
    for table in chosen:
        run_id = _safe(table)
        folder = out / "problems" / run_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "problem.md").write_text(problem_text(table, by_table[table]))
        data = (root / "tables" / table).resolve()
        rows.append({"id": run_id, "problem": str(folder / "problem.md"), "data": [str(data)]})
        runs[run_id] = by_table[table]
    (out / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return runs


def _rate(records: list[dict]) -> str:
    right = sum(r["correct"] for r in records)
    return f"{right}/{len(records)} = {right / len(records):.1%}" if records else "—"


def report(records: list[dict], batch: dict[str, dict], runs: dict[str, list[dict]]) -> dict:
    print(f"accuracy: {_rate(records)}")
    fair = [r for r in records if not r["ill_formed"]]
    print(f"accuracy without ill-formed labels: {_rate(fair)}")
    for level in ("easy", "medium", "hard"):
        print(f"  {level}: {_rate([r for r in records if r['level'] == level])}")
    concepts = sorted({c for r in records for c in r["concepts"]})
    for concept in concepts:
        print(f"  {concept}: {_rate([r for r in records if concept in r['concepts']])}")
    for r in records:
        if r["ill_formed"]:
            print(
                f"ill-formed label, question {r['id']}: {r['ill_formed']} (correct: {r['correct']})"
            )
    unfinished = {k: v for k, v in batch.items() if not v["status"].startswith("completed")}
    for run_id, rec in unfinished.items():
        print(f"run not completed: {run_id}: {rec['status']} {rec.get('message', '')}".rstrip())
    n = max(1, len(records))
    calls = sum(rec["llm_calls"] for rec in batch.values())
    tokens = sum(rec["prompt_tokens"] for rec in batch.values())
    wall = sum(rec["wall_s"] for rec in batch.values())
    figures = {
        "questions": len(records),
        "tables": len(runs),
        "correct": sum(r["correct"] for r in records),
        "accuracy": round(sum(r["correct"] for r in records) / n, 4),
        "runs_not_completed": len(unfinished),
        "model_calls_per_question": round(calls / n, 2),
        "prompt_tokens_per_question": round(tokens / n),
        "run_wall_s_per_question": round(wall / n, 2),
    }
    print(json.dumps(figures))
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tables", type=int)
    parser.add_argument("--executor", default="local", choices=("local", "dask"))
    parser.add_argument("--scheduler")
    parser.add_argument("--api-base")
    args, run_options = parser.parse_known_args(argv)  # the rest: options of every bcc run
    args.out.mkdir(parents=True, exist_ok=True)
    runs = prepare(args.dir, args.out, args.tables)
    command = [
        sys.executable, "-m", "notebook_bcc", "batch", str(args.out / "manifest.jsonl"),
        "--out", str(args.out / "batch"), "--jobs", str(args.jobs), "--executor", args.executor,
        "--model", args.model,
    ]  # fmt: skip
    command += ["--scheduler", args.scheduler] if args.scheduler else []
    command += ["--api-base", args.api_base] if args.api_base else []
    command += run_options
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, check=False)
    print(f"bcc batch exited {done.returncode} after {time.monotonic() - started:.0f} s")
    lines = (args.out / "batch" / "results.jsonl").read_text().splitlines()
    batch = {r["id"]: r for r in map(json.loads, lines)}
    truth = labels(args.dir)
    records = []
    for run_id, asked in runs.items():
        summary_path = Path(batch[run_id]["run_dir"]) / "summary.json" if run_id in batch else None
        summary = (
            json.loads(summary_path.read_text()) if summary_path and summary_path.exists() else {}
        )
        records += score_table(summary, asked, truth)
    with (args.out / "results.jsonl").open("w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    report(records, batch, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
