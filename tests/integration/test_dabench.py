"""``benchmarks/dabench.py`` end to end: a DABench-format fixture written here, two tables
run through ``bcc batch`` with litellm against the scripted loopback server, whose code
answers one question wrong on purpose; the scores say which."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fakellm import FakeLLM, Request, scripted_reply
from tests.integration.test_llm import MODEL, _env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

QUESTIONS = [
    {"id": 1, "question": "Calculate the mean of x.", "file_name": "one.csv", "level": "easy",
     "concepts": ["Summary Statistics"], "constraints": "Round to two decimals.",
     "format": "@mean_x[value] where value is rounded to two decimals."},
    {"id": 2, "question": "Count the rows whose x is above 2.", "file_name": "one.csv",
     "level": "medium", "concepts": ["Comprehensive Data Preprocessing"], "constraints": "None.",
     "format": "@rows_above[count]"},
    {"id": 3, "question": "What is the maximum of y?", "file_name": "two.csv", "level": "hard",
     "concepts": ["Summary Statistics"], "constraints": "As an integer.", "format": "@max_y[value]"},
    {"id": 4, "question": "Which label is the most frequent?", "file_name": "two.csv",
     "level": "easy", "concepts": ["Distribution Analysis"], "constraints": "None.",
     "format": "@top_label[label]"},
]  # fmt: skip
LABELS = {
    1: [["mean_x", "2.5"]],
    2: [["rows_above", "3"]],
    3: [["max_y", "9"]],
    4: [["top_label", ""]],
}  # fmt: skip  (2: the code counts 2; 4: an empty label)

ONE = """import pandas as pd
df = pd.read_csv(user_submit_files[0])
final_answers = {
    "Calculate the mean of x.": {"value": round(float(df.x.mean()), 2), "text": "mean",
        "values": {"mean_x": round(float(df.x.mean()), 2)}},
    "Count the rows whose x is above 2.": {"value": int((df.x > 2).sum()), "text": "count",
        "values": {"rows_above": int((df.x > 2).sum())}},
}
"""
TWO = """import pandas as pd
df = pd.read_csv(user_submit_files[0])
final_answers = {
    "What is the maximum of y?": {"value": int(df.y.max()), "text": "max",
        "values": {"max_y": int(df.y.max())}},
    "Which label is the most frequent?": {"value": df.label.mode()[0], "text": "mode",
        "values": {"top_label": df.label.mode()[0]}},
}
"""


def _policy(req: Request) -> str:
    code = ONE if "Questions on one.csv" in req.system else TWO  # the run's block
    return scripted_reply(req.transition, code, artifact="final_answers")


def _fixture(root: Path) -> Path:
    bench = root / "bench"
    (bench / "tables").mkdir(parents=True)
    (bench / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    labels = [{"id": i, "common_answers": pairs} for i, pairs in LABELS.items()]
    (bench / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    (bench / "tables" / "one.csv").write_text("x\n1\n2\n3\n4\n")  # mean 2.5; 2 rows above 2
    (bench / "tables" / "two.csv").write_text("y,label\n3,a\n9,b\n4,b\n")
    return bench


def test_dabench_scores_right_and_wrong_answers_through_a_batch(tmp_path: Path) -> None:
    bench, out = _fixture(tmp_path), tmp_path / "out"
    with FakeLLM(policy=_policy) as fake:
        proc = subprocess.run(
            [sys.executable, "benchmarks/dabench.py", str(bench), "--model", MODEL,
             "--api-base", fake.url, "--out", str(out), "--jobs", "2"],
            capture_output=True, text=True, timeout=500, env=_env(), cwd=ROOT,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        asked = {r.transition for r in fake.requests}
    assert "START_WORKFLOW" in asked
    records = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").open())}
    assert {i: r["correct"] for i, r in records.items()} == {1: True, 2: False, 3: True, 4: False}
    assert records[2]["got"] == {"rows_above": "2"} and records[2]["expected"] == {
        "rows_above": "3"
    }
    assert records[4]["ill_formed"] == "top_label: empty value"
    assert not any(records[i]["ill_formed"] for i in (1, 2, 3))
    assert "accuracy: 2/4 = 50.0%" in proc.stdout
    assert "accuracy without ill-formed labels: 2/3" in proc.stdout
    assert "  hard: 1/1 = 100.0%" in proc.stdout and "  medium: 0/1 = 0.0%" in proc.stdout
    assert "ill-formed label, question 4: top_label: empty value" in proc.stdout
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["tables"] == 2 and figures["runs_not_completed"] == 0
    assert figures["model_calls_per_question"] > 0 and figures["prompt_tokens_per_question"] > 0
    manifest = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    assert [m["id"] for m in manifest] == ["one", "two"]
    problem = (out / "problems" / "one" / "problem.md").read_text()
    assert "1. Calculate the mean of x." in problem and "Answer format: @mean_x[value]" in problem
