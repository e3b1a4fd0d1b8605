"""Honest outcomes and the smaller faults of issue 38, each through the CLI: its exit code and
its one line. The model is the loopback server (``tests.fakellm``, through litellm) playing a
scripted policy whose action cells are the fault.

What is checked is bcc's own handling (guards, verification, errors at the edge), so ``bcc``
runs in this process with scripted kernels (``tests/inprocess.py``); a cell that hangs past
``--cell-timeout`` is scripted (``# kernel: timeout``: the cell's code runs, then it ends as a
timed-out cell ends), as a kernel's own timeout is test_kernel's. The read-only run directory
stays a real ``bcc`` process under bubblewrap."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.fakellm import FakeLLM, Request
from tests.inprocess import bcc_in_process
from tests.integration.test_llm import BCC, ROOT, _env, bcc_scripted
from tests.scripted import one_stage

pytestmark = pytest.mark.timeout(300)

#: a load cell that assigns its table, then hangs past --cell-timeout (scripted: the kernel
#: double ends it as a timed-out cell)
HANG_AFTER_ASSIGN = (
    "import pandas as pd\nframe = pd.read_csv(user_submit_files[0])\n# kernel: timeout"
)


def behaviors(codes: list[str], artifact: str, claims_complete: bool = False):
    """A policy whose n-th behavior runs ``codes[n-1]`` (the last one again after that)."""
    count = {"START_BEHAVIOR": 0}

    def answer(req: Request) -> str:
        count[req.transition] = count.get(req.transition, 0) + 1
        n = count["START_BEHAVIOR"]
        obs = SimpleNamespace(event=req.transition, behaviors_in_step=n - 1, artifacts=())
        code = codes[min(n, len(codes)) - 1]
        done = (lambda o: True) if claims_complete else None
        return one_stage(obs, lambda o: code, complete_when=done, artifact=artifact)

    return answer


def run_with(tmp: Path, policy, *extra: str) -> tuple[object, Path, FakeLLM]:
    problem, data, run = tmp / "problem.md", tmp / "d.csv", tmp / "run"
    problem.write_text("Count the rows.\n")
    data.write_text("a,b\n1,2\n3,4\n")
    with FakeLLM(policy=policy) as fake:
        proc, _, _ = bcc_scripted(
            "run", str(problem), str(data), "--model", "openai/fake-model",
            "--api-base", fake.url, "--out", str(run), "--cell-timeout", "3", *extra,
        )  # fmt: skip
    return proc, run, fake


def test_a_notebook_that_does_not_rerun_exits_10(tmp_path: Path) -> None:
    """The load cell assigns ``frame`` and hangs (timed out, so not in the notebook); the next
    behavior uses ``frame`` and completes the step in the run's kernel. The verification
    fails with NameError: exit 10, said by the final line, summary.json/md and ``bcc status``
    (it exited 0 before)."""
    policy = behaviors([HANG_AFTER_ASSIGN, "result = len(frame)"], artifact="result")
    proc, run, _ = run_with(tmp_path, policy, "--json")
    assert proc.returncode == 10, proc.stderr[-2000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["exit_code"] == 10
    assert "NameError: name 'frame' is not defined" in result["message"]
    assert result["outcome"].startswith("completed, but the notebook does not re-run")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["verification"]["status"] == "failed"
    assert summary["outcome"] == result["outcome"]
    outcome_line = (run / "summary.md").read_text().splitlines()[2]
    assert outcome_line.startswith("**Outcome:** completed, but the notebook does not re-run")
    status = bcc_in_process("status", str(run)).stdout
    assert "outcome   completed, but the notebook does not re-run" in status


def test_an_artifact_made_only_by_a_timed_out_cell_is_missing(tmp_path: Path) -> None:
    """The step's artifact ``frame`` is in the kernel, but only the timed-out cell made it:
    G1 counts it missing (the reflector's claim is overridden) and the reflector is told why;
    the step fails (exit 9) instead of completing without the table in the notebook."""
    policy = behaviors([HANG_AFTER_ASSIGN], artifact="frame", claims_complete=True)
    proc, run, fake = run_with(tmp_path, policy, "--max-behaviors-per-step", "1", "--no-verify")
    assert proc.returncode == 9, proc.stderr[-2000:]
    reflection = next(r for r in fake.requests if r.transition == "COMPLETE_STEP").last_user
    assert "artifact frame: MISSING" in reflection
    assert re.search(
        r"frame is in the kernel, but made only by cell \d+-\d+, which timed out, "
        "so the notebook does not have it",
        reflection,
    ), reflection[-1500:]
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    g1 = [e for e in events if e.get("type") == "guard" and e.get("guard") == "G1"]
    assert g1 and re.search(
        r"frame is not in the notebook \(made only by cell \d+-\d+, which timed out\)",
        g1[0]["reason"],
    )


def test_a_lone_surrogate_in_a_reply_does_not_stop_the_run(tmp_path: Path) -> None:
    """A reply carrying an unpaired surrogate (``\\udc80``, valid JSON, not writable as UTF-8)
    was an internal error (exit 1); it is replaced by U+FFFD when received, and the run goes on
    to exit 0."""

    def answer(req: Request) -> str:
        obs = SimpleNamespace(event=req.transition, behaviors_in_step=0, artifacts=())
        text = one_stage(obs, lambda o: "result = 1  # caf\udc80")
        return text.replace("Compute it.", "Compute it \udc80 now.")

    proc, run, _ = run_with(tmp_path, answer, "--no-verify")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("WORKFLOW_COMPLETED: ")
    cells = json.loads((run / "notebook.ipynb").read_text(encoding="utf-8"))["cells"]
    sources = [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells
    ]
    assert "Compute it \ufffd now." in sources
    assert "result = 1  # caf\ufffd" in sources


def test_no_api_key_is_one_whole_line_naming_the_variable_and_not_retried(
    tmp_path: Path,
) -> None:
    """No OPENAI_API_KEY: litellm says "Missing credentials" as a 500, which was retried five
    times, cut mid-word (``OPENAI_ADMIN_KE)``) and blamed on the network. Now: exit 4 at the
    first call, one line naming the variable, one attempt."""
    problem, data, run = tmp_path / "problem.md", tmp_path / "d.csv", tmp_path / "run"
    problem.write_text("Count the rows.\n")
    data.write_text("a,b\n1,2\n3,4\n")
    env = {k: v for k, v in _env().items() if not k.endswith(("_API_KEY", "_ADMIN_KEY"))}
    with FakeLLM() as fake:
        proc = bcc_in_process(
            "run", str(problem), str(data), "--model", "openai/fake-model",
            "--api-base", fake.url, "--out", str(run), environ=env,
        )  # fmt: skip
    assert proc.returncode == 4, proc.stderr[-2000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line == (
        "error: openai/fake-model: no API key: OPENAI_API_KEY is not set "
        f"(fix: export OPENAI_API_KEY=<your key>, then `bcc resume {run}`)"
    ), proc.stderr
    attempts = (run / "logs").glob("*.attempts.xml")
    assert [p.read_text().count("Missing credentials") for p in attempts] == [1]


def test_a_gzip_holding_one_huge_line_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    """A 1 MB gzip whose second line is 1 GiB (it took 8.5 GB of memory when the data preview
    read it): exit 3 with the reason, before any run directory exists, in a block-sized scan."""
    problem, data, run = tmp_path / "problem.md", tmp_path / "wide.csv.gz", tmp_path / "run"
    problem.write_text("Count the rows.\n")
    mebibyte = gzip.compress(b"x" * 2**20)
    with data.open("wb") as handle:  # gzip members, one after another, are one stream
        handle.write(gzip.compress(b"a,b\n"))
        for _ in range(1024):
            handle.write(mebibyte)
        handle.write(gzip.compress(b",1\n"))
    assert data.stat().st_size < 2 * 2**20
    proc = bcc_in_process("run", str(problem), str(data), "--out", str(run))
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "error: data file wide.csv.gz has a line over 16 MiB (decompressed) (fix: pass a table "
        "with one record a line (bcc reads lines of up to 16 MiB))"
    ]
    assert not run.exists()


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory as a run stopped at its first model call leaves it (offline model)."""
    tmp = tmp_path_factory.mktemp("stopped")
    problem, data, run = tmp / "problem.md", tmp / "d.csv", tmp / "run"
    problem.write_text("Count the rows.\n")
    data.write_text("a,b\n1,2\n3,4\n")
    proc = bcc_in_process(
        "run", str(problem), str(data), "--out", str(run), "--quiet",
        env={"BCC_FAILPOINTS": "agent@1=bug"},
    )  # fmt: skip
    assert proc.returncode == 1 and (run / "state.json").is_file(), proc.stderr
    return run


