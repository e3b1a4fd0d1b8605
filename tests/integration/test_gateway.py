"""Remote kernels through a real Jupyter Kernel Gateway on 127.0.0.1 (the dev dependency
``jupyter-kernel-gateway``), driven by the real CLI with the offline analyst: the same notebook
as a local run, verification passed, no kernel and no working directory left on the gateway; a
gateway killed mid-run ends the run resumable (exit 5), and ``bcc resume`` with the gateway
back completes it (``--keep-gateway-files``: the run kernel's and the verification kernel's
directories stay, one each). Two gateways used from two threads do not mix.

All of it is about kernels, so all of it runs real ones. Where the penguins analysis is not the
point (a gateway run matches a local one; a killed bcc leaves no kernel on the gateway), the
run is a one-question problem on a 60-row table (``_tiny``); a gateway killed mid-run keeps
the penguins example with a fork, whose branch kernels' directories and figures it checks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from notebook_bcc.kernel.gateway import Gateway
from notebook_bcc.kernel.session import KernelSession
from tests.conftest import BCC, ROOT, run_bcc

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
EXAMPLE = ROOT / "examples" / "penguins"


class KernelGateway:
    """``jupyter kernelgateway`` on a free loopback port, in a folder of its own (with a
    token: every request, the websocket's too, must carry it)."""

    def __init__(self, folder: Path, token: str | None = None) -> None:
        self.folder = folder
        self.token = token
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
             "--JupyterWebsocketPersonality.list_kernels=True",
             *([f"--KernelGatewayApp.auth_token={self.token}"] if self.token else [])],
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
        headers = {"Authorization": f"token {self.token}"} if self.token else {}
        request = urllib.request.Request(f"{self.url}/api/kernels", headers=headers)
        with urllib.request.urlopen(request, timeout=5) as reply:
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


def _tiny(tmp: Path) -> tuple[Path, Path]:
    """A one-question problem on a 60-row table: a run of a few kernel cells."""
    problem = tmp / "problem.md"
    problem.write_text("---\ntitle: Plant growth\n---\nHow many rows have a `light` above 3?\n")
    rows = ["light,water,soil,height"]
    rows += [f"{i % 7},{(i * 3) % 11},{'ab'[i % 2]},{2 * (i % 7) + i % 3}" for i in range(60)]
    data = tmp / "plants.csv"
    data.write_text("\n".join(rows) + "\n")
    return problem, data


def code_cells(run: Path) -> list[str]:
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def test_a_run_through_the_gateway_matches_a_local_run(
    tmp_path: Path, gateway: KernelGateway
) -> None:
    problem, data = _tiny(tmp_path)
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
    # the run kernel and the verification kernel each removed their working directory there
    assert list((gateway.folder / "bcc-runs").iterdir()) == []


def test_a_gateway_killed_mid_run_ends_resumable_and_resume_completes(
    tmp_path: Path, gateway: KernelGateway
) -> None:
    problem, data, run = tmp_path / "problem.md", EXAMPLE / "penguins.csv", tmp_path / "run"
    # a fork too (the small table would not make one): its branch kernels' directories below
    problem.write_text((EXAMPLE / "problem.md").read_text().replace("---\n", "---\nfork: yes\n", 1))
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
    shutil.rmtree(gateway.folder / "bcc-runs")  # a killed kernel leaves its directory
    gateway.start()
    resumed = run_bcc("resume", str(run), "--quiet", "--keep-gateway-files")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["verification"]["status"] == "passed"
    assert gateway.kernels() == []
    # kept: the run kernel's directory and the verification kernel's own, each with the data
    # and the figures its cells saved
    kept = gateway.folder / "bcc-runs"
    # (and a fork's branch kernels', each in a directory of its own)
    assert sorted(p.name for p in kept.iterdir()) == [
        "run", "run.fork-1", "run.fork-2", "run.verify"
    ]  # fmt: skip
    # the kept branch's kernel became the run's: what it saved after the fork is in its own
    (fork,) = summary["alternatives"]
    k = next(i for i, b in enumerate(fork["branches"], 1) if b["kept"])
    figures = [
        sorted({p.name for d in dirs for p in (kept / d / "outputs").glob("*.png")})
        for dirs in (("run", f"run.fork-{k}"), ("run.verify",))
    ]
    assert figures[0] and figures[0] == figures[1]
    assert all((kept / d / "assets" / "penguins.csv").is_file() for d in ("run", "run.verify"))


