"""KernelSession against real ipykernel kernels (no mocks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notebook_bcc.config import RunConfig
from notebook_bcc.errors import KernelError
from notebook_bcc.kernel import processes
from notebook_bcc.kernel.processes import kill_live_kernels, live_kernels, scrub_env
from notebook_bcc.kernel.ready import ReadyKernelClient
from notebook_bcc.kernel.records import CellOutcome
from notebook_bcc.kernel.sandbox import bwrap_path
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.kernel.stream import FLUSH_CHARS, IOPUB_SNDHWM

pytestmark = pytest.mark.timeout(120)

ENV = {**os.environ, "FOO_API_KEY": "canary", "MY_SETTING": "kept"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kernel")


@pytest.fixture(scope="module")
def session(workdir: Path) -> Iterator[KernelSession]:
    """One kernel shared by the tests that keep it alive and healthy."""
    with KernelSession(workdir, cell_timeout=60, output_cap_chars=1_000, env=ENV) as s:
        yield s


@pytest.fixture()
def fresh(tmp_path: Path) -> Iterator[KernelSession]:
    """A kernel for tests that kill or restart it."""
    with KernelSession(tmp_path, cell_timeout=2) as s:
        s.interrupt_grace = 1.0
        yield s


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


#: a cell printing the namespace's names, but those IPython adds with each cell (``_i7``)
USER_NAMES = "print(sorted(k for k in get_ipython().user_ns if not k.startswith('_')))"


def test_scrub_env_removes_secrets_case_insensitively() -> None:
    env = {"FOO_API_KEY": "a", "gh_token": "b", "AWS_REGION": "c", "OPENAI_BASE": "d", "HOME": "h"}
    assert scrub_env(env) == {"HOME": "h"}


def test_cwd_and_scrubbed_environment(session: KernelSession, workdir: Path) -> None:
    out = session.run_cell(
        "import os\n"
        "open('written.txt', 'w').write('hi')\n"
        "print(os.environ.get('FOO_API_KEY'), os.environ.get('MY_SETTING'))"
    )
    assert out.status == "ok"
    assert (workdir / "written.txt").read_text() == "hi"
    assert out.excerpt.strip() == "None kept"
    assert session.pid is not None and _alive(session.pid)


def test_stream_error_and_execution_count(session: KernelSession) -> None:
    first = session.run_cell("print('hello')")
    assert (first.status, first.excerpt) == ("ok", "hello\n")
    assert first.outputs[0]["output_type"] == "stream"
    err = session.run_cell("def f():\n    raise ValueError('boom')\nf()")
    assert err.status == "error"
    assert (err.error_name, err.error_value) == ("ValueError", "boom")
    assert err.excerpt.rstrip().endswith("ValueError: boom")
    assert "\x1b[" not in err.excerpt
    assert any(o["output_type"] == "error" for o in err.outputs)
    assert err.execution_count == first.execution_count + 1


def test_image_output_kept(session: KernelSession) -> None:
    out = session.run_cell(
        "import io, matplotlib\n"
        "matplotlib.use('Agg')\n"
        "import matplotlib.pyplot as plt\n"
        "from IPython.display import Image, display\n"
        "fig, ax = plt.subplots()\n"
        "ax.plot([1, 2, 3])\n"
        "buf = io.BytesIO()\n"
        "fig.savefig(buf, format='png')\n"
        "display(Image(buf.getvalue()))"
    )
    assert out.status == "ok"
    assert any("image/png" in o.get("data", {}) for o in out.outputs)
    assert "[image/png]" in out.excerpt


def test_huge_print_is_capped(session: KernelSession) -> None:
    out = session.run_cell("print('x' * 5_000_000)\nprint('tail-marker')")
    assert out.status == "ok"
    text = "".join(o["text"] for o in out.outputs if o["output_type"] == "stream")
    assert len(text) < 1_200
    assert "[output truncated by bcc:" in text
    assert len(out.excerpt) < session.excerpt_chars + 100
    assert "chars omitted] ..." in out.excerpt
    assert out.excerpt.rstrip().endswith("tail-marker")


def test_oversized_rich_output_dropped(session: KernelSession) -> None:
    out = session.run_cell(
        "from IPython.display import display\n"
        "display({'text/plain': 'y' * 6_000_000}, raw=True)\n"
        "display({'text/html': '<b>small</b>', 'text/plain': 'small'}, raw=True)"
    )
    assert out.status == "ok"
    assert [o["data"]["text/html"] for o in out.outputs] == ["<b>small</b>"]


def test_inspect_reports_variables_without_side_effects(session: KernelSession) -> None:
    session.run_cell(
        "import pandas as pd, numpy as np\n"
        "df = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})\n"
        "cfg = {'alpha': 0.5}\n"
        "arr = np.zeros((4, 5))\n"
        "def helper():\n    pass\n"
        "class Model:\n    def __call__(self):\n        return 1\n"
        "model = Model()"
    )
    names_before = session.run_cell(USER_NAMES).excerpt
    before_cell = session.run_cell("1 + 1")

    variables = {v.name: v for v in session.inspect()}
    session.check(["df"], ["len(df) == 3", "(leak := 1)"])

    after_cell = session.run_cell("_")  # the helper ran no counted cell and left `_` alone
    assert after_cell.execution_count == before_cell.execution_count + 1
    assert after_cell.excerpt.strip() == "2"
    assert session.run_cell(USER_NAMES).excerpt == names_before  # the helper left no names
    df = variables["df"]
    assert (df.kind, df.shape, df.length, df.repr) == ("DataFrame", "3x2", 3, "DataFrame 3x2")
    assert df.columns[0] == ("a", "int64") and df.columns[1][0] == "b"
    assert df.bytes > 0
    assert variables["cfg"].kind == "dict" and variables["cfg"].repr == "{'alpha': 0.5}"
    assert variables["arr"].shape == "4x5" and variables["arr"].bytes == 160
    assert variables["model"].kind == "Model"  # a callable instance is data, its class is not
    assert not {"pd", "np", "helper", "Model", "In", "Out", "_", "get_ipython"} & set(variables)
    # the helper is compiled once per kernel, into one module outside the user namespace
    kept = session.run_cell("import sys\nprint([m for m in sys.modules if 'bcc_helper' in m])")
    assert kept.excerpt.count("_bcc_helper_") == 1


def test_check_artifacts_and_criteria(session: KernelSession) -> None:
    session.run_cell("score = 0.9")
    report = session.check(["score", "missing"], ["score > 0.5", "score > 1", "undefined_name"])
    assert report.artifacts == (("score", True), ("missing", False))
    assert [c[1] for c in report.criteria] == ["passed", "failed", "error"]
    assert report.criteria[2][2] == "NameError: name 'undefined_name' is not defined"


def test_a_figure_describes_its_titles_and_axis_labels(tmp_path: Path) -> None:
    with KernelSession(tmp_path) as session:
        out = session.run_cell(
            "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_title('Mass')\n"
            "ax.set_xlabel('g')\nax.set_ylabel('count')\nplt.show()"
        )
    texts = [o["data"]["text/plain"] for o in out.outputs if "image/png" in o.get("data", {})]
    assert texts == ["<Figure size 640x480 with 1 Axes: axes 'Mass' x: g, y: count>"]


def test_inspection_names_modules_and_callables(session: KernelSession) -> None:
    session.run_cell("import json as js\ndef scale(x, factor=2):\n    return x * factor")
    names = session.inspect_namespace()
    assert ("js", "json") in names.modules
    assert ("scale", "signature (x, factor=2)") in names.callables
    assert "scale" not in {v.name for v in names.variables}


def test_delete_removes_names(session: KernelSession) -> None:
    session.run_cell("doomed = list(range(10))\ndoomed")
    session.delete(["doomed", "never_existed"])
    assert session.check(["doomed"], []).artifacts == (("doomed", False),)


def test_delete_frees_the_object_but_never_another_name_bound_to_it(
    session: KernelSession,
) -> None:
    session.run_cell(
        "import weakref\nclass Box:\n    pass\n"
        "shown = Box()\nprobe = weakref.ref(shown)\nshown"  # Out history holds it too
    )
    session.run_cell("X_test = Box()\nfor part in [X_test]:\n    pass")  # part is X_test
    session.delete(["shown", "part"])
    report = session.check(["shown", "part", "X_test"], ["probe() is None"])
    assert report.artifacts == (("shown", False), ("part", False), ("X_test", True))
    assert report.criteria[0][1] == "passed"  # nothing holds the displayed object any more


def test_timeout_interrupts_and_kernel_survives(fresh: KernelSession) -> None:
    fresh.run_cell("kept = 41")
    started = time.monotonic()
    out = fresh.run_cell("while True:\n    pass")
    assert out.status == "timeout"
    assert out.error_name == "TimeoutError"
    assert time.monotonic() - started < 10
    after = fresh.run_cell("print(kept + 1)")
    assert (after.status, after.excerpt) == ("ok", "42\n")
    assert fresh.restarts == 0


def test_timeout_with_ignored_sigint_restarts(fresh: KernelSession) -> None:
    out = fresh.run_cell(
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    )
    assert out.status == "timeout"
    assert "restarted" in out.excerpt
    assert fresh.restarts == 1
    assert fresh.run_cell("print('back')").excerpt == "back\n"


def test_slow_check_times_out_and_kernel_survives(fresh: KernelSession) -> None:
    fresh.run_cell("kept = 1")
    with pytest.raises(TimeoutError):
        fresh.check([], ["__import__('time').sleep(60)"], timeout=1)
    assert fresh.check(["kept"], ["kept == 1"]).criteria[0][1] == "passed"
    assert fresh.restarts == 0


def test_dead_kernel_is_restarted(fresh: KernelSession) -> None:
    old_pid = fresh.pid
    out = fresh.run_cell("import os\nos._exit(1)")
    assert out.status == "dead"
    assert out.error_name == "DeadKernelError"
    assert fresh.restarts == 1 and fresh.pid != old_pid
    after = fresh.run_cell("print('alive')")
    assert (after.status, after.excerpt, after.execution_count) == ("ok", "alive\n", 1)


def test_shutdown_kills_process_and_is_idempotent(tmp_path: Path) -> None:
    s = KernelSession(tmp_path)
    s.start()
    pid = s.pid
    assert pid is not None and _alive(pid)
    s.shutdown()
    s.shutdown()
    assert s.pid is None
    assert not _alive(pid)


def test_start_failures_raise_kernel_error(tmp_path: Path) -> None:
    with pytest.raises(KernelError):
        KernelSession(tmp_path, kernel_name="no-such-kernel").start()
    with pytest.raises(KernelError):
        KernelSession(tmp_path / "missing").start()


def test_a_start_waits_for_the_kernel_not_for_silence(tmp_path: Path) -> None:
    """ReadyKernelClient: ready at the kernel_info's idle status, without jupyter_client's
    0.2 s of waiting for IOPub to fall silent; the first cell then runs normally."""
    with KernelSession(tmp_path) as s:
        s.start()
        assert isinstance(s._running().kc, ReadyKernelClient)
        first = s.run_cell("print('up')")
    assert (first.status, first.excerpt.strip(), first.execution_count) == ("ok", "up", 1)


#: a client process that stops itself (SIGSTOP: its zmq I/O thread too) for 4 s while the
#: kernel flushes 3000 times, then reads on: prints the kernel's pid, then what arrived
STOPPED_CLIENT = """
import asyncio, json, os, queue, signal, subprocess, sys
from pathlib import Path
from notebook_bcc.kernel.sandbox import SandboxLimits
from notebook_bcc.kernel.session import KernelSession

