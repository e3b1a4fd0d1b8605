"""A run whose steps failed never looks like a clean success (exit 9), through the real CLI
and litellm path against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.fakellm import FakeLLM, Request
from tests.integration.test_llm import bcc_scripted as bcc
from tests.scripted import one_stage

pytestmark = [pytest.mark.check, pytest.mark.timeout(180)]


def never_complete(req: Request) -> str:
    obs = SimpleNamespace(event=req.transition, behaviors_in_step=0, artifacts=())
    return one_stage(obs, lambda o: "result = 1", complete_when=lambda o: False)


@pytest.mark.parametrize("as_json", [False, True])
def test_a_run_with_a_failed_step_exits_9_and_says_so(tmp_path: Path, as_json: bool) -> None:
    problem, data = tmp_path / "problem.md", tmp_path / "d.csv"
    problem.write_text("Describe the numbers.\n")
    data.write_text("a,b\n1,2\n3,4\n")
    with FakeLLM(policy=never_complete) as fake:
        proc, _, _ = bcc(
            "run", str(problem), str(data), "--model", "openai/fake-model",
            "--api-base", fake.url, "--out", str(tmp_path / "run"), "--no-verify",
            "--max-behaviors-per-step", "1", *(["--json"] if as_json else []),
        )  # fmt: skip
    assert proc.returncode == 9, proc.stderr[-1000:]
    if as_json:
        result = json.loads(proc.stdout.splitlines()[-1])
        assert result["exit_code"] == 9 and result["failed_steps"] == 1
        assert result["outcome"] == "completed with 1 of 1 steps failed: work/compute"
    else:
        assert proc.stdout.startswith("WORKFLOW_COMPLETED with 1 failed step(s): ")
        assert "workflow completed with 1 of 1 steps failed: work/compute" in proc.stderr
    status = bcc("status", str(tmp_path / "run"))[0].stdout
    assert "outcome   completed with 1 of 1 steps failed: work/compute" in status


def test_a_file_whose_reader_fails_skips_what_depends_on_it(tmp_path: Path) -> None:
    """The loading step fails (the file is not Parquet); every step that needs its table is
    skipped at once (G8): no agent call and no cell for it, and the outcome says so first."""
    problem, data = tmp_path / "problem.md", tmp_path / "sales.parquet"
    problem.write_text("Predict `amount` from the other columns.\n")
    data.write_bytes(b"this is not a parquet file\n" * 20)
    run = tmp_path / "run"
    proc, _, _ = bcc("run", str(problem), str(data), "--out", str(run), "--no-verify")
    assert proc.returncode == 9, proc.stderr[-1000:]
    assert proc.stdout.startswith("WORKFLOW_COMPLETED with 1 failed step(s), ")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["counts"]["failed_steps"] == 1 and summary["counts"]["skipped"] >= 4
    outcome = (run / "summary.md").read_text().splitlines()[2]
    assert outcome.startswith("**Outcome:** completed with 1 of ")
    assert "steps failed: data_existence_establishment/data_loading" in outcome
    assert (
        "skipped because a variable they need was never made: data_integrity_assessment" in outcome
    )
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    g8 = [e for e in events if e["type"] == "guard" and e["guard"] == "G8"]
    assert any("raw_dataset was never made" in e["reason"] for e in g8)
    assert len(g8) == summary["counts"]["skipped"]
    # nothing ran for a skipped stage or step: every transition after loading is bookkeeping,
    # a stage reflection, or the planning of a stage that could start
    located = [e for e in events if e["type"] == "transition" and e["agent"]]
    behaviors = {e["location"].split("/")[1] for e in located if e["location"].count("/") >= 2}
    assert behaviors == {"data_loading"}
    notebook = (run / "notebook.ipynb").read_text()
    assert "**Skipped.** Data quality: cannot start: the required raw_dataset was never" in notebook
