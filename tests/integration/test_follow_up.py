"""``bcc ask``: follow-up questions on a completed offline penguins run, asked as a user asks
them (the CLI), checked in the notebook, summary.json and the logs, and against pandas.

``bcc`` runs in this process with scripted kernels (``tests/inprocess.py``), or in a process
of its own for the one that is killed (``tests/scripted_bcc.py``): what is checked here is the
follow-up's workflow; kernels outliving a killed bcc are the fault matrix's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from tests.conftest import ROOT
from tests.inprocess import bcc_in_process
from tests.scripted_bcc import COMMAND

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

EXAMPLE = ROOT / "examples" / "penguins"
ISLAND = "Which island has the most penguins?"
SPECIES = "Which species has the lowest body mass?"
WHY = "Why are Gentoo penguins heavier?"


def _code(run: Path) -> list[str]:
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def _seqs(run: Path) -> list[int]:
    """The transitions ``bcc logs`` lists, as a user sees them."""
    listed = bcc_in_process("logs", str(run))
    assert listed.returncode == 0, listed.stderr
    return [int(line.split()[0]) for line in listed.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def completed(penguins_run: Path) -> Path:
    """The completed penguins run (``tests/conftest.py``): copied before it is changed."""
    return penguins_run


@pytest.fixture(scope="module")
def failed_then_resumed(
    completed: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """A follow-up on a copy of the completed run whose first behavior meets a bug (its 3rd
    agent call): a copy of the run as that left it, and the run once ``bcc resume`` finished
    the follow-up."""
    folder = tmp_path_factory.mktemp("asked")
    run, failed = folder / "run", folder / "failed"
    shutil.copytree(completed, run)
    proc = bcc_in_process("ask", str(run), ISLAND, "--quiet", env={"BCC_FAILPOINTS": "agent@3=bug"})
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    shutil.copytree(run, failed)
    resumed = bcc_in_process("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    return failed, run


@pytest.fixture(scope="module")
def asked(completed: Path, failed_then_resumed: tuple[Path, Path]) -> tuple[Path, Path]:
    """The completed run, and its copy after one follow-up (asked, failed, then resumed: a
    follow-up asked without a fault is test_api's and the other column's below)."""
    return completed, failed_then_resumed[1]


def test_a_follow_up_adds_a_section_that_answers_it_and_keeps_the_run(asked) -> None:
    before, run = asked
    earlier = _summary(before)
    summary = _summary(run)
    assert _code(run)[: len(_code(before))] == _code(before)  # the earlier cells, unchanged
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    headings = [c.source for c in nb.cells if c.metadata.get("bcc", {}).get("role") == "follow_up"]
    assert headings == [f"## Follow-up: {ISLAND}"]
    biscoe = pd.read_csv(EXAMPLE / "penguins.csv")["island"].value_counts().idxmax()
    (follow_up,) = summary["follow_ups"]
    (answer,) = follow_up["answers"]
    assert (follow_up["question"], answer["answered"], answer["value"]) == (ISLAND, True, biscoe)
    assert summary["answers"] == earlier["answers"]  # the problem's answers, as they were
    assert summary["verification"]["status"] == "passed"
    # what the run freed stays freed, though the kernel was rebuilt by re-running the cells
    ledger = {
        r["name"]: r["status"] for r in json.loads((run / "state.json").read_text())["ledger"]
    }
    assert ledger["raw_dataset"] == "deleted"
    seqs = _seqs(run)
    assert seqs == list(range(1, len(seqs) + 1))  # the logs number on
    assert (run / "logs" / f"{_seqs(before)[-1] + 1:04d}_FOLLOW_UP.xml").exists()
    assert (run / "follow_ups" / "1.md").read_text().strip() == ISLAND
    report = (run / "report.html").read_text()
    plan = report[report.index('id="plan"') : report.index('id="timeline"')]
    assert f"Follow-up 1: {ISLAND}" in plan and "follow_up_1/answer_follow_up_1" in plan
    status = bcc_in_process("status", str(run))
    assert f'follow-up 1. {ISLAND}\n          -> "{biscoe}"' in status.stdout, status.stdout
    md = (run / "summary.md").read_text()
    assert f"## Follow-up 1: {ISLAND}" in md and f"**{biscoe}**" in md
    # one new stage, no reloading or cleaning again
    assert follow_up["stages"] == ["follow_up_1"]
    new = [st for st in summary["stages"] if st["id"] not in {s["id"] for s in earlier["stages"]}]
    assert [t["id"] for st in new for t in st["steps"]] == ["answer_follow_up_1"]


def test_a_second_follow_up_in_a_row(asked, tmp_path: Path) -> None:
    _, first = asked
    run = tmp_path / "run"
    shutil.copytree(first, run)
    text = tmp_path / "follow_up.md"
    text.write_text(f"{SPECIES}\n\n{WHY}\n")
    proc = bcc_in_process("ask", str(run), "--file", str(text), "--quiet")
    assert proc.returncode == 0, proc.stderr
    summary = _summary(run)
    data = pd.read_csv(EXAMPLE / "penguins.csv")
    lightest = data.groupby("species")["body_mass_g"].mean().idxmin()
    first, second = summary["follow_ups"]
    assert first["question"] == ISLAND and first["answers"][0]["value"] == "Biscoe"
    assert [a["question"] for a in second["answers"]] == [SPECIES, WHY]
    assert second["answers"][0]["value"] == lightest
    assert not second["answers"][1]["answered"]  # not guessed: not answered, and why
    assert second["answers"][1]["text"].startswith("not answered: ")
    assert summary["follow_ups"][1]["stages"] == ["follow_up_2"]
    assert summary["verification"]["status"] == "passed"  # every answer, old and new
    replayed = tmp_path / "replayed"
    proc = bcc_in_process("replay", str(run), "--out", str(replayed), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert _code(replayed) == _code(run)
    assert _summary(replayed)["follow_ups"] == summary["follow_ups"]


def test_a_follow_up_killed_mid_way_resumes_to_the_same_notebook(asked, tmp_path: Path) -> None:
    before, reference = asked
    run, mark = tmp_path / "run", tmp_path / "paused"
    shutil.copytree(before, run)
    # the 4th checkpoint of the follow-up is its first action's: its cells have run
    env = {
        **os.environ,
        "BCC_FAILPOINTS": "write:state.json@4=pause",
        "BCC_FAILPOINTS_MARK": str(mark),
    }
    proc = subprocess.Popen(
        [*COMMAND, "ask", str(run), ISLAND, "--quiet"], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert mark.exists(), "the failpoint was never reached"
        nb = nbformat.read(run / "notebook.ipynb", as_version=4)
        assert any(c.metadata.get("bcc", {}).get("stage") == "follow_up_1" for c in nb.cells)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    resumed = bcc_in_process("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert _code(run) == _code(reference)
    assert _summary(run)["follow_ups"][0]["answers"][0]["value"] == "Biscoe"
    seqs = _seqs(run)
    assert seqs == list(range(1, len(seqs) + 1))
    replayed = bcc_in_process("replay", str(run), "--out", str(tmp_path / "replayed"), "--quiet")
    assert replayed.returncode == 0, replayed.stderr


def test_a_follow_up_asking_for_a_model_of_another_column(completed: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(completed, run)
    proc = bcc_in_process("ask", str(run), "Predict `sex` from the other measurements.", "--quiet")
    assert proc.returncode == 0, proc.stderr
    summary = _summary(run)
    (follow_up,) = summary["follow_ups"]
    (answer,) = follow_up["answers"]
    steps = [t["id"] for st in summary["stages"] if st["id"] == "follow_up_1" for t in st["steps"]]
    assert steps == ["model_follow_up_1"]
    sexes = pd.read_csv(EXAMPLE / "penguins.csv")["sex"].dropna()
    majority = sexes.value_counts(normalize=True).max()  # what ignoring the features scores
    values = answer["values"]
    assert abs(values["baseline_score"] - majority) < 0.02, values
    assert answer["value"] == values["cv_mean"] > values["baseline_score"] + 0.2
    # cv_std is the population sd of the five fold scores; the sample one is its other reading
    [reading] = answer["readings"]
    assert "ddof=1" in reading["reading"]
    assert abs(reading["values"]["cv_std"] - values["cv_std"] * (5 / 4) ** 0.5) <= 1.2e-4, answer
    assert summary["key_results"] == _summary(completed)["key_results"]  # the run's own model
    assert summary["verification"]["status"] == "passed"


def test_a_follow_up_that_fails_leaves_the_earlier_answers(
    completed: Path, failed_then_resumed: tuple[Path, Path]
) -> None:
    run, resumed = failed_then_resumed
    earlier = _summary(completed)
    summary = _summary(run)
    assert summary["final_state"] == "WORKFLOW_ABORTED"
    assert summary["answers"] == earlier["answers"]  # the earlier answers stand
    assert not summary["follow_ups"][0]["answers"][0]["answered"]
    assert _code(run) == _code(completed)  # no cell of the follow-up's ran
    # and resume finished it: the follow-up answered, the earlier answers as they were
    assert _summary(resumed)["follow_ups"][0]["answers"][0]["value"] == "Biscoe"
    assert _summary(resumed)["answers"] == earlier["answers"]


def test_only_a_completed_run_takes_a_follow_up(completed: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(completed, run)
    empty = bcc_in_process("ask", str(run), "  ")
    assert empty.returncode == 2 and "the follow-up question is empty" in empty.stderr
    state = json.loads((run / "state.json").read_text())
    state.update(fsm_state="WORKFLOW_ABORTED", resume_from="STEP_RUNNING")
    (run / "state.json").write_text(json.dumps(state))
    refused = bcc_in_process("ask", str(run), ISLAND)
    assert refused.returncode == 2, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "was interrupted" in refused.stderr and "bcc resume" in refused.stderr
    assert not (run / "follow_ups").exists()
