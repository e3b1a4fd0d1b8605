"""Variable lifecycle in a real run: G5 refusals, safe deprecation frees the kernel and the prompts."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from lxml import etree

from notebook_bcc.contract.observation import Observation
from tests.scripted import ScriptedAgent, make_runner

STAGES = (
    '<stages><stage id="work" title="Work"><goal>g</goal><verified_artifacts>'
    '<variable name="result">x</variable></verified_artifacts></stage></stages>'
)
STEPS = (
    '<steps><step id="prepare" title="Prepare"><goal>g</goal><verified_artifacts>'
    '<variable name="scratch_table">x</variable></verified_artifacts></step>'
    '<step id="finish" title="Finish"><goal>g</goal><verified_artifacts><variable name="result">x'
    '</variable></verified_artifacts><required_variables><variable name="keep_me">y</variable>'
    "</required_variables></step></steps>"
)
CODE = {
    "prepare": "scratch_table = list(range(100_000))\nkeep_me = 2",
    "finish": "print('scratch_table' in globals())\nresult = keep_me * 21",
}


def answer(obs: Observation) -> str:
    step = obs.step.id if obs.step else ""
    if obs.event == "START_WORKFLOW":
        return STAGES
    if obs.event == "START_STEP":
        return STEPS
    if obs.event == "START_BEHAVIOR":
        art = "scratch_table" if step == "prepare" else "result"
        return (
            f'<behavior id="{step}_b1" step_id="{step}"><agent>A</agent><task>t</task>'
            f'<outputs><artifact name="{art}">x</artifact></outputs></behavior>'
        )
    if obs.event == "COMPLETE_ACTION":
        return f"<actions><add-code2run><![CDATA[{CODE[step]}]]></add-code2run></actions>"
    if obs.event == "COMPLETE_STEP":
        return (
            '<reflection current_step_is_complete="true"><evaluation><goal_achievement>'
            "<status>achieved</status><reasoning>r</reasoning></goal_achievement></evaluation>"
            "<decision><next_state>STEP_COMPLETED</next_state><reasoning>r</reasoning></decision>"
            "</reflection>"
        )
    last = step == "finish"
    return (
        f'<stage_reflection stage_is_complete="{str(last).lower()}"><step_evaluation>'
        f"<step_id>{step}</step_id><completion_status>complete</completion_status></step_evaluation>"
        f"<decision><next_state>{'STAGE_COMPLETED' if last else 'STEP_RUNNING'}</next_state>"
        "<reasoning>r</reasoning></decision><variable_management>"
        + (
            ""
            if last
            else '<deprecate><variable name="keep_me" replacement="result" safe="true">x</variable>'
            '<variable name="scratch_table" replacement="result" safe="true">big</variable></deprecate>'
        )
        + "</variable_management></stage_reflection>"
    )


def test_g5_refuses_and_safe_deprecation_frees(tmp_path: Path):
    result = make_runner(tmp_path, ScriptedAgent(answer)).run()
    assert result.final_state == "WORKFLOW_COMPLETED", result.message
    run = result.run_dir
    guards = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    g5 = [g for g in guards if g.get("guard") == "G5"]
    assert len(g5) == 1 and "keep_me" in g5[0]["reason"] and "finish" in g5[0]["reason"]
    freed = [g for g in guards if g.get("type") == "freed"]
    assert freed and freed[0]["variables"] == ["scratch_table"]
    # the kernel no longer had it when the next step ran
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    finish = next(c for c in nb.cells if c.cell_type == "code" and "result = keep_me" in c.source)
    assert finish.outputs[0]["text"].strip() == "False"
    # and no later prompt lists it as a live variable, only as deleted, with its replacement
    later = sorted(run.glob("logs/*.xml"))
    stage_reflection = next(i for i, p in enumerate(later) if p.name.endswith("COMPLETE_STAGE.xml"))
    for path in later[stage_reflection + 1 :]:
        for prompt in etree.parse(str(path)).getroot().iter("prompt"):
            text = prompt.text or ""
            assert "- scratch_table" not in text
            if prompt.get("role") == "user" and "## Variables in the kernel" in text:
                assert "scratch_table (deprecated by work; use result instead)" in text, text[
                    -1500:
                ]
    state = json.loads((run / "state.json").read_text())
    status = {v["name"]: v["status"] for v in state["ledger"]}
    assert status["scratch_table"] == "deleted" and status["keep_me"] in ("alive", "retained")
    assert {v["name"] for v in nb.metadata["bcc"]["variables"]} >= {"scratch_table", "result"}
