"""When the offline analyst forks its model comparison (issue 40, item 8): only when the
problem's front matter says `fork: yes` (measured, a fork made the run slower at every table
size tried), whatever the table's size."""

from __future__ import annotations

import pytest

from notebook_bcc.agents.offline import OfflineAnalyst
from notebook_bcc.contract.observation import Observation, StageView, StepView
from notebook_bcc.contract.prompts import RenderedPrompt
from notebook_bcc.fsm import Event
from notebook_bcc.rundir.ledger import VariableRecord

STEP = StepView("model_selection", "Comparing models", "Compare.", "running")
STAGE = StageView("predictive_modelling", "Modelling", "Model it.", "running", steps=(STEP,))
COLUMNS = (("x", "float64"), ("y", "float64"))


def _arranged(rows: int, front_matter: str = "") -> str:
    """The behavior arranger's reply for the model comparison of a ``rows`` x 2 table."""
    table = VariableRecord(
        "clean_dataset", "active", "DataFrame", 0, "s", "s", f"{rows}x2", rows, COLUMNS
    )
    obs = Observation(
        event=Event.START_BEHAVIOR,
        problem=f"---\ntarget: y\ntask: regression\n{front_matter}---\nPredict `y`.\n",
        files=("assets/d.csv",),
        location="predictive_modelling/model_selection",
        iteration=1,
        stages=(STAGE,),
        ledger=(table,),
        max_alternatives=3,
    )
    return OfflineAnalyst().respond(RenderedPrompt("START_BEHAVIOR", "", ""), obs).text


@pytest.mark.parametrize("rows", [10, 10**6])
def test_a_table_of_any_size_is_compared_in_one_behavior(rows: int) -> None:
    reply = _arranged(rows)
    assert reply.startswith("<behavior ") and "<alternatives" not in reply


def test_fork_yes_compares_in_a_fork_by_model_family() -> None:
    reply = _arranged(10, "fork: yes\n")
    assert reply.startswith("<alternatives ")
    assert 'id="model_selection_linear"' in reply and 'id="model_selection_boosting"' in reply


@pytest.mark.parametrize(("rows", "fork", "forks"), [(10, "yes", True), (10**6, "no", False)])
def test_the_problems_front_matter_decides(rows: int, fork: str, forks: bool) -> None:
    assert _arranged(rows, f"fork: {fork}\n").startswith("<alternatives ") == forks
