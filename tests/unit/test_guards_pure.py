"""The guards as pure functions (no kernel, no run directory)."""

from __future__ import annotations

from notebook_bcc.workflow import guards
from notebook_bcc.workflow.guards import Guard


def test_g1_overrides_a_completion_claim_with_missing_artifacts() -> None:
    assert guards.completion(True, []) is None
    assert guards.completion(False, ["model"]) is None
    assert guards.completion(True, ["model", "score"]) == Guard(
        "G1", "completion_overridden", "declared artifacts missing in the kernel: model, score"
    )


def test_g1_says_an_artifact_only_a_failed_cell_made_is_not_in_the_notebook() -> None:
    why = {"frame": "cell 4-2, which timed out"}
    assert guards.completion(True, ["frame", "score"], why) == Guard(
        "G1",
        "completion_overridden",
        "declared artifacts missing in the kernel: score; "
        "frame is not in the notebook (made only by cell 4-2, which timed out)",
    )


def test_the_names_a_cell_binds_are_read_from_its_code() -> None:
    code = (
        "import pandas as pd, os.path\nfrom math import *\nframe = pd.read_csv(p); a, *b = 1, 2\n"
        "%matplotlib inline\nfor i in range(2):\n    total += i\ndef f(x):\n    inner = x\n"
        "class C: attr = 1\nwith open(p) as fh: squares = [k * k for k in range(3)]\n"
        "try:\n    pass\nexcept ValueError as err:\n    pass\nif (n := 3): pass"
    )
    assert guards.names_bound(code) == {
        *("pd", "os", "frame", "a", "b", "i", "total", "f", "C", "fh", "squares", "err", "n"),
    }
    assert guards.names_bound("frame = (") == set()  # does not parse: nothing claimed


def test_g3_caps_plans_and_steps() -> None:
    assert guards.cap_plan([1, 2], 3, "steps") == ([1, 2], None)
    kept, guard = guards.cap_plan([1, 2, 3, 4], 3, "stages")
    assert kept == [1, 2, 3] and guard == Guard("G3", "stages_truncated", "4 stages planned, cap 3")
    assert guards.step_cap(3, 4) is None
    assert guards.step_cap(4, 4) == Guard("G3", "step_failed", "4 behaviors tried (cap 4)")


def test_g4_repairs_impossible_plan_moves() -> None:
    assert guards.plan_move(True, ["b"]) == (True, None)
    assert guards.plan_move(False, []) == (False, None)
    go, guard = guards.plan_move(True, [])
    assert not go and guard is not None and guard.effect == "stage_completed"
    go, guard = guards.plan_move(False, ["b", "c"])
    assert not go and guard == Guard("G4", "steps_skipped", "stage completed with steps left: b, c")


def test_g6_names_the_spent_budget() -> None:
    unlimited = dict(max_llm_calls=None, max_cost_usd=None, max_wall_s=None)
    assert guards.budget_exhausted(llm_calls=9, cost_usd=9.0, elapsed_s=9.0, **unlimited) is None
    limits = dict(max_llm_calls=10, max_cost_usd=1.0, max_wall_s=60.0)
    assert guards.budget_exhausted(llm_calls=9, cost_usd=0.5, elapsed_s=1.0, **limits) is None
    spent = guards.budget_exhausted(llm_calls=10, cost_usd=0.5, elapsed_s=1.0, **limits)
    assert spent == "--max-llm-calls 10 reached"
    spent = guards.budget_exhausted(llm_calls=1, cost_usd=0.5, elapsed_s=61.0, **limits)
    assert spent == "--max-wall-s 60.0 reached"


def test_g7_refuses_code_that_already_failed_in_the_step() -> None:
    failed = [guards.code_digest("x = 1 / 0\n")]
    assert guards.repeated_code("  x = 1 / 0  ", failed) == Guard(
        "G7", "not_rerun", "identical to code that already failed in this step; not re-run"
    )
    assert guards.repeated_code("x = 1 / 1", failed) is None


def test_g8_blocks_only_what_a_failed_producer_left_unmade() -> None:
    unmade = {"raw_dataset": "step load/read failed"}
    assert guards.blocked("step", ["user_submit_files"], unmade) is None
    assert guards.blocked("step", ["df"], unmade) is None  # no producer failed: let it try
    assert guards.blocked("stage", ["raw_dataset", "df"], unmade) == Guard(
        "G8",
        "stage_skipped",
        "cannot start: the required raw_dataset was never made (step load/read failed)",
    )


def test_unmade_lists_artifacts_of_failed_work_that_the_kernel_lacks() -> None:
    from notebook_bcc.kernel.records import VariableInfo
    from notebook_bcc.rundir.state import StageRecord, StepRecord, WorkflowState

    state = WorkflowState("r", "t")
    load = StepRecord("read", "Read", "", ["raw", "profile"], status="failed")
    state.stages = [
        StageRecord("load", "Load", "", ["raw"], status="partial", steps=[load]),
        StageRecord("clean", "Clean", "", ["clean"], ["raw"], status="skipped"),
        StageRecord("eda", "EDA", "", ["plots"], ["clean"]),
    ]
    state.ledger.record_namespace(
        [VariableInfo("profile", "dict", None, 1, (), 10, "{}")], "load/read#3"
    )
    assert state.unmade() == {"raw": "step load/read failed", "clean": "stage clean skipped"}
