"""Forks (issue 30): alternative behaviors of one step run at once, each in a kernel of its
own, and the best is kept. Through the CLI as a user runs it: the offline analyst on a small
regression table whose problem asks for the fork, a scripted model through litellm against
the loopback server, and a kill in the middle of a fork.

Every test here runs on scripted kernels (``tests/scripted_kernel.py``): ``bcc`` in this
process (``tests/inprocess.py``), or in a process of its own for the run that is killed
(``tests/scripted_bcc.py``). What is checked is the fork's bookkeeping (branches, scores, the
join, the notebook and the logs, replay, budgets, resume after a kill): workflow logic. That
bcc ends every kernel it made is checked here as each scripted kernel being shut down; that a
fork's real branch kernels end when bcc is interrupted is about kernels, and stays on real
kernels in ``tests/faults/test_signals.py`` (on the same small table)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from tests.conftest import ROOT
from tests.fakellm import FakeLLM, Reply, Request
from tests.faults.test_kill_resume import _wait
from tests.inprocess import bcc_in_process
from tests.integration.test_llm import _env
from tests.scripted_bcc import COMMAND
from tests.scripted_kernel import ScriptedKernels

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: a small regression table with a categorical column: linear and boosting score differently;
#: the front matter asks for the fork the offline analyst would not make on a table this size
PROBLEM = (
    "---\ntitle: Plant growth\ntarget: height\ntask: regression\nfork: yes\n---\n"
    "Predict `height`.\n"
)
SCRIPTED = COMMAND  # bcc, its kernels scripted


def forking_inputs(tmp: Path) -> tuple[Path, Path]:
    """The smallest problem the offline analyst forks on: 60 rows, ``fork: yes``."""
    tmp.mkdir(parents=True, exist_ok=True)
    problem = tmp / "problem.md"
    problem.write_text(PROBLEM)
    rows = ["light,water,soil,height"]
    for i in range(60):
        height = 2 * (i % 7) + (i * 3) % 11 * 0.5 + (i * i % 5) * 0.3
        rows.append(f"{i % 7},{(i * 3) % 11},{'ab'[i % 2]},{height}")
    data = tmp / "plants.csv"
    data.write_text("\n".join(rows) + "\n")
    return problem, data


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def _all_shut_down(kernels: ScriptedKernels) -> None:
    """bcc shut down every kernel it made (a real kernel's end: tests/faults/test_signals)."""
    assert kernels.made and all(k.closed for k in kernels.made), "a kernel was left open"


def _cells(run: Path) -> list[nbformat.NotebookNode]:
    return nbformat.read(run / "notebook.ipynb", as_version=4).cells


def _seqs(run: Path) -> list[int]:
    listed = bcc_in_process("logs", str(run))
    assert listed.returncode == 0, listed.stderr
    return [int(line.split()[0]) for line in listed.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def offline_fork(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ScriptedKernels]:
    problem, data = forking_inputs(tmp_path_factory.mktemp("fork"))
    run, kernels = problem.parent / "run", ScriptedKernels()
    proc = bcc_in_process(
        "run", str(problem), str(data), "--out", str(run), "--quiet", kernels=kernels
    )
    assert proc.returncode == 0, proc.stderr
    return run, kernels


def test_the_offline_model_comparison_forks_and_keeps_the_best_branch(offline_fork) -> None:
    run, kernels = offline_fork
    summary = _summary(run)
    (fork,) = summary["alternatives"]
    assert fork["step"] == "predictive_modelling/model_selection"
    names = [b["behavior"] for b in fork["branches"]]
    assert names == ["model_selection_linear", "model_selection_boosting"]
    scores = [b["score"] for b in fork["branches"]]
    assert all(isinstance(s, float) for s in scores)
    assert scores[0] != scores[1]  # the families scored differently: the join chose
    (kept,) = [b for b in fork["branches"] if b["kept"]]
    assert kept["score"] == max(scores)  # the best of the branches' scores
    # the run went on with the kept branch: its model is the one the hold-out step tested
    assert summary["key_results"]["cv_mean"] == pytest.approx(kept["score"], abs=1e-4)
    family = kept["behavior"].rsplit("_", 1)[1]
    chosen = summary["key_results"]["model"]
    assert (chosen == "hist_gradient_boosting") == (family == "boosting") or chosen.startswith(
        "dummy"
    )
    assert summary["verification"]["status"] == "passed"
    # only the kept branch's cells are in the notebook, under one line naming both
    behaviors = {c.metadata.get("bcc", {}).get("behavior") for c in _cells(run)}
    loser = next(n for n in names if n != kept["behavior"])
    assert kept["behavior"] in behaviors and loser not in behaviors
    lines = [
        c.source for c in _cells(run) if c.metadata.get("bcc", {}).get("role") == "alternatives"
    ]
    assert len(lines) == 1 and f"{kept['behavior']} {kept['score']:.4g} (kept)" in lines[0]
    assert f"{loser} " in lines[0]
    assert "## Alternatives tried" in (run / "summary.md").read_text()
    assert 'id="alternatives"' in (run / "report.html").read_text()
    # the branches are logged like any other transition, marked with their branch, numbered on
    assert _seqs(run) == list(range(1, len(_seqs(run)) + 1))
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    moves = [e for e in events if e.get("type") == "transition"]
    fork_at = next(i for i, e in enumerate(moves) if e["event"] == "FORK")
    around = [(e["event"], e.get("branch")) for e in moves[fork_at : fork_at + 6]]
    assert around == [
        ("FORK", None),
        ("COMPLETE_ACTION", names[0]),
        ("COMPLETE_STEP", names[0]),
        ("COMPLETE_ACTION", names[1]),
        ("COMPLETE_STEP", names[1]),
        ("JOIN", None),
    ]
    # three kernels (the run's, two branches'; and the verifier's), all shut down after bcc
    assert sorted(k.request.role for k in kernels.made) == ["", "fork-1", "fork-2", "verify"]
    assert sum(1 for e in events if e.get("type") == "kernel") >= 3  # each logged
    _all_shut_down(kernels)


def test_max_alternatives_1_runs_one_behavior(tmp_path: Path) -> None:
    problem, data = forking_inputs(tmp_path)  # the problem asks for it: the option wins
    run, kernels = tmp_path / "run", ScriptedKernels()
    proc = bcc_in_process(
        "run", str(problem), str(data), "--out", str(run), "--quiet", "--max-alternatives", "1",
        "--no-verify", kernels=kernels,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _summary(run)["alternatives"] == []
    prompt = next((run / "logs").glob("*_START_BEHAVIOR.xml")).read_text()
    assert "<alternatives" not in prompt  # the arranger is not offered a fork
    assert [k.request.role for k in kernels.made] == [""]  # no branch kernel either


# -- a scripted model through litellm ------------------------------------------------------

DELAY_S = 3.0  # each branch's action generator answers after this long


def _bcc(*args: str, kernels: ScriptedKernels) -> subprocess.CompletedProcess:
    """``bcc`` in this process with the model's environment (``test_llm._env``)."""
    return bcc_in_process(*args, environ=_env(), kernels=kernels)


def _fork_policy(req: Request, code: dict[str, str] | None = None) -> str:
    """One stage: step `compare` forks into a (score 0.7) and b (score 0.9), or runs the
    plain behavior `compare_b2` when it is asked again; step `probe` then looks in the run's
    kernel for what each branch left. ``code`` replaces a branch's code."""
    where = req.headers.get("x-bcc-location", "")
    step = where.split("/")[1] if where.count("/") >= 1 else ""
    t = req.transition
    if t == "START_WORKFLOW":
        return (
            '<stages><stage id="work" title="Work"><goal>Compare, then probe.</goal>'
            '<verified_artifacts><variable name="probe">dict</variable></verified_artifacts>'
            "</stage></stages>"
        )
    if t == "START_STEP":
        return (
            '<steps><step id="compare" title="Compare"><goal>Two ways.</goal><verified_artifacts>'
            '<variable name="score">float</variable></verified_artifacts></step>'
            '<step id="probe" title="Probe"><goal>Look.</goal><verified_artifacts>'
            '<variable name="probe">dict</variable></verified_artifacts></step></steps>'
        )
    if t == "START_BEHAVIOR" and step == "compare" and "behavior 1 of at most" in req.last_user:
        return (
            '<behavior id="compare_b2" step_id="compare"><agent>A</agent><task>Plain.</task>'
            '<outputs><artifact name="score">float</artifact></outputs></behavior>'
        )
    if t == "START_BEHAVIOR" and step == "compare":
        one = (
            '<behavior id="compare_{x}" step_id="compare"><agent>A</agent><task>Way {x}.</task>'
            '<outputs><artifact name="score">float</artifact></outputs>'
            "<acceptance><criterion>score > 0</criterion></acceptance></behavior>"
        )
        return (
            '<alternatives step_id="compare"><choose better="higher">score</choose>'
            + one.format(x="a")
            + one.format(x="b")
            + "</alternatives>"
        )
    if t == "START_BEHAVIOR":
        return (
            '<behavior id="probe_b1" step_id="probe"><agent>A</agent><task>Probe.</task>'
            '<outputs><artifact name="probe">dict</artifact></outputs></behavior>'
        )
    if t == "COMPLETE_ACTION":
        code = {
            "compare_a": "score = 0.7\nonly_a = 1",
            "compare_b": "score = 0.9\nonly_b = 1",
            "compare_b2": "score = 0.5",
            **(code or {}),
        }.get(
            where.rsplit("/", 1)[-1],
            'probe = {"only_a": "only_a" in globals(), "only_b": "only_b" in globals(), '
            '"score": score}',
        )
        return f"<actions><add-code2run><![CDATA[{code}]]></add-code2run></actions>"
    if t == "COMPLETE_STEP":
        return (
            '<reflection current_step_is_complete="true"><evaluation><goal_achievement>'
            "<status>achieved</status><reasoning>r</reasoning></goal_achievement></evaluation>"
            "<decision><next_state>STEP_COMPLETED</next_state><reasoning>ok</reasoning>"
            "</decision></reflection>"
        )
    if t == "COMPLETE_STAGE":
        done = step == "probe"
        return (
            f'<stage_reflection stage_is_complete="{str(done).lower()}"><step_evaluation>'
            f"<step_id>{step}</step_id><completion_status>complete</completion_status>"
            "</step_evaluation><decision><next_state>"
            + ("STAGE_COMPLETED" if done else "STEP_RUNNING")
            + "</next_state><reasoning>r</reasoning></decision><variable_management/>"
            "</stage_reflection>"
        )
    raise AssertionError(t)


def test_a_scripted_fork_runs_its_branches_at_once_and_keeps_the_better(tmp_path: Path) -> None:
    problem, data, run = tmp_path / "problem.md", tmp_path / "d.csv", tmp_path / "run"
    problem.write_text("Describe the numbers.\n")
    data.write_text("a,b\n1,2\n3,4\n5,6\n")
    kernels = ScriptedKernels()
    with FakeLLM(policy=_fork_policy) as fake:
        fake.push(*(Reply(when="COMPLETE_ACTION", delay=DELAY_S) for _ in range(2)))
        proc = _bcc(
            "run", str(problem), str(data), "--model", "openai/fake-model",
            "--api-base", fake.url, "--out", str(run), kernels=kernels,
        )  # fmt: skip
        actions = fake.by("COMPLETE_ACTION")
    assert proc.returncode == 0, proc.stderr[-2000:]
    branch_calls = [r for r in actions if "/compare/" in r.headers.get("x-bcc-location", "")]
    assert len(branch_calls) == 2
    # both generator calls were in flight at once: the second arrived before the first's
    # reply (each took DELAY_S to come back)
    first, second = sorted(r.at for r in branch_calls)
    assert second - first < DELAY_S
    # each branch's generator is told it is a branch of a fork, and how the runner chooses
    assert all("of 2 of a fork" in r.last_user and "`score`" in r.last_user for r in branch_calls)
    summary = _summary(run)
    (fork,) = summary["alternatives"]
    assert [(b["behavior"], b["score"], b["kept"]) for b in fork["branches"]] == [
        ("compare_a", 0.7, False),
        ("compare_b", 0.9, True),
    ]
    # the run's kernel is the kept branch's: the losing branch's variables are not in it
    assert summary["artifacts"]["probe"] == {"only_a": False, "only_b": True, "score": 0.9}
    assert summary["verification"]["status"] == "passed"
    assert summary["counts"]["llm_calls"] == len(fake.requests)  # every branch call counted
    _all_shut_down(kernels)


@pytest.mark.parametrize("failing", [("compare_a",), ("compare_a", "compare_b")])
def test_a_branch_whose_cells_fail_is_dropped_and_said_so(
    tmp_path: Path, failing: tuple[str, ...]
) -> None:
    problem, data, run = tmp_path / "problem.md", tmp_path / "d.csv", tmp_path / "run"
    problem.write_text("Describe the numbers.\n")
    data.write_text("a,b\n1,2\n3,4\n5,6\n")
    kernels = ScriptedKernels()
    broken = {name: "raise ValueError('no way')" for name in failing}
    with FakeLLM(policy=lambda req: _fork_policy(req, broken)) as fake:
        proc = _bcc(
            "run", str(problem), str(data), "--model", "openai/fake-model",
            "--api-base", fake.url, "--out", str(run), kernels=kernels,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = _summary(run)
    (fork,) = summary["alternatives"]
    dropped = {b["behavior"]: b["dropped"] for b in fork["branches"] if not b["kept"]}
    assert set(dropped) == set(failing)
    assert all("did not complete the step" in why for why in dropped.values())
    code = "\n".join(c.source for c in _cells(run) if c.cell_type == "code")
    assert "no way" not in code  # a dropped branch's cells stay out of the notebook
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    (join,) = [e for e in events if e.get("type") == "transition" and e["event"] == "JOIN"]
    if len(failing) == 1:
        assert join["to"] == "STEP_COMPLETED"
        assert summary["artifacts"]["probe"]["score"] == 0.9
    else:  # none kept: the step retries as after a failed behavior, with a plain behavior
        assert join["to"] == "STEP_RUNNING"
        assert summary["counts"]["failed_behaviors"] >= 1
        assert summary["artifacts"]["probe"] == {"only_a": False, "only_b": False, "score": 0.5}
    assert summary["verification"]["status"] == "passed"
    _all_shut_down(kernels)


def test_a_budget_spent_in_a_fork_aborts_before_it_and_resume_runs_it(tmp_path: Path) -> None:
    """Every branch's calls count: the budget runs out inside the fork (3 calls before it, 4
    allowed), the run stops resumable at the checkpoint before the fork, and `bcc resume`
    reuses the arranger's reply and runs the whole fork again."""
    problem, data, run = tmp_path / "problem.md", tmp_path / "d.csv", tmp_path / "run"
    problem.write_text("Describe the numbers.\n")
    data.write_text("a,b\n1,2\n3,4\n5,6\n")
    kernels = ScriptedKernels()
    with FakeLLM(policy=_fork_policy) as fake:
        common = ("--model", "openai/fake-model", "--api-base", fake.url)
        proc = _bcc(
            "run", str(problem), str(data), *common, "--out", str(run), "--max-llm-calls", "4",
            kernels=kernels,
        )  # fmt: skip
        assert proc.returncode == 7, proc.stderr[-2000:]
        assert "--max-llm-calls 4 reached" in proc.stderr
        state = json.loads((run / "state.json").read_text())
        assert (state["fsm_state"], state["resume_from"]) == ("WORKFLOW_ABORTED", "STEP_RUNNING")
        spent = state["counters"]["llm_calls"]
        assert spent >= 4 and spent == len(fake.requests)  # the branches' calls are counted
        assert not list((run / "logs").glob("*_FORK.xml"))  # nothing of the fork committed
        _all_shut_down(kernels)
        arranged = len(fake.by("START_BEHAVIOR"))
        kernels = ScriptedKernels()
        resumed = _bcc("resume", str(run), "--max-llm-calls", "100", kernels=kernels)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert len(fake.by("START_BEHAVIOR")) == arranged + 1  # the probe's only: reused
    summary = _summary(run)
    (fork,) = summary["alternatives"]
    assert [b["kept"] for b in fork["branches"]] == [False, True]
    assert summary["counts"]["llm_calls"] == len(fake.requests)
    _all_shut_down(kernels)


# -- a kill in the middle of a fork ----------------------------------------------------------


def test_a_run_killed_during_a_fork_resumes_to_a_completed_run(
    offline_fork, tmp_path: Path
) -> None:
    """SIGKILL while a branch's action generator stalls (the other branch goes on): the run
    is left at its checkpoint before the fork; ``bcc resume`` runs the fork again to the
    uninterrupted run's result, and ``bcc replay`` of it gives the same notebook and the same
    alternatives (one replay checks both: that a fork replays, and that a resumed one does).
    (The branch kernels of a real fork ending with an interrupted bcc: test_signals.py.)"""
    done, _ = offline_fork
    problem, data = forking_inputs(tmp_path)
    run, mark = tmp_path / "run", tmp_path / "paused"
    fork_seq = _summary(done)["alternatives"][0]["seq"]
    calls = sum(
        1 for p in (done / "logs").glob("*.xml")
        if p.name.count(".") == 1 and int(p.name[:4]) <= fork_seq and "NEXT_STAGE" not in p.name
    )  # fmt: skip
    # the agent call after the arranger's fork is a branch's action generator: it stalls
    env = {
        **os.environ,
        "BCC_FAILPOINTS": f"agent@{calls + 1}=pause",
        "BCC_FAILPOINTS_MARK": str(mark),
    }
    proc = subprocess.Popen(
        [*SCRIPTED, "run", str(problem), str(data), "--out", str(run), "--quiet"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert _wait(lambda: mark.exists() or proc.poll() is not None, 300)
        assert mark.exists(), "the failpoint was never reached"
        time.sleep(1.0)  # the other branch goes on meanwhile
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    state = json.loads((run / "state.json").read_text())
    assert state["fsm_state"] == "STEP_RUNNING" and state["seq"] == fork_seq - 1  # before it
    kernels = ScriptedKernels()
    resumed = bcc_in_process("resume", str(run), "--quiet", kernels=kernels)
    assert resumed.returncode == 0, resumed.stderr
    summary = _summary(run)
    assert summary["alternatives"] == _summary(done)["alternatives"]
    code = [c.source for c in _cells(run) if c.cell_type == "code"]
    assert code == [c.source for c in _cells(done) if c.cell_type == "code"]
    assert summary["verification"]["status"] == "passed"
    assert _seqs(run) == list(range(1, len(_seqs(run)) + 1))
    _all_shut_down(kernels)
    # a fork replays to the same notebook (the uninterrupted run's), as a user meets it
    replayed = tmp_path / "replayed"
    proc = bcc_in_process("replay", str(run), "--out", str(replayed), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert [c.source for c in _cells(replayed) if c.cell_type == "code"] == code
    assert _summary(replayed)["alternatives"] == _summary(done)["alternatives"]
