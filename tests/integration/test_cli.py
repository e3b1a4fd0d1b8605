"""The CLI as a user meets it: JSON events, status, logs, and one-line errors for bad input.

The run is a real ``bcc`` process (its import profile shows that an offline run never imports
litellm); ``status``, ``logs`` and the bad inputs, which start no kernel, run the same command
line in this process (``tests/inprocess.py``: ``cli.invoke``, its exit codes and lines)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_bcc
from tests.inprocess import bcc_in_process

PROBLEM = "---\ntitle: Numbers\ntask: eda\n---\nDescribe the numbers.\n"


@pytest.fixture(scope="module")
def json_run(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "problem.md").write_text(PROBLEM)
    (tmp / "data.csv").write_text(
        "a,b,c\n" + "".join(f"{i},{i * i % 7},{'xy'[i % 2]}\n" for i in range(30))
    )
    out = tmp / "run"
    proc = run_bcc(
        "run",
        str(tmp / "problem.md"),
        str(tmp / "data.csv"),
        "--out",
        str(out),
        "--json",
        "--no-verify",
        env={"PYTHONPROFILEIMPORTTIME": "1"},
    )
    return proc, out


def test_json_lines_all_parse(json_run):
    proc, out = json_run
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert records[-1]["type"] == "result" and records[-1]["final_state"] == "WORKFLOW_COMPLETED"
    assert records[-1]["answers"] == [] and "key_results" in records[-1]
    transitions = [r for r in records if r["type"] == "transition"]
    assert (
        transitions[0]["event"] == "START_WORKFLOW"
        and transitions[-1]["to"] == "WORKFLOW_COMPLETED"
    )
    assert len(transitions) == len(list((out / "logs").glob("0*.xml")))


def test_offline_run_never_imports_litellm(json_run):
    proc, _ = json_run
    assert "notebook_bcc.workflow.runner" in proc.stderr  # the import profile is there
    assert "litellm" not in proc.stderr


def test_status_json_matches_state(json_run):
    _, out = json_run
    proc = bcc_in_process("status", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    state = json.loads((out / "state.json").read_text())
    assert status["fsm_state"] == state["fsm_state"] == "WORKFLOW_COMPLETED"
    assert status["location"] == state["location"]
    assert {v["name"] for v in status["ledger"]} == {v["name"] for v in state["ledger"]}
    text = bcc_in_process("status", str(out))
    assert text.returncode == 0 and "WORKFLOW_COMPLETED" in text.stdout


def test_logs_list_and_show(json_run):
    _, out = json_run
    listing = bcc_in_process("logs", str(out))
    assert listing.returncode == 0
    assert len(listing.stdout.splitlines()) == len(list((out / "logs").glob("0*.xml")))
    one = bcc_in_process("logs", str(out), "1")
    assert one.returncode == 0 and 'event="START_WORKFLOW"' in one.stdout
    missing = bcc_in_process("logs", str(out), "9999")
    assert missing.returncode == 3 and "Traceback" not in missing.stderr


def _inputs(tmp: Path) -> dict[str, Path]:
    good = tmp / "good.csv"
    good.write_text("a,b\n1,2\n")
    problem = tmp / "problem.md"
    problem.write_text("Describe the data.\n")
    (tmp / "empty.csv").write_text("")
    (tmp / "header.csv").write_text("a,b,c\n")
    (tmp / "binary.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200))
    (tmp / "blank.md").write_text("   \n\n")
    (tmp / "adir").mkdir()
    (tmp / "full").mkdir()
    (tmp / "full" / "x.txt").write_text("keep me")
    (tmp / "afile").write_text("not a directory")
    return {"good": good, "problem": problem}


CASES = {
    "missing data file": (["{problem}", "{tmp}/nope.csv"], 3, "does not exist"),
    "data is a directory": (["{problem}", "{tmp}/adir"], 3, "is a directory"),
    "empty data file": (["{problem}", "{tmp}/empty.csv"], 3, "is empty"),
    "header-only csv": (["{problem}", "{tmp}/header.csv"], 3, "no rows"),
    "binary named .csv": (["{problem}", "{tmp}/binary.csv"], 3, "binary"),
    "blank problem": (["{tmp}/blank.md", "{good}"], 3, "blank"),
    "missing problem": (["{tmp}/nope.md", "{good}"], 3, "does not exist"),
    "unknown provider": (["{problem}", "{good}", "--model", "nosuchprovider/x"], 4, "provider"),
    "out not empty": (["{problem}", "{good}", "--out", "{tmp}/full"], 2, "not an empty directory"),
    "negative max repairs": (["{problem}", "{good}", "--max-repairs", "-1"], 2, ">= 0 (got -1)"),
    "negative llm timeout": (["{problem}", "{good}", "--llm-timeout", "-5"], 2, "> 0 (got -5.0)"),
    "negative restarts": (["{problem}", "{good}", "--max-kernel-restarts", "-2"], 2, ">= 0"),
    "not a number": (["{problem}", "{good}", "--max-repairs", "two"], 2, "--max-repairs"),
    "unknown option": (["{problem}", "{good}", "--max-repair", "2"], 2, "--max-repair"),
    "missing data": (["{problem}"], 2, "'data'"),
    "unwritable runs dir": (
        ["{problem}", "{good}", "--runs-dir", "{tmp}/afile/runs"],
        8,
        "cannot write",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_with_exit_code_and_no_run_dir(case: str, tmp_path: Path):
    paths = _inputs(tmp_path)
    args, code, needle = CASES[case]
    runs = tmp_path / "runs"
    argv = [a.format(tmp=tmp_path, **paths) for a in args]
    if "--runs-dir" not in argv:
        argv += ["--runs-dir", str(runs)]
    proc = bcc_in_process("run", *argv)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "(fix: " in lines[0], proc.stderr
    assert needle in lines[0]
    assert "Traceback" not in proc.stderr
    assert not runs.exists() or not any(runs.iterdir())
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == ["x.txt"]
