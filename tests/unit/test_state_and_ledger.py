from dataclasses import dataclass

from notebook_bcc.state import StageRecord, StepRecord, WorkflowState
from notebook_bcc.variables import VariableLedger


@dataclass(frozen=True)
class Info:
    name: str
    kind: str = "int"
    shape: str | None = None
    length: int | None = None
    columns: tuple = ()
    bytes: int = 28
    repr: str = "1"


def _state() -> WorkflowState:
    st = WorkflowState(run_id="r", problem_title="p", fsm_state="STEP_COMPLETED")
    st.stages = [
        StageRecord(
            "a",
            "A",
            "g",
            ["clean"],
            [],
            "running",
            [
                StepRecord("s1", "S1", "g", ["raw"], [], "complete"),
                StepRecord("s2", "S2", "g", ["clean"], ["raw"], "pending"),
            ],
        ),
        StageRecord("b", "B", "g", [], ["clean"]),
    ]
    return st


def test_state_round_trips_through_json():
    st = _state()
    st.ledger.observe(
        [Info("raw", "DataFrame", "3x2", 3, (("x", "int64"),), 100, "DataFrame 3x2")], "a/s1"
    )
    data = st.to_json()
    assert data["schema_version"] == 1 and data["fsm_state"] == "STEP_COMPLETED"
    assert data["location"]["path"] == "a/s1"
    again = WorkflowState.from_json(data)
    assert again.to_json() == data


def test_g5_protects_required_variables():
    st = _state()
    need = st.remaining_required()
    assert "raw" in need and "clean" in need  # step s2 needs raw; clean is a stage artifact
    st.ledger.observe([Info("raw"), Info("tmp")], "a/s1")
    refused = st.ledger.deprecate("raw", "clean", "a", need)
    assert not refused.applied and "s2" in refused.reason
    assert st.ledger.deprecate("tmp", None, "a", need).applied
    assert "tmp → none" in st.ledger.prompt_slice()
    assert "- tmp" not in st.ledger.prompt_slice()


def test_ledger_lifecycle_and_bounded_slice():
    ledger = VariableLedger()
    ledger.observe([Info(f"v{i}", repr="x" * 150) for i in range(200)], "s/t#1")
    text = ledger.prompt_slice(budget_chars=2000)
    assert len(text) < 2200 and "more variables not shown" in text
    ledger.observe([Info("v1", repr="changed")], "s/t#2")
    assert ledger.get("v1").updated_by == "s/t#2" and ledger.get("v1").created_by == "s/t#1"
    assert ledger.get("v2").status == "deleted"
