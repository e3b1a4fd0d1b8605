"""A run recorded by release 0.1.0 (tests/fixtures/replay_v0_1, see its README) still replays
with this release, both through ``bcc replay`` and through ``bcc run --model replay:``. The
recording's compatibility is the point, not its kernel: ``bcc`` runs in this process with
scripted kernels (``tests/inprocess.py``), its cells and the verification really run."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tests.conftest import ROOT
from tests.inprocess import bcc_in_process

pytestmark = pytest.mark.timeout(240)

RECORDED = ROOT / "tests" / "fixtures" / "replay_v0_1"


def _check(run: Path) -> None:
    summary = json.loads((run / "summary.json").read_text())
    assert summary["final_state"] == "WORKFLOW_COMPLETED"
    assert summary["counts"]["transitions"] == 20 and summary["counts"]["failed_behaviors"] == 1
    assert summary["verification"]["status"] == "passed"
    assert summary["artifacts"]["final_answers"] == {"mean width": 3.5}
    ledger = {
        v["name"]: v["status"] for v in json.loads((run / "state.json").read_text())["ledger"]
    }
    assert ledger["raw"] == "deleted" and ledger["widgets"] == "retained"
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    nbformat.validate(nb)
    recorded = nbformat.read(RECORDED / "notebook.ipynb", as_version=4)
    assert [c.source for c in nb.cells if c.cell_type == "code"] == [
        c.source for c in recorded.cells if c.cell_type == "code"
    ]


def test_bcc_replay_of_a_0_1_recording(tmp_path: Path) -> None:
    proc = bcc_in_process("replay", str(RECORDED), "--out", str(tmp_path / "again"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    _check(tmp_path / "again")


def test_model_replay_of_a_0_1_recording(tmp_path: Path) -> None:
    proc = bcc_in_process(
        "run", str(RECORDED / "problem.md"), str(RECORDED / "assets" / "widgets.csv"),
        "--model", f"replay:{RECORDED}", "--out", str(tmp_path / "again"), "--quiet",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _check(tmp_path / "again")
