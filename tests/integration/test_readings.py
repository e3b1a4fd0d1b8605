"""Answers with their readings (issue 42, item 2) through the model's path: the real CLI and
litellm over HTTP to ``tests.fakellm.FakeLLM`` on 127.0.0.1, ``bcc`` in this process with
scripted kernels (``tests/inprocess.py``), the verification on.

The scripted model answers two questions in the kernel. The 95th percentile's headline is
numpy's linear interpolation and carries two other readings (the nearest observation, the next
one up); they must reach summary.json (``answers[i].readings``), summary.md, ``bcc status`` and
report.html, flagged as giving other values. The standard deviation's headline is the
population one; its readings are the sample sd and the sd of one bootstrap resample drawn
without a seed, which the re-execution draws again: that reading alone is a verification
mismatch, named by question, reading and name.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.fakellm import FakeLLM, Request, scripted_reply
from tests.integration.test_llm import bcc_scripted as bcc
from tests.integration.test_llm import model_run

pytestmark = [pytest.mark.check, pytest.mark.timeout(240)]

KEYS = (
    "Report the 95th percentile of the income column.",
    "Report the standard deviation of the income column.",
)
PROBLEM = (
    "# Income spread in people.csv\n\n"
    f"1. {KEYS[0]} Answer format: @p95_income[value]\n\n"
    f"2. {KEYS[1]} Answer format: @std_income[value]\n"
)
NEAREST = "the nearest observation (numpy method nearest)"
HIGHER = "the next observation up (numpy method higher)"
SAMPLE = "sample sd (ddof=1)"
BOOTSTRAP = "sd of one bootstrap resample, drawn without a seed"

CODE = """
import numpy as np
import pandas as pd

people = pd.read_csv(user_submit_files[0])
income = people["income"].to_numpy()
_p95 = {m: round(float(np.quantile(income, 0.95, method=m)), 3)
        for m in ("linear", "nearest", "higher")}
_sd0, _sd1 = round(float(income.std(ddof=0)), 4), round(float(income.std(ddof=1)), 4)
_boot = np.random.default_rng().choice(income, size=income.size)  # no seed: another draw each time
final_answers = {
    KEY0: {"value": _p95["linear"], "text": "linear interpolation (numpy's default)",
           "values": {"p95_income": _p95["linear"]},
           "readings": [{"reading": NEAREST, "values": {"p95_income": _p95["nearest"]}},
                        {"reading": HIGHER, "values": {"p95_income": _p95["higher"]}}]},
    KEY1: {"value": _sd0, "text": "population sd (ddof=0)", "values": {"std_income": _sd0},
           "readings": [{"reading": SAMPLE, "values": {"std_income": _sd1}},
                        {"reading": BOOTSTRAP,
                         "values": {"std_income": round(float(_boot.std()), 6)}}]},
}
print(final_answers)
"""
for name, text in {"KEY0": KEYS[0], "KEY1": KEYS[1], "NEAREST": NEAREST, "HIGHER": HIGHER,
                   "SAMPLE": SAMPLE, "BOOTSTRAP": BOOTSTRAP}.items():  # fmt: skip
    CODE = CODE.replace(name, repr(text))


def policy(req: Request) -> str:
    """One stage, one step, one behavior whose action makes ``final_answers`` with ``CODE``."""
    return scripted_reply(req.transition, CODE, artifact="final_answers")


@dataclass
class Done:
    run: Path
    returncode: int
    stderr: str
    income: np.ndarray

    @property
    def summary(self) -> dict:
        return json.loads((self.run / "summary.json").read_text())


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Done]:
    tmp = tmp_path_factory.mktemp("readings")
    income = np.random.default_rng(5).normal(50, 12, 80).round(1)
    # the readings give other values than the headline on this table
    assert (
        len({float(np.quantile(income, 0.95, method=m)) for m in ("linear", "nearest", "higher")})
        == 3
    )
    pd.DataFrame({"income": income}).to_csv(tmp / "people.csv", index=False)
    (tmp / "problem.md").write_text(PROBLEM)
    with FakeLLM(policy=policy) as fake:
        proc = model_run(fake, tmp / "problem.md", tmp / "people.csv", tmp / "run")
        assert [r.transition for r in fake.requests][-1] == "COMPLETE_STAGE"
    yield Done(tmp / "run", proc.returncode, proc.stderr, income)


def p95(done: Done, method: str) -> float:
    return round(float(np.quantile(done.income, 0.95, method=method)), 3)


def test_both_readings_reach_summary_json(done: Done) -> None:
    answers = done.summary["answers"]
    assert [a["question"] for a in answers] == list(KEYS)
    first, second = answers
    assert first["value"] == p95(done, "linear")
    assert first["values"] == {"p95_income": p95(done, "linear")}
    assert first["readings"] == [
        {"reading": NEAREST, "values": {"p95_income": p95(done, "nearest")}},
        {"reading": HIGHER, "values": {"p95_income": p95(done, "higher")}},
    ]
    assert first["readings_differ"] is True
    assert [r["reading"] for r in second["readings"]] == [SAMPLE, BOOTSTRAP]
    assert second["readings"][0]["values"] == {
        "std_income": round(float(done.income.std(ddof=1)), 4)
    }


def test_summary_md_and_status_list_each_reading_under_its_answer(done: Done) -> None:
    md = (done.run / "summary.md").read_text()
    flag = " (gives other values: the answer depends on the reading)"
    lines = [
        f"   other reading, {NEAREST}: @p95_income[{p95(done, 'nearest')!r}]{flag}",
        f"   other reading, {HIGHER}: @p95_income[{p95(done, 'higher')!r}]{flag}",
    ]
    assert "\n".join(lines) in md
    proc, _, _ = bcc("status", str(done.run))
    assert proc.returncode == 0, proc.stderr
    assert all(line.strip() in proc.stdout for line in lines)


def test_report_html_shows_the_readings_flagged(done: Done) -> None:
    report = (done.run / "report.html").read_text()
    for reading, method in ((NEAREST, "nearest"), (HIGHER, "higher")):
        shown = html.escape(f"other reading, {reading}: @p95_income[{p95(done, method)!r}]")
        assert f'<span class="differ">{shown} (gives other values' in report, reading
    assert html.escape(f"other reading, {SAMPLE}: @std_income[") in report


def test_a_reading_the_re_execution_does_not_reproduce_is_a_mismatch(done: Done) -> None:
    assert done.returncode == 10, done.stderr  # completed, but the notebook does not re-run
    v = done.summary["verification"]
    assert v["status"] == "failed" and v["results"] == "differ", v
    drawn = done.summary["answers"][1]["readings"][1]["values"]["std_income"]
    [line] = v["mismatches"]  # the headlines and the other readings are reproduced
    where = f"final_answers[{KEYS[1]!r}]['readings'][1]['values']['std_income']"
    assert line.startswith(f"{where}: {drawn!r} in the run, ") and line.endswith(" on re-execution")
    again = float(line.removeprefix(f"{where}: {drawn!r} in the run, ").split()[0])
    assert again != drawn
