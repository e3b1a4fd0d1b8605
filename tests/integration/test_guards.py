"""Runner guards and cell faults with a scripted agent and a real kernel."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from lxml import etree

from tests.scripted import ScriptedAgent, make_runner, one_stage


def _logs(run: Path, event: str) -> list[etree._Element]:
    return [etree.parse(str(p)).getroot() for p in sorted((run / "logs").glob(f"*_{event}.xml"))]


def _guards(run: Path) -> list[dict]:
    lines = (run / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("type") == "guard"]


def test_g1_overrides_a_completion_claim_when_the_artifact_is_missing(tmp_path: Path):
    codes = iter(["x = 1", "result = x + 1"])
    agent = ScriptedAgent(
        lambda obs: one_stage(obs, lambda o: next(codes), complete_when=lambda o: True)
    )
    result = make_runner(tmp_path, agent, verify=False).run()
    assert result.final_state == "WORKFLOW_COMPLETED" and result.exit_code == 0
    g1 = [g for g in _guards(result.run_dir) if g["guard"] == "G1"]
    assert len(g1) == 1 and "result" in g1[0]["reason"]
    # the reflector of the second behavior saw the artifact present
    checks = _logs(result.run_dir, "COMPLETE_ACTION")[1].find("checks")
    assert checks.find("artifact").get("status") == "present"
    assert checks.find("criterion").get("status") == "passed"


def test_g3_caps_behaviors_then_marks_the_step_failed(tmp_path: Path):
    agent = ScriptedAgent(lambda obs: one_stage(obs, lambda o: f"y{o.iteration} = 1"))
    result = make_runner(tmp_path, agent, verify=False, max_behaviors_per_step=2).run()
    assert result.final_state == "WORKFLOW_COMPLETED"
    assert result.exit_code == 9 and "1 of 1 steps failed: work/compute" in result.message
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["counts"]["failed_steps"] == 1
    assert summary["outcome"] == "completed with 1 of 1 steps failed: work/compute"
    md = (result.run_dir / "summary.md").read_text()
    assert "**Outcome:** completed with 1 of 1 steps failed" in md.splitlines()[2]
    assert summary["counts"]["forced_transitions"] == 1
    assert summary["counts"]["failed_behaviors"] == 2
    assert summary["stages"][0]["steps"][0]["status"] == "failed"
    forced = [t for t in _logs(result.run_dir, "COMPLETE_STEP") if t.get("forced") == "true"]
    assert len(forced) == 1 and forced[0].find("guards/guard").get("name") == "G3"


def test_g3_abort_policy_fails_the_workflow(tmp_path: Path):
    agent = ScriptedAgent(lambda obs: one_stage(obs, lambda o: f"y{o.iteration} = 1"))
    result = make_runner(
        tmp_path, agent, verify=False, max_behaviors_per_step=1, on_step_failure="abort"
    ).run()
    assert result.final_state == "WORKFLOW_FAILED" and result.exit_code == 1


def test_failed_cells_stay_out_of_the_notebook_and_g7_refuses_a_repeat(tmp_path: Path):
    codes = iter(["result = 1 / 0", "result = 1 / 0", "result = 42"])
    agent = ScriptedAgent(lambda obs: one_stage(obs, lambda o: next(codes)))
    result = make_runner(tmp_path, agent).run()
    assert result.final_state == "WORKFLOW_COMPLETED"
    runs = _logs(result.run_dir, "COMPLETE_ACTION")
    assert runs[0].find("execution/cell").get("status") == "error"
    assert "ZeroDivisionError" in runs[0].find("execution/cell").text
    assert runs[1].find("execution") is None  # not re-run
    assert runs[1].find("guards/guard").get("name") == "G7"
    nb = nbformat.read(result.run_dir / "notebook.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code[2:] == ["result = 42"]
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["verification"]["status"] == "passed"
    assert summary["artifacts"]["result"] == 42


def test_timeout_interrupts_the_cell_and_the_run_continues(tmp_path: Path):
    codes = iter(
        ["import time\nstarted = 1\nwhile True:\n    time.sleep(0.05)", "result = started + 1"]
    )
    agent = ScriptedAgent(lambda obs: one_stage(obs, lambda o: next(codes)))
    result = make_runner(tmp_path, agent, verify=False, cell_timeout=3).run()
    assert result.final_state == "WORKFLOW_COMPLETED"
    first = _logs(result.run_dir, "COMPLETE_ACTION")[0]
    assert first.find("execution/cell").get("status") == "timeout"
    nb = nbformat.read(result.run_dir / "notebook.ipynb", as_version=4)
    assert [c.source for c in nb.cells if c.cell_type == "code"][2:] == ["result = started + 1"]
    # the interrupted cell's side effect survived (state kept), so the retry could use it
    assert _logs(result.run_dir, "COMPLETE_ACTION")[1].find("execution/cell").get("status") == "ok"


def test_dead_kernel_is_restarted_and_state_replayed(tmp_path: Path):
    codes = iter(["base = 41", "import os\nos._exit(1)", "result = base + 1"])
    seen_notes: list[str] = []

    def code(obs):
        seen_notes.extend(obs.notes)
        return next(codes)

    def answer(obs):
        seen_notes.extend(obs.notes)
        return one_stage(obs, code, complete_when=lambda o: o.iteration == 3)

    agent = ScriptedAgent(answer)
    result = make_runner(tmp_path, agent, verify=False, max_behaviors_per_step=3).run()
    assert result.final_state == "WORKFLOW_COMPLETED"
    cells = [
        t.find("execution/cell").get("status") for t in _logs(result.run_dir, "COMPLETE_ACTION")
    ]
    assert cells == ["ok", "dead", "ok"]
    assert any("restarted" in n for n in seen_notes)
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["counts"]["kernel_restarts"] == 1
    assert summary["artifacts"]["result"] == 42
