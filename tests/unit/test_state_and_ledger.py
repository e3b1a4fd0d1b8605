from dataclasses import dataclass

from notebook_bcc.rundir.ledger import VariableLedger
from notebook_bcc.rundir.state import StageRecord, StepRecord, WorkflowState


@dataclass(frozen=True)
class Info:
    name: str
    kind: str = "int"
    shape: str | None = None
    length: int | None = None
    columns: tuple = ()
    bytes: int = 28
    repr: str = "1"
    index: str = ""


def _by_name(lines: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Ledger view lines by variable name (a line's label is the name and its status)."""
    return {label.split(" ")[0]: text for label, text in lines}


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
    st.ledger.record_namespace(
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
    st.ledger.record_namespace([Info("raw"), Info("tmp")], "a/s1")
    refused = st.ledger.deprecate("raw", "clean", "a", need)
    assert not refused.applied and "s2" in refused.reason
    assert st.ledger.deprecate("tmp", None, "a", need).applied
    # deprecated with safe="false": still in the kernel, so still listed, as deprecated
    view = _by_name(st.ledger.prompt_view().lines)
    assert "DEPRECATED by a, still in the kernel; no replacement" in view["tmp"]
    st.ledger.mark_deleted(["tmp"], "a/s1#9")
    view = st.ledger.prompt_view()
    assert "tmp" not in _by_name(view.lines)
    assert view.deleted == ("tmp (deprecated by a; no replacement)",)


def test_stale_retained_note_is_not_shown():
    ledger = VariableLedger()
    ledger.record_namespace([Info("x")], "s/t#1")
    ledger.retain("x", "t2")
    assert "(retained for t2)" in ledger.prompt_view(in_use={"t2"}).lines[0][1]
    assert ledger.prompt_view(in_use={"t3"}).lines[0][1].startswith("- x: int (retained)")


def test_ledger_lifecycle_and_view_names_every_variable():
    ledger = VariableLedger()
    ledger.record_namespace([Info(f"v{i}", repr="x" * 150) for i in range(200)], "s/t#1")
    view = ledger.prompt_view()
    assert len(view.lines) == 200 and set(_by_name(view.lines)) == {f"v{i}" for i in range(200)}
    ledger.record_namespace([Info("v1", repr="changed")], "s/t#2")
    assert ledger.get("v1").updated_by == "s/t#2" and ledger.get("v1").created_by == "s/t#1"
    assert ledger.get("v2").status == "deleted"


def test_a_variable_line_lists_every_column_up_to_300_then_counts_the_rest():
    from notebook_bcc.rundir.ledger import VariableRecord

    def frame(n_listed: int, n_all: int) -> VariableRecord:
        cols = tuple((f"c{i}", "int64") for i in range(n_listed))
        return VariableRecord("wide", "alive", "DataFrame", 40, "s", "s", f"5x{n_all}", 5, cols)

    line = frame(40, 40).describe()
    assert all(f"c{i}:int64" in line for i in range(40)) and "more)" not in line
    assert frame(300, 450).describe().endswith("c299:int64 (+150 more)")


def test_findings_come_from_the_kernel_or_else_from_the_stage_reflectors():
    from notebook_bcc.rundir.summary import findings

    st = _state()
    assert findings(st, {}) is None
    st.stages[0].steps[0].findings = [["high", "raw has 344 rows"], ["low", " "]]
    assert findings(st, {"final_summary": "  "}) == {
        "source": "stage reflectors",
        "text": "- raw has 344 rows (a/s1)",
    }
    kernel = {"final_summary": "## Found\n42", "analysis_summary": "other"}
    assert findings(st, kernel) == {"source": "final_summary", "text": "## Found\n42"}


def test_a_protected_variable_names_every_later_step_and_stage_that_needs_it():
    st = _state()
    st.stages[0].steps.append(StepRecord("s3", "S3", "g", [], ["raw"], "pending"))
    st.stages[1].required_variables = ["raw", "clean"]
    st.stage_index, st.step_index = 0, 0
    assert st.remaining_required()["raw"] == "required by step a/s2, step a/s3, stage b"


def test_a_replacement_deleted_since_is_said_so_with_where_the_chain_ends():
    ledger = VariableLedger()
    ledger.record_namespace([Info("raw_co2"), Info("co2_weekly"), Info("co2_monthly")], "s/t#1")
    ledger.deprecate("raw_co2", "co2_weekly", "load", {})
    ledger.deprecate("co2_weekly", "co2_monthly", "resample", {})
    ledger.mark_deleted(["raw_co2", "co2_weekly"], "s/t#2")
    gone = dict(g.split(" ", 1) for g in ledger.prompt_view().deleted)
    assert gone["raw_co2"] == (
        "(deprecated by load; use co2_weekly instead (itself deleted since: use co2_monthly))"
    )
    assert gone["co2_weekly"] == "(deprecated by resample; use co2_monthly instead)"


def test_a_table_with_the_columns_of_an_earlier_one_names_it_instead_of_listing_them():
    cols = (("a", "int64"), ("b", "float64"), ("c", "str"))
    ledger = VariableLedger()
    ledger.record_namespace([Info("X", "DataFrame", "10x3", columns=cols)], "s/t#1")
    ledger.record_namespace(
        [
            Info("X", "DataFrame", "10x3", columns=cols),
            Info("X_train", "DataFrame", "8x3", columns=cols),
            Info("X_small", "DataFrame", "8x2", columns=cols[:2]),  # too few to be worth it
            Info("Z", "DataFrame", "8x3", columns=cols[::-1]),  # another order: listed
        ],
        "s/t#2",
    )
    view = _by_name(ledger.prompt_view(priority=("X",)).lines)
    assert view["X"].endswith("columns a:int64, b:float64, c:str")
    assert view["X_train"] == "- X_train: DataFrame [8x3] columns as X"
    assert view["X_small"].endswith("columns a:int64, b:float64")
    assert view["Z"].endswith("columns c:str, b:float64, a:int64")
    # the table named ranks first: over budget, the lowest ranked details go first, so the
    # named one's details are the last of the two to go
    ranked = ledger.prompt_view()  # the youngest first: X_train before X
    names = [label.split(" ")[0] for label, _ in ranked.lines]
    assert names.index("X_train") < names.index("X")
    view = _by_name(ranked.lines)
    assert view["X_train"].endswith("columns a:int64, b:float64, c:str")
    assert view["X"] == "- X: DataFrame [10x3] columns as X_train (listed below)"  # born later


def test_a_tables_index_follows_its_columns() -> None:
    cols = (("n", "int64"), ("mean", "float64"), ("share", "float64"))
    ledger = VariableLedger()
    frame = Info("by_city", "DataFrame", "7x3", columns=cols, index="city:str (7 labels)")
    ledger.record_namespace([frame, Info("n", index="")], "s/t#1")
    view = _by_name(ledger.prompt_view().lines)
    assert view["by_city"].endswith("share:float64; index city:str (7 labels)")
    assert view["n"] == "- n: int = 1"
