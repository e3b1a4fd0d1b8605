"""A run whose steps failed never looks like a clean success (exit 9), through the real CLI
and litellm path against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.fakellm import FakeLLM, Request
from tests.integration.test_llm import bcc
from tests.scripted import one_stage

pytestmark = pytest.mark.timeout(180)


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
        assert "workflow completed with 1 failed step(s): work/compute" in proc.stderr
    status = bcc("status", str(tmp_path / "run"))[0].stdout
    assert "outcome   completed with 1 of 1 steps failed: work/compute" in status
