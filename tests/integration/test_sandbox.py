"""The bubblewrap sandbox, through the real CLI and litellm path (the loopback server plays
the model, so the sandbox is on by default): model-written cells cannot reach the network,
the user's home or the filesystem outside the run directory; they can read the data and write
``outputs/``; the failed attempts are in the logs and the run completes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from notebook_bcc.kernel.sandbox import bwrap_path, choose
from tests.fakellm import FakeLLM, each_behavior
from tests.integration.test_llm import BCC, ROOT, _env, bcc

REQUIRED = os.environ.get("BCC_REQUIRE_SANDBOX") == "1"  # .ci/run: skipping would hide a gap
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        bwrap_path() is None and not REQUIRED, reason="bubblewrap cannot run on this machine"
    ),
]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    yield server
    server.close()


@pytest.fixture
def canary() -> Iterator[Path]:
    path = Path.home() / f"bcc-canary-{uuid.uuid4().hex[:8]}.txt"
    path.write_text("secret")
    yield path
    path.unlink(missing_ok=True)


def attempts(port: int, canary: Path, written: Path) -> list[str]:
    """The action of each behavior in turn: three escapes, then the honest work."""
    return [
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\nresult = 1",
        f"secret = open({str(canary)!r}).read()\nresult = 2",
        f"open({str(written)!r}, 'w').write('x')\nresult = 3",
        "import pandas as pd\nframe = pd.read_csv(user_submit_files[0])\n"
        "frame.to_csv('outputs/copy.csv', index=False)\nresult = len(frame)",
    ]


policy = each_behavior  # kept under its old name for the tests that import it


def test_model_code_is_confined_and_the_honest_attempt_completes(
    tmp_path: Path, listener: socket.socket, canary: Path
) -> None:
    written = Path.home() / f"bcc-written-{uuid.uuid4().hex[:8]}.txt"
    problem, data, run = tmp_path / "problem.md", tmp_path / "d.csv", tmp_path / "run"
    problem.write_text("Describe the numbers.\n")
    data.write_text("a,b\n1,2\n3,4\n")
    codes = attempts(listener.getsockname()[1], canary, written)
    with FakeLLM(policy=policy(codes)) as fake:
        proc, _, _ = bcc(
            "run", str(problem), str(data), "--model", "openai/fake-model",
            "--api-base", fake.url, "--out", str(run), "--quiet",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    with pytest.raises(TimeoutError):
        listener.accept()  # no cell ever reached it
    assert not written.exists()
    logs = "\n".join(p.read_text() for p in sorted((run / "logs").glob("*COMPLETE_ACTION*")))
    assert "ConnectionRefusedError" in logs or "OSError" in logs
    assert f"FileNotFoundError: [Errno 2] No such file or directory: '{canary}'" in logs
    assert f"OSError: [Errno 30] Read-only file system: '{written}'" in logs
    assert (run / "outputs" / "copy.csv").read_text() == "a,b\n1,2\n3,4\n"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["kernel"] == {"where": "local", "sandboxed": True}
    assert summary["verification"]["status"] == "passed"  # its fresh kernel is sandboxed too
    assert "kernel: local, sandboxed (bubblewrap" in (run / "summary.md").read_text()
    assert "kernel    local, sandboxed" in bcc("status", str(run))[0].stdout
    leftover = subprocess.run(["pgrep", "-f", str(run)], capture_output=True, text=True)
    assert leftover.stdout == "", "no sandboxed kernel outlives bcc"


def test_sandbox_asked_for_without_bubblewrap_is_a_usage_error(tmp_path: Path) -> None:
    problem, data = tmp_path / "problem.md", tmp_path / "d.csv"
    problem.write_text("Describe the numbers.\n")
    data.write_text("a,b\n1,2\n")
    env = {**_env(), "PATH": str(tmp_path)}  # no bwrap on it
    proc = subprocess.run(
        [*BCC, "run", str(problem), str(data), "--sandbox", "--out", str(tmp_path / "r")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith("error: --sandbox: bubblewrap is not available here (fix: install bubblewrap")
    )
    assert not (tmp_path / "r").exists()


def test_the_default_sandboxes_models_not_the_offline_analyst() -> None:
    assert choose(None, "offline") is False
    assert choose(None, "openai/gpt-4o") is True
    assert choose(False, "openai/gpt-4o") is False


def _without_bwrap(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**_env(), "PATH": str(tmp_path)}  # no bwrap on it
    return subprocess.run(
        [*BCC, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


def test_a_model_run_without_bubblewrap_refuses_to_start_unless_no_sandbox(
    tmp_path: Path,
) -> None:
    problem, data = tmp_path / "problem.md", tmp_path / "d.csv"
    problem.write_text("Describe the numbers.\n")
    data.write_text("a,b\n1,2\n")
    model = ["--model", "openai/fake-model", "--api-base", "http://127.0.0.1:9"]
    proc = _without_bwrap(
        tmp_path, "run", str(problem), str(data), *model, "--out", str(tmp_path / "r")
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: a model's code runs only in the bubblewrap sandbox")
    assert "(fix: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap" in lines[0]
    assert "or pass --no-sandbox" in lines[0]
    assert not (tmp_path / "r").exists()


def test_a_replayed_run_without_bubblewrap_warns_in_one_line(tmp_path: Path) -> None:
    """Recorded code (``--model replay:DIR``) is not a live model's: it runs unsandboxed."""
    recorded = ROOT / "tests" / "fixtures" / "replay_v0_1"
    proc = _without_bwrap(
        tmp_path, "run", str(recorded / "problem.md"), str(recorded / "assets" / "widgets.csv"),
        "--model", f"replay:{recorded}", "--out", str(tmp_path / "r"), "--quiet",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("warning: bubblewrap cannot run here")
    assert json.loads((tmp_path / "r" / "config.json").read_text())["sandbox"] is False


def test_a_sandboxed_run_is_not_resumed_without_bubblewrap(tmp_path: Path) -> None:
    problem, data, run = tmp_path / "problem.md", tmp_path / "d.csv", tmp_path / "r"
    problem.write_text("Describe the numbers.\n")
    data.write_text("a,b\n1,2\n3,4\n")
    started = bcc(
        "run", str(problem), str(data), "--sandbox", "--max-wall-s", "0.001", "--out", str(run),
        "--sandbox-max-file-mb", "64", "--quiet",
    )[0]  # fmt: skip
    assert started.returncode == 7, started.stderr  # budget exhausted: resumable
    config = json.loads((run / "config.json").read_text())
    assert config["sandbox"] is True and config["sandbox_max_file_mb"] == 64
    events = (run / "events.jsonl").read_bytes()
    proc = _without_bwrap(tmp_path, "resume", str(run), "--max-wall-s", "600")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: this run's kernels run in the bubblewrap sandbox, and bubblewrap cannot run here"
    )
    assert (run / "events.jsonl").read_bytes() == events  # nothing done
