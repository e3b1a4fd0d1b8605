"""No answer is lost (issue 39), through the real CLI and litellm path against the loopback
server, with real kernels: one answer too large to report in full is reported by its type,
size and head, the other six stand, and the behavior reflector of the step that built it is
told in its prompt, so a model could fix it in the same run. The problem's preface is not a
question (keys "1"-"7" are its items), and named values read as Python writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakellm import FakeLLM
from tests.integration.test_llm import MODEL
from tests.integration.test_llm import bcc_scripted as bcc

pytestmark = [pytest.mark.check, pytest.mark.timeout(240)]

PROBLEM = (
    "# Seven answers\n\n"
    + "\n".join(f"{i}. Compute answer number {i} of the table." for i in range(1, 7))
    + "\n7. Return the cleaned table as CSV text.\n"
)

CODE = """
import pandas as pd
frame = pd.read_csv(user_submit_files[0])
final_answers = {str(i): {"value": i * 1.5, "text": f"answer {i}"} for i in range(1, 7)}
final_answers["1"]["values"] = {"is_normal": False, "n": None, "xs": [1, 2]}
_table = "a,b\\n" + "1,2\\n" * 500_000  # 2 MB of CSV text
final_answers["7"] = {"value": _table, "text": "the cleaned table", "values": {"rows": 500_000}}
result = len(frame)
"""


def test_a_2mb_answer_is_shortened_and_the_six_others_stand(tmp_path: Path) -> None:
    problem, data, run = tmp_path / "problem.md", tmp_path / "t.csv", tmp_path / "run"
    problem.write_text(PROBLEM)
    data.write_text("a,b\n1,2\n3,4\n")
    with FakeLLM(code=CODE) as fake:
        proc, _, _ = bcc(
            "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
            "--out", str(run), "--quiet",
        )  # fmt: skip
        requests = list(fake.requests)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    answers = summary["answers"]
    assert [a["value"] for a in answers[:6]] == [i * 1.5 for i in range(1, 7)]
    assert all(a["answered"] and "shortened" not in a for a in answers[:6])
    seventh = answers[6]
    assert seventh["answered"] and seventh["values"] == {"rows": 500_000}
    assert seventh["value"]["type"] == "str" and seventh["value"]["size"] == 2_000_004
    assert seventh["shortened"] == [
        "value: str of 2,000,004 characters (over 8,000 characters of JSON)"
    ]
    assert summary["verification"]["status"] == "passed"
    assert [a["question"] for a in answers[:2]] == [
        "Compute answer number 1 of the table.",
        "Compute answer number 2 of the table.",
    ]
    assert len(answers) == 7, "the preface is no question, and no answer was added"
    md = (run / "summary.md").read_text()
    assert "   @is_normal[False] @n[None] @xs[1, 2]" in md
    assert "shortened (too large to report in full): value: str of 2,000,004 characters" in md
    reflector = [r.last_user for r in requests if r.transition == "COMPLETE_STEP"]
    assert reflector, "the behavior reflector was asked"
    note = (
        "note: final_answers.7.value: str of 2,000,004 characters (over 8,000 characters of JSON)"
    )
    assert f"{note}: too large to report in full" in reflector[0]