CODE = "import sys\\nfor i in range(3000):\\n    sys.stderr.write(f'{i}.')\\n    sys.stderr.flush()"
limits = SandboxLimits(4000, 256, 500) if sys.argv[2] == "sandboxed" else None
with KernelSession(Path(sys.argv[1]), sandbox=limits) as s:
    s.start()
    print(s.pid, flush=True)
    kc = s._running().kc

    async def stop_then_read():
        msg_id = kc.execute(CODE)
        subprocess.Popen(["sh", "-c", f"sleep 4; kill -CONT {os.getpid()}"])
        os.kill(os.getpid(), signal.SIGSTOP)
        streams, text = 0, ""
        while True:
            try:
                msg = await kc.get_iopub_msg(timeout=20)
            except queue.Empty:  # the idle was dropped
                return streams, text, False
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                streams, text = streams + 1, text + msg["content"]["text"]
            if msg["content"].get("execution_state") == "idle":
                return streams, text, True

    print(json.dumps(asyncio.run(stop_then_read())), flush=True)
"""


@pytest.mark.parametrize("where", ["local", "sandboxed"])
def test_a_stopped_client_loses_no_output(tmp_path: Path, where: str) -> None:
    """A client whose process does not run (stopped, or starved of CPU on a loaded core) while
    the kernel sends: the kernel's IOPub queue (zmq's 1000 per client, sized when the client
    connects) dropped the end of a 3000-flush bar and the cell's idle (992 of 3,000 arrived).
    The kernel's queue holds IOPUB_SNDHWM from its first client on; the client's holds
    IOPUB_RCVHWM while it reads the backlog."""
    if where == "sandboxed" and bwrap_path() is None:
        pytest.skip("bubblewrap cannot run on this machine")
    client = subprocess.Popen(
        [sys.executable, "-c", STOPPED_CLIENT, str(tmp_path), where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = client.communicate(timeout=100)
    finally:
        if client.poll() is None:
            client.kill()
            out, err = client.communicate()
        kernel_pid = out.split("\n", 1)[0].strip()
        if kernel_pid.isdigit() and _alive(int(kernel_pid)):
            os.kill(int(kernel_pid), 9)
    assert client.returncode == 0, err[-2000:]
    streams, text, idle = json.loads(out.splitlines()[-1])
    whole = "".join(f"{i}." for i in range(3000))
    assert (streams, text == whole, idle) == (3000, True, True), (len(text), text[-40:])


def test_a_kernel_that_exits_at_start_fails_fast(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "jupyter" / "kernels" / "exits"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-c", "raise SystemExit(3)", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "exits"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    work = tmp_path / "work"
    work.mkdir()
    started = time.monotonic()
    with pytest.raises(KernelError, match="failed to start"):
        KernelSession(work, kernel_name="exits").start()
    assert time.monotonic() - started < 20  # not the 60 s startup timeout


def test_restart_empties_namespace(fresh: KernelSession) -> None:
    fresh.run_cell("gone_after_restart = 1")
    fresh.restart()
    assert fresh.restarts == 1
    assert fresh.check(["gone_after_restart"], []).artifacts == (("gone_after_restart", False),)
    assert fresh.run_cell("print('fresh')").execution_count == 1


# -- huge outputs and the live kernel registry ------------------------------------------------

_HUGE_CHILD = """
import json, sys
from pathlib import Path
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.kernel.stream import FLUSH_CHARS