def test_a_gateway_kernel_boots_while_bcc_works_and_is_never_left_behind(
    tmp_path: Path, gateway: KernelGateway
) -> None:
    """``launch`` asks the gateway for a kernel in a thread; ``start`` takes it, ready; a
    shutdown while it is still being asked for waits for it and removes it."""
    work = tmp_path / "work"
    (work / "assets").mkdir(parents=True)
    session = KernelSession(work, gateway=Gateway(gateway.url))
    session.launch()  # returns at once; the kernel is asked for in a thread
    deadline = time.monotonic() + 60
    while not gateway.kernels() and time.monotonic() < deadline:  # bcc's own work meanwhile
        time.sleep(0.05)
    launched = [k["id"] for k in gateway.kernels()]
    assert len(launched) == 1, "launch started one kernel before start was called"
    session.start()
    assert [k["id"] for k in gateway.kernels()] == launched  # start took it: no second kernel
    outcome = session.run_cell("import os; print(os.getcwd())")
    remote_id = session.remote_id
    workdir = gateway.folder / "bcc-runs" / "work"
    assert (workdir / "assets").is_dir()
    session.shutdown()
    assert not workdir.exists(), "the kernel removed its working directory before it exited"
    assert outcome.status == "ok" and outcome.excerpt.strip().endswith("bcc-runs/work")
    assert remote_id == launched[0] and gateway.kernels() == []
    quitter = KernelSession(work, gateway=Gateway(gateway.url))
    quitter.launch()
    quitter.shutdown(now=True)  # e.g. a bad model key: the run ends before its first cell
    assert gateway.kernels() == []


@pytest.mark.slow
def test_two_gateways_used_from_two_threads_keep_their_own_url_and_token(
    tmp_path: Path, gateway: KernelGateway
) -> None:
    """Each manager has a gateway client of its own: the run kernel and the verification
    kernel start from two threads, and a gateway's url or token never reaches the other."""
    (tmp_path / "other").mkdir()
    other = KernelGateway(tmp_path / "other", token="s3cret")
    other.start()
    try:
        with pytest.raises(urllib.error.HTTPError):  # this gateway wants its token
            urllib.request.urlopen(f"{other.url}/api/kernels", timeout=5)
        gateways = [Gateway(gateway.url), Gateway(other.url, token="s3cret")]
        managers = [g.manager("python3") for g in gateways]
        assert [m.kernels_url for m in managers] == [
            f"{gateway.url}/api/kernels",
            f"{other.url}/api/kernels",
        ]
        assert [m.gateway_client.auth_token for m in managers] == ["", "s3cret"]
        assert [m.gateway_client.ws_url for m in managers] == [
            gateway.url.replace("http", "ws"),
            other.url.replace("http", "ws"),
        ]
        work = tmp_path / "work"
        (work / "assets").mkdir(parents=True)
        together = threading.Barrier(2)
        seen: dict[int, object] = {}

        def use(i: int, where: Gateway) -> None:
            session = KernelSession(work, gateway=where)
            try:
                together.wait(timeout=30)  # both ask their gateway for a kernel at once
                seen[i] = session.run_cell("import os; print(os.getcwd())").excerpt.strip()
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                seen[i] = exc
            finally:
                session.shutdown()

        threads = [threading.Thread(target=use, args=item) for item in enumerate(gateways)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert seen == {
            0: str((gateway.folder / "bcc-runs" / "work").resolve()),
            1: str((other.folder / "bcc-runs" / "work").resolve()),
        }
        assert gateway.kernels() == [] and other.kernels() == []
    finally:
        other.kill()


def test_a_kernel_removes_only_the_working_directory_it_was_given(tmp_path: Path) -> None:
    """``cleanup_code`` undoes ``setup_code`` (run here by a plain interpreter standing in for
    the remote kernel): back where it started, its directory gone; a directory of another
    role is not its own and stays."""
    run, start = tmp_path / "20250101-000000-run", tmp_path / "gateway-side"
    (run / "assets").mkdir(parents=True)
    (run / "assets" / "data.csv").write_text("a\n1\n")
    start.mkdir()
    verify, own = Gateway("http://unused", role="verify"), Gateway("http://unused")

    def kernel(*sources: str) -> str:
        code = f"import os; os.chdir({str(start)!r})\n" + "".join(
            f"exec({src!r}, {{}})\n" for src in sources
        )
        out = subprocess.run([sys.executable, "-c", code + "print(os.getcwd())"],
                             capture_output=True, text=True, check=True)  # fmt: skip
        return out.stdout.strip()

    workdir = start / "bcc-runs" / f"{run.name}.verify"
    assert kernel(verify.setup_code(run), own.cleanup_code(run)) == str(workdir.resolve())
    assert (workdir / "assets" / "data.csv").read_text() == "a\n1\n"
    assert kernel(verify.setup_code(run), verify.cleanup_code(run)) == str(start.resolve())
    assert list((start / "bcc-runs").iterdir()) == []


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
    (problem, data), run = _tiny(tmp_path), tmp_path / "run"
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
