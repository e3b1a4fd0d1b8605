"""End-to-end offline runs through the CLI, and checks of DESIGN §4.

The examples run as a user runs them (``bcc`` and real kernels: a kernel of the run, the
verifier's); the question run and the 23 shared datasets run ``bcc`` in this process with
scripted kernels (``tests/inprocess.py``): the offline analyst's cells really run, and the
verifier really re-runs the notebook in a fresh namespace, without a process per kernel.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from lxml import etree

from notebook_bcc import fsm
from tests.conftest import FINAL_METRICS_KEYS, ROOT, example_run, manifest, problem_text
from tests.inprocess import bcc_in_process
from tests.scripted_kernel import ScriptedKernels

ROOTS = {t.event.value: t.root for t in fsm.TRANSITIONS if t.root}
EXAMPLES = sorted(p.parent for p in (ROOT / "examples").glob("*/problem.md"))


def check_run_dir(run: Path) -> dict:
    """Assert the run-directory contract; return summary.json."""
    for name in (
        "problem.md",
        "notebook.ipynb",
        "state.json",
        "events.jsonl",
        "summary.json",
        "summary.md",
    ):
        assert (run / name).is_file(), name
    for name in ("assets", "logs", "outputs"):
        assert (run / name).is_dir(), name
    state = json.loads((run / "state.json").read_text())
    assert state["schema_version"] == 1
    assert state["fsm_state"] == "WORKFLOW_COMPLETED"
    assert "path" in state["location"]
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5)
    assert nb.cells[1].metadata["tags"] == ["parameters"]
    assert nb.cells[2].metadata["bcc"]["role"] == "inputs"
    for cell in nb.cells[3:]:  # every generated cell says where it came from
        assert {"stage", "step", "behavior", "iteration", "seq"} <= set(cell.metadata["bcc"])
    variables = nb.metadata["bcc"]["variables"]
    assert variables and {"name", "status", "kind", "bytes", "created_by"} <= set(variables[0])
    # logs: parse, chain from IDLE to WORKFLOW_COMPLETED, agent transitions complete
    logs = sorted((run / "logs").glob("[0-9][0-9][0-9][0-9]_*.xml"))
    assert logs
    previous = "IDLE"
    branches: dict[str, str] = {}  # a fork's branch -> where its own chain stands
    for i, path in enumerate(logs, 1):
        t = etree.parse(str(path)).getroot()
        assert t.tag == "transition" and t.get("seq") == str(i)
        assert path.name == f"{i:04d}_{t.get('event')}.xml"
        branch = t.get("branch")
        if branch:  # a branch chains from the FORK's target, apart from the run's chain
            assert previous == "BEHAVIOR_RUNNING"
            assert t.get("from") == branches.get(branch, previous)
            branches[branch] = t.get("to")
            continue
        if t.get("event") == "FORK":
            branches = {}
        assert t.get("from") == previous
        previous = t.get("to")
        root = ROOTS.get(t.get("event"))
        if root:
            assert (
                t.find("request") is not None and t.find("request/prompt[@role='user']") is not None
            )
            assert t.find("response").get("status") == "ok"
            assert t.find("payload")[0].tag == root
        if t.get("event") == "COMPLETE_ACTION":
            assert t.find("execution") is not None and t.find("checks") is not None
    assert previous == "WORKFLOW_COMPLETED"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["final_state"] == "WORKFLOW_COMPLETED"
    assert set(summary["counts"]) >= {
        "transitions",
        "llm_calls",
        "cells",
        "failed_behaviors",
        "forced_transitions",
    }
    assert set(summary["usage"]) >= {"prompt_tokens", "completion_tokens", "cost_usd"}
    assert summary["counts"]["transitions"] == len(logs)
    return summary


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_offline_to_completion(
    example: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str
):
    out, proc = example_run(tmp_path_factory, worker_id, example.name)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    summary = check_run_dir(out)
    assert summary["verification"]["status"] == "passed", summary["verification"]
    assert list((out / "outputs").glob("*.png")), "EDA writes at least one plot"
    nb = nbformat.read(out / "notebook.ipynb", as_version=4)
    images = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "image/png" in o.get("data", {})
    ]
    assert images, "plots are shown inline"
    if "target:" in (example / "problem.md").read_text():
        metrics = summary["artifacts"]["final_metrics"]
        assert set(metrics) >= FINAL_METRICS_KEYS
        assert metrics["cv_mean"] > metrics["baseline_score"]
        assert summary["key_results"] == metrics
        assert summary["verification"]["results"] == "reproduced"
        md = (out / "summary.md").read_text()
        assert f"- cv_mean: {metrics['cv_mean']}" in md.split("## Key results")[1]
    else:  # an exploratory run: what it found, from the analysis summary cell
        assert summary["findings"]["source"] == "analysis_summary"
        assert summary["findings"]["text"] == summary["artifacts"]["analysis_summary"].strip()
        md = (out / "summary.md").read_text()
        shown = md.split("## Findings")[1].split("\n## ")[0]  # its own headings go down two
        text = summary["findings"]["text"]
        assert all(line in shown for line in text.splitlines() if not line.startswith("#"))


def test_offline_answers_what_the_table_answers_and_lists_the_rest(tmp_path: Path):
    example = ROOT / "examples" / "penguins"
    frame = pd.read_csv(example / "penguins.csv")
    problem = tmp_path / "problem.md"
    problem.write_text(
        "# Penguin questions\n\n1. How many penguins were measured?\n"
        "2. Which island has the heaviest penguins on average?\n"
        "3. Which species has the largest average flipper length?\n"
        "4. Which island has the most penguins?\n"
    )
    out = tmp_path / "run"
    proc = bcc_in_process(
        "run", str(problem), str(example / "penguins.csv"), "--out", str(out), "--quiet"
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = check_run_dir(out)
    answers = {a["question"]: a for a in summary["answers"]}
    assert list(answers) == [
        "How many penguins were measured?",
        "Which island has the heaviest penguins on average?",
        "Which species has the largest average flipper length?",
        "Which island has the most penguins?",
    ]
    flipper = frame.groupby("species")["flipper_length_mm"].mean().idxmax()
    assert answers["Which species has the largest average flipper length?"]["value"] == flipper
    assert answers["Which island has the most penguins?"]["value"] == frame["island"].mode()[0]
    assert not answers["How many penguins were measured?"]["answered"]
    md = (out / "summary.md").read_text()
    assert (
        "1. How many penguins were measured? *not answered* (the offline analyst answers only" in md
    )
    assert f"4. Which island has the most penguins? **{frame['island'].mode()[0]}**" in md
    status = bcc_in_process("status", str(out))
    assert "answer    2. Which island has the heaviest penguins on average? -> not answered" in (
        status.stdout
    )


SHARED_FILES = [row["file"] for row in manifest()] or ["penguins_raw.csv"]


@pytest.mark.shared
@pytest.mark.parametrize("name", SHARED_FILES)
def test_shared_dataset_runs_offline(name: str, shared_datasets: Path, tmp_path: Path):
    row = next(r for r in manifest() if r["file"] == name)
    problem = tmp_path / "problem.md"
    problem.write_text(problem_text(row))
    out = tmp_path / "run"
    proc = bcc_in_process(
        "run", str(problem), str(shared_datasets / name), "--out", str(out), "--quiet",
        kernels=ScriptedKernels(draws=True),  # a figure of a real table can fail as it is drawn
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = check_run_dir(out)
    assert summary["verification"]["status"] == "passed", summary["verification"]
    if row["target"]:
        metrics = summary["artifacts"]["final_metrics"]
        assert metrics["task"] == row["task"], metrics