def copy_of(run: Path, tmp: Path) -> Path:
    copy = tmp / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("run.lock"))
    return copy


def test_a_damaged_checkpoint_says_so(stopped_run: Path, tmp_path: Path) -> None:
    """state.json that is not JSON, or missing: `bcc status`, `resume` and `report` said
    "internal error" (exit 1); now exit 3, the file named, and what to do."""
    run = copy_of(stopped_run, tmp_path)
    (run / "state.json").write_text('{"schema_version": 1, "fsm_st')
    remedy = f"(fix: restore it from a backup, or redo the run without a model: `bcc replay {run}"
    for command in ("status", "resume", "report"):
        proc = bcc_in_process(command, str(run))
        assert proc.returncode == 3, (command, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"error: {run}/state.json is damaged (not JSON: "
        )
        assert remedy in lines[0], lines
    (run / "state.json").unlink()
    proc = bcc_in_process("resume", str(run))
    assert proc.returncode == 3
    assert proc.stderr.strip().splitlines() == [
        f"error: {run}/state.json, the run's checkpoint, is missing: the run directory is damaged "
        f"{remedy} --out NEW_DIR`)"
    ]


def test_a_read_only_run_directory_says_so_and_keeps_its_checkpoint(
    stopped_run: Path, tmp_path: Path
) -> None:
    """The run directory mounted read-only (bubblewrap): `bcc resume` was an internal error and
    `bcc report` said "free disk space"; now exit 8, "Read-only file system" and a remedy
    that fits, and the checkpoint as it was."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap mounts the run directory read-only")
    run = copy_of(stopped_run, tmp_path)
    before = (run / "state.json").read_bytes()
    read_only = ["bwrap", "--bind", "/", "/", "--ro-bind", str(run), str(run), "--dev", "/dev"]
    for command, name in (("resume", "run.lock"), ("report", "report.html")):
        proc = subprocess.run(
            [*read_only, "--proc", "/proc", *BCC, command, str(run)],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )  # fmt: skip
        assert proc.returncode == 8, (command, proc.stderr)
        assert proc.stderr.strip().splitlines() == [
            f"error: cannot write {run}/{name}: Read-only file system (fix: make {run} "
            "writable, or copy the run directory to a writable place)"
        ]
    assert (run / "state.json").read_bytes() == before


@pytest.mark.parametrize("point", ["create@1", "create:config.json@1", "create:state.json@1"])
def test_a_disk_full_while_the_run_directory_is_made_leaves_nothing(
    point: str, tmp_path: Path
) -> None:
    """ENOSPC at the first file (the problem's copy), at config.json, at state.json (the last):
    a half-made directory was accepted neither by `bcc resume` (no state.json) nor by a new
    run (`--out` not empty). Now: exit 8, one line saying to run again, nothing left (an empty
    `--out` stays empty), and the same command then starts the run."""
    problem, data = tmp_path / "problem.md", tmp_path / "d.csv"
    problem.write_text("Count the rows.\n")
    data.write_text("a,b\n1,2\n3,4\n")
    for run in (tmp_path / "new", tmp_path / "empty"):
        if run.name == "empty":
            run.mkdir()
        args = ["run", str(problem), str(data), "--out", str(run), "--quiet"]
        proc = bcc_in_process(*args, env={"BCC_FAILPOINTS": f"{point}=enospc"})
        assert proc.returncode == 8, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: disk full while writing {run}")
        assert lines[0].endswith(
            "(fix: free disk space or choose a writable --out, then run the command again "
            "(nothing of the run was kept))"
        ), lines
        assert not run.exists() if run.name == "new" else not any(run.iterdir())
        started = bcc_in_process(*args, env={"BCC_FAILPOINTS": "agent@1=bug"})  # stops at once
        assert started.returncode == 1 and "failpoint agent@1" in started.stderr, started.stderr
        assert json.loads((run / "state.json").read_text())["fsm_state"] == "WORKFLOW_ABORTED"
