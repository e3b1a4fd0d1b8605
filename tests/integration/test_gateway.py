"""Remote kernels through a real Jupyter Kernel Gateway on 127.0.0.1 (the dev dependency
``jupyter-kernel-gateway``), driven by the real CLI with the offline analyst: the same notebook
as a local run, verification passed, no kernel left on the gateway; a gateway killed mid-run
ends the run resumable (exit 5), and ``bcc resume`` with the gateway back completes it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from notebook_bcc.kernel.gateway import Gateway
from notebook_bcc.kernel.session import KernelSession
from tests.conftest import BCC, ROOT, run_bcc

pytestmark = pytest.mark.timeout(600)
EXAMPLE = ROOT / "examples" / "penguins"


class KernelGateway:
    """``jupyter kernelgateway`` on a free loopback port, in a folder of its own."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        jupyter = Path(sys.executable).parent / "jupyter"
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(self.folder / "runtime")}
        self.proc = subprocess.Popen(
            [str(jupyter), "kernelgateway", "--KernelGatewayApp.ip=127.0.0.1",
             f"--KernelGatewayApp.port={self.port}",
             "--JupyterWebsocketPersonality.list_kernels=True"],
            cwd=self.folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                self.kernels()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("the kernel gateway did not start in 60 s")

    def kernels(self) -> list[dict]:
        with urllib.request.urlopen(f"{self.url}/api/kernels", timeout=5) as reply:
            return json.loads(reply.read())

    def kill(self) -> None:
        """SIGKILL the gateway, then the kernels it started (they would outlive it)."""
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.proc = None
        subprocess.run(["pkill", "-9", "-f", str(self.folder / "runtime")], check=False)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[KernelGateway]:
    folder = tmp_path / "gateway"
    folder.mkdir()
    kg = KernelGateway(folder)
    kg.start()
    yield kg
    kg.kill()


def code_cells(run: Path) -> list[str]:
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def test_a_run_through_the_gateway_matches_a_local_run(
    tmp_path: Path, gateway: KernelGateway
) -> None:
    problem, data = EXAMPLE / "problem.md", EXAMPLE / "penguins.csv"
    remote, local = tmp_path / "remote", tmp_path / "local"
    proc = run_bcc(
        "run", str(problem), str(data), "--out", str(remote), "--quiet",
        "--kernel-gateway", gateway.url,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert run_bcc("run", str(problem), str(data), "--out", str(local), "--quiet").returncode == 0
    assert code_cells(remote) == code_cells(local)
    summary = json.loads((remote / "summary.json").read_text())
    assert summary["verification"]["status"] == "passed"
    assert summary["verification"]["results"] == "reproduced"
    assert summary["key_results"] == json.loads((local / "summary.json").read_text())["key_results"]
    assert summary["kernel"] == {"where": gateway.url, "sandboxed": False}
    assert gateway.kernels() == [], "no kernel is left on the gateway"
    # the data reached the kernel's own working directory on the gateway's side
    assert (gateway.folder / "bcc-runs" / "remote" / "assets" / "penguins.csv").exists()


def test_a_gateway_killed_mid_run_ends_resumable_and_resume_completes(
    tmp_path: Path, gateway: KernelGateway
) -> None:
    problem, data, run = EXAMPLE / "problem.md", EXAMPLE / "penguins.csv", tmp_path / "run"
    proc = subprocess.Popen(
        [*BCC, "run", str(problem), str(data), "--out", str(run), "--json",
         "--kernel-gateway", gateway.url],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:  # kill the gateway once a few cells have run on it
        event = json.loads(line)
        if event.get("event") == "COMPLETE_ACTION" and "integrity" in event.get("location", ""):
            gateway.kill()
            break
    proc.stdout.read()
    assert proc.wait(timeout=300) == 5, proc.stderr.read()[-2000:]
    state = json.loads((run / "state.json").read_text())
    assert state["fsm_state"] == "WORKFLOW_ABORTED" and state["resume_from"]
    gateway.start()
    resumed = run_bcc("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["verification"]["status"] == "passed"
    assert gateway.kernels() == []


def test_a_gateway_kernel_boots_while_bcc_works_and_is_never_left_behind(
    tmp_path: Path, gateway: KernelGateway
) -> None:
    """``launch`` asks the gateway for a kernel in a thread; ``start`` takes it, ready; a
    shutdown while it is still being asked for waits for it and removes it."""
    work = tmp_path / "work"
    (work / "assets").mkdir(parents=True)
    session = KernelSession(work, gateway=Gateway(gateway.url))
    session.launch()
    time.sleep(2)  # bcc's own work while the gateway starts the kernel
    started = time.monotonic()
    session.start()
    waited = time.monotonic() - started
    outcome = session.run_cell("import os; print(os.getcwd())")
    remote_id = session.remote_id
    session.shutdown()
    assert outcome.status == "ok" and outcome.excerpt.strip().endswith("bcc-runs/work")
    assert waited < 0.5, f"start waited {waited:.2f} s for a kernel launched 2 s before"
    assert remote_id and gateway.kernels() == []
    quitter = KernelSession(work, gateway=Gateway(gateway.url))
    quitter.launch()
    quitter.shutdown(now=True)  # e.g. a bad model key: the run ends before its first cell
    assert gateway.kernels() == []


def test_too_much_data_for_a_gateway_names_the_option(tmp_path: Path) -> None:
    from notebook_bcc.errors import UsageError
    from notebook_bcc.kernel.gateway import MAX_UPLOAD_BYTES, check_upload

    big = tmp_path / "big.csv"
    with big.open("wb") as handle:
        handle.truncate(MAX_UPLOAD_BYTES + 1)
    with pytest.raises(UsageError) as caught:
        check_upload([big], None)
    assert "--kernel-data-dir" in caught.value.one_line()
    check_upload([big], "/data/on/the/kernel/side")  # linked there, not sent


def test_a_killed_bcc_leaves_no_kernel_on_the_gateway_after_resume(
    tmp_path: Path, gateway: KernelGateway
) -> None:
    problem, data, run = EXAMPLE / "problem.md", EXAMPLE / "penguins.csv", tmp_path / "run"
    proc = subprocess.Popen(
        [*BCC, "run", str(problem), str(data), "--out", str(run), "--json", "--no-verify",
         "--kernel-gateway", gateway.url],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line).get("event") == "COMPLETE_ACTION":
            proc.kill()  # SIGKILL: bcc cannot shut its kernel down
            break
    proc.wait(timeout=60)
    [orphan] = gateway.kernels()
    resumed = run_bcc("resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    reaped = [e.get("gateway_kernels") for e in events if e["type"] == "orphans_reaped"]
    assert reaped == [[orphan["id"]]]
    assert gateway.kernels() == []