def peak_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

from notebook_bcc.kernel import client as outputs

sizes = []  # the text of each stream message bcc received
received = outputs.StreamingClient.output
def output(self, outs, msg, display_id, cell_index):
    if msg["msg_type"] == "stream":
        sizes.append(len(msg["content"]["text"]))
    return received(self, outs, msg, display_id, cell_index)
outputs.StreamingClient.output = output

cwd = Path(sys.argv[1])
with KernelSession(cwd, cell_timeout=120, spill_dir=cwd / "outputs") as s:
    s.run_cell("print('warm up')", spill_name="0")
    before = peak_kb()
    out = s.run_cell(sys.argv[2], spill_name="7-1")
    after = peak_kb()
print(json.dumps({
    "status": out.status, "spilled": out.spilled, "excerpt": out.excerpt, "peak_kb": after - before,
    "largest_message": max(sizes), "messages": len(sizes),
    "text": "".join(o["text"] for o in out.outputs if o["output_type"] == "stream"),
}))
"""

# 200 MB in 2 M numbered lines of 100 chars, one 1 MB message per flush, a stderr line midway;
# the short sleeps keep a fast kernel from queueing much ahead of a slow reader
_HUGE_CELL = """
import sys, time
for c in range(200):
    time.sleep(0.005)
    sys.stdout.write(''.join(f'{i:09d}{"x" * 90}\\n' for i in range(c * 10_000, (c + 1) * 10_000)))
    sys.stdout.flush()
    if c == 99:
        sys.stderr.write('midway on stderr\\n')
        sys.stderr.flush()
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc for VmHWM")
@pytest.mark.parametrize("flushes", [True, False], ids=["flushed", "never-flushed"])
def test_huge_stream_is_spilled_with_bounded_memory(tmp_path: Path, flushes: bool) -> None:
    """Run in a child process so that its peak RSS is the orchestrator's alone.

    Never flushed, the cell's 200 MB would reach bcc in messages of whatever was printed in
    0.2 s (ipykernel's flush timer) but for the kernel's BoundedOutStream, which sends at most
    about FLUSH_CHARS at a time. How much of the output bcc holds at once also depends on how
    far it lags behind the kernel (a loaded machine queues more of the 200 messages), so the
    figure at speed is a benchmark (benchmarks/huge_output.py); here, that no message is
    larger than the bound and that bcc never holds the whole output.
    """
    root = Path(__file__).resolve().parents[2]
    cell = _HUGE_CELL if flushes else _HUGE_CELL.replace("    sys.stdout.flush()\n", "")
    assert flushes or "sys.stdout.flush()" not in cell
    proc = subprocess.run(
        [sys.executable, "-c", _HUGE_CHILD, str(tmp_path), cell],
        capture_output=True, text=True, timeout=110, cwd=root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["largest_message"] <= FLUSH_CHARS + 1_000_000  # the bound, plus one write
    assert result["messages"] >= 200
    assert result["peak_kb"] < 200_000_000 // 1024, f"peak RSS grew by {result['peak_kb']} kB"

    assert result["status"] == "ok"
    assert result["spilled"] == "outputs/cell-7-1.txt"
    marker = "\n... [output truncated by bcc: 199980017 chars omitted; full text in outputs/cell-7-1.txt]\n"
    assert result["text"].endswith(marker)
    assert len(result["text"]) <= 20_000 + len(marker)
    assert result["text"].startswith("000000000xxx")
    assert "; full text in outputs/cell-7-1.txt] ...\n" in result["excerpt"]
    assert len(result["excerpt"]) <= RunConfig.excerpt_chars + 120  # the session's default
    assert result["excerpt"].endswith(f"001999999{'x' * 90}\n")

    spilled = tmp_path / "outputs" / "cell-7-1.txt"
    assert spilled.stat().st_size == 200_000_000 + len("midway on stderr\n")
    with open(spilled, encoding="utf-8") as fh:
        assert fh.readline() == f"000000000{'x' * 90}\n"
        fh.seek(100 * 1_000_000)
        assert fh.readline() == "midway on stderr\n"
        assert fh.readline() == f"001000000{'x' * 90}\n"
        fh.seek(spilled.stat().st_size - 100)
        assert fh.read() == f"001999999{'x' * 90}\n"


@pytest.fixture(scope="module")
def spilling(workdir: Path) -> Iterator[KernelSession]:
    """A kernel whose sessions spill stream text past 1,000 chars to workdir/outputs."""
    with KernelSession(
        workdir, cell_timeout=60, output_cap_chars=1_000, excerpt_chars=300,
        spill_dir=workdir / "outputs",
    ) as s:  # fmt: skip
        yield s


def _stream_text(outcome: CellOutcome) -> str:
    return "".join(o["text"] for o in outcome.outputs if o["output_type"] == "stream")


def test_small_output_is_not_spilled(spilling: KernelSession, workdir: Path) -> None:
    out = spilling.run_cell("print('hi')", spill_name="1-1")
    assert (out.status, out.excerpt, out.spilled) == ("ok", "hi\n", None)
    assert not (workdir / "outputs" / "cell-1-1.txt").exists()
    # a progress bar prints far more than the cap, but what it shows fits: no cut, no spill
    bar = spilling.run_cell(
        "import sys\n"
        "for i in range(3000):\n"
        "    sys.stderr.write(f'\\r{i + 1:5d}/3000 ' + '#' * (i // 100))\n"
        "    sys.stderr.flush()\n"
        "print()\n",
        spill_name="1-2",
    )
    assert bar.spilled is None and not (workdir / "outputs" / "cell-1-2.txt").exists()
    assert [(o["name"], o["text"]) for o in bar.outputs] == [
        ("stderr", f" 3000/3000 {'#' * 29}"), ("stdout", "\n")
    ]  # fmt: skip


def test_the_kernel_queues_what_a_starved_client_has_not_read_yet(
    spilling: KernelSession,
) -> None:
    """The kernel's IOPub socket drops messages past its queue (zmq's 1000 per client): a
    client starved of CPU for a moment lost the end of a 3000-flush progress bar, its last
    line and the idle status. The kernel queues IOPUB_SNDHWM instead (ready.py: the client too)."""
    out = spilling.run_cell(
        "from ipykernel.kernelapp import IPKernelApp\n"
        "print(IPKernelApp.instance().iopub_thread.socket.sndhwm)"
    )
    assert out.status == "ok" and out.outputs[0]["text"] == f"{IOPUB_SNDHWM}\n"
    client = spilling._running()
    assert client.idle_seen and client.poll is None  # read up to its idle, then stopped


def test_outputs_nbclient_stopped_waiting_for_are_still_read(spilling: KernelSession) -> None:
    """On a starved client nbclient's wait for the outputs after the reply (iopub_timeout)
    ran out before the end of a progress bar (seen on one loaded core): it had been sent, so
    it is read on while it keeps coming. Here the wait is made zero."""
    client = spilling._client
    assert client is not None
    before, client.iopub_timeout = client.iopub_timeout, 0
    try:
        bar = spilling.run_cell(
            "import sys\n"
            "for i in range(3000):\n"
            "    sys.stderr.write(f'\\r{i + 1:5d}/3000 ' + '#' * (i // 100))\n"
            "    sys.stderr.flush()\n"
            "print('done')\n",
            spill_name="1-3",
        )
    finally:
        client.iopub_timeout = before
    assert client.idle_seen and client.poll is None  # read up to the idle, then stopped
    assert [(o["name"], o["text"]) for o in bar.outputs] == [
        ("stderr", f" 3000/3000 {'#' * 29}"), ("stdout", "done\n")
    ]  # fmt: skip


def test_spill_keeps_arrival_order_and_names_the_file(
    spilling: KernelSession, workdir: Path
) -> None:
    out = spilling.run_cell(
        "import sys\n"
        "for i in range(30):\n"
        "    print(f'out {i:03d} ' + 'o' * 50, flush=True)\n"
        "    if i % 10 == 9:\n"
        "        print(f'err {i:03d}', file=sys.stderr, flush=True)\n"
        "print('the end')\n",
        spill_name="3-2",
    )
    expected = ""
    for i in range(30):
        expected += f"out {i:03d} " + "o" * 50 + "\n"
        if i % 10 == 9:
            expected += f"err {i:03d}\n"
    expected += "the end\n"
    assert out.status == "ok" and out.spilled == "outputs/cell-3-2.txt"
    assert (workdir / "outputs" / "cell-3-2.txt").read_text() == expected
    text = _stream_text(out)
    marker = f"\n... [output truncated by bcc: {len(expected) - 1_000} chars omitted; full text in outputs/cell-3-2.txt]\n"
    assert text.endswith(marker) and len(text) == 1_000 + len(marker)
    assert expected.startswith(text[: -len(marker)])
    assert "; full text in outputs/cell-3-2.txt] ...\n" in out.excerpt
    assert out.excerpt.endswith("err 029\nthe end\n")
    assert len(out.excerpt) < 300 + 100

    with pytest.raises(ValueError):
        spilling.run_cell("print(1)", spill_name="../escape")
    spilling.spill_dir = outside = workdir.parent / f"{workdir.name}-spill"
    try:
        far = spilling.run_cell("print('y' * 2_000)", spill_name="4")
    finally:
        spilling.spill_dir = workdir / "outputs"
    assert far.spilled == str((outside / "cell-4.txt").resolve())
    assert (outside / "cell-4.txt").read_text() == "y" * 2_000 + "\n"
    assert _stream_text(far).endswith(f"full text in {far.spilled}]\n")


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed child stays one until jupyter_client reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        return _alive(pid)


def test_kill_live_kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "_LIVE", set())  # leave the module's other kernels alone
    doomed, calm = KernelSession(tmp_path), KernelSession(tmp_path)
    doomed.start()
    try:
        calm.start()
        assert doomed.pid is not None and calm.pid is not None
        assert doomed.pgid == os.getpgid(doomed.pid) and doomed.pgid != os.getpgrp()
        assert set(live_kernels()) == {(doomed.pid, doomed.pgid), (calm.pid, calm.pgid)}
        calm.shutdown()
        assert live_kernels() == ((doomed.pid, doomed.pgid),)
        kill_live_kernels()
        deadline = time.monotonic() + 2
        while _running(doomed.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(doomed.pid)
    finally:
        doomed.shutdown()
        calm.shutdown()
    assert live_kernels() == ()


def test_a_crashed_runs_kernel_is_reaped_by_its_record(tmp_path: Path) -> None:
    """What resume does with the kernels a killed bcc recorded: bcc's own kernel (launched by
    its launcher, not ipykernel_launcher) is known by its command line and killed."""
    s = KernelSession(tmp_path)
    s.start()
    try:
        assert s.pid is not None
        started = processes.process_start_time(s.pid)
        assert processes.reap_kernels([(s.pid, started)]) == [s.pid]
        deadline = time.monotonic() + 5
        while _running(s.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(s.pid)
    finally:
        s.shutdown(now=True)


def test_a_pipeline_is_summarised_by_its_parts(session: KernelSession) -> None:
    session.run_cell(
        "from sklearn.pipeline import make_pipeline\n"
        "from sklearn.preprocessing import StandardScaler\n"
        "from sklearn.linear_model import LogisticRegression\n"
        "pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))\n"
        "models = {'linear': pipe}"
    )
    found = {v.name: v for v in session.inspect()}
    expected = (
        "Pipeline(standardscaler=StandardScaler(), "
        "logisticregression=LogisticRegression(max_iter=500))"
    )
    assert found["pipe"].repr == expected
    assert found["models"].repr == "{'linear': " + expected + "}"
    assert found["pipe"].length is None  # len(Pipeline) counts its steps: not a size


def test_a_short_series_shows_its_values_and_an_ensemble_has_no_length(
    session: KernelSession,
) -> None:
    """A real model asked what `linear_coefficients: Series 8 float64` held, and read
    `GradientBoostingRegressor [len 100]` as a size (it is the number of estimators)."""
    session.run_cell(
        "import pandas as pd\n"
        "from sklearn.ensemble import GradientBoostingRegressor\n"
        "coefs = pd.Series({'age': 0.25, 'bmi': 0.5}, name='coef')\n"
        "long_series = pd.Series(range(100))\n"
        "booster = GradientBoostingRegressor(n_estimators=7).fit([[0], [1], [2]], [0, 1, 2])"
    )
    found = {v.name: v for v in session.inspect()}
    assert found["coefs"].repr == "Series 2 float64 name='coef' {'age': 0.25, 'bmi': 0.5}"
    assert found["long_series"].repr == "Series 100 int64 name=None"
    assert found["booster"].length is None
    assert found["booster"].repr.startswith("GradientBoostingRegressor(n_estimators=7")


def test_the_environment_is_the_kernels_own_answer(tmp_path: Path) -> None:
    """A distribution only the kernel can see (on its PYTHONPATH, not bcc's) is reported, with
    its version; one nobody has is named as absent."""
    from importlib import metadata

    site = tmp_path / "site"
    (site / "plotly-9.9.9.dist-info").mkdir(parents=True)
    (site / "plotly-9.9.9.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: plotly\nVersion: 9.9.9\n"
    )
    with pytest.raises(metadata.PackageNotFoundError):  # bcc's own environment lacks it
        metadata.version("plotly")
    env = {**ENV, "PYTHONPATH": str(site)}
    work = tmp_path / "work"
    work.mkdir()
    s = KernelSession(work, env=env)
    s.named_modules = ("plotly", "sklearn", "pmdarima_is_not_here")  # as the problem names them
    with s:
        assert s.environment is not None
        packages = dict(s.environment.packages)
        named = dict(s.environment.named)
    assert packages["plotly"] == "9.9.9"
    assert packages["pandas"] == metadata.version("pandas")
    assert packages["xgboost"] is None
    assert named == {"plotly": "9.9.9", "sklearn": "installed", "pmdarima_is_not_here": None}
    line = s.environment.text()
    assert "plotly 9.9.9" in line and line.split("; not installed: ")[1].count("xgboost") == 1
    assert line.endswith(
        "; named in the problem: plotly 9.9.9, sklearn installed, pmdarima_is_not_here NOT importable"
    )
