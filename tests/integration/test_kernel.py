"""KernelSession and execute_notebook against real ipykernel kernels (no mocks)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from notebook_bcc.errors import KernelError
from notebook_bcc.kernel import KernelSession, execute_notebook, scrub_env

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
    before_cell = session.run_cell("1 + 1")
    names_before = session._user_names()

    variables = {v.name: v for v in session.inspect()}
    session.check(["df"], ["len(df) == 3", "(leak := 1)"])

    assert session._user_names() == names_before
    df = variables["df"]
    assert (df.kind, df.shape, df.length, df.repr) == ("DataFrame", "3x2", 3, "DataFrame 3x2")
    assert df.columns[0] == ("a", "int64") and df.columns[1][0] == "b"
    assert df.bytes > 0
    assert variables["cfg"].kind == "dict" and variables["cfg"].repr == "{'alpha': 0.5}"
    assert variables["arr"].shape == "4x5" and variables["arr"].bytes == 160
    assert variables["model"].kind == "Model"  # a callable instance is data, its class is not
    assert not {"pd", "np", "helper", "Model", "In", "Out", "_", "get_ipython"} & set(variables)
    after_cell = session.run_cell("_")
    assert after_cell.execution_count == before_cell.execution_count + 1
    assert after_cell.excerpt.strip() == "2"


def test_check_artifacts_and_criteria(session: KernelSession) -> None:
    session.run_cell("score = 0.9")
    report = session.check(["score", "missing"], ["score > 0.5", "score > 1", "undefined_name"])
    assert report.artifacts == (("score", True), ("missing", False))
    assert [c[1] for c in report.criteria] == ["passed", "failed", "error"]
    assert report.criteria[2][2] == "NameError: name 'undefined_name' is not defined"


def test_delete_removes_names(session: KernelSession) -> None:
    session.run_cell("doomed = list(range(10))\ndoomed")
    session.delete(["doomed", "never_existed"])
    assert session.check(["doomed"], []).artifacts == (("doomed", False),)


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


def _notebook(*sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title")]
    nb.cells += [nbformat.v4.new_code_cell(src) for src in sources]
    return nb


def test_execute_notebook_passed(tmp_path: Path) -> None:
    nb = _notebook("x = 20", "print(x + 1)")
    result, executed = execute_notebook(nb, tmp_path, cell_timeout=30)
    assert (result.status, result.first_failing_cell, result.error) == ("passed", None, None)
    assert executed.cells[2].outputs[0]["text"] == "21\n"
    assert executed.cells[2].execution_count == 2
    assert nb.cells[2].outputs == []  # the input notebook is untouched
    nbformat.validate(executed)


def test_execute_notebook_failed(tmp_path: Path) -> None:
    nb = _notebook("x = 1", "print(y)", "print('never')")
    result, executed = execute_notebook(nb, tmp_path, cell_timeout=30)
    assert result.status == "failed"
    assert result.first_failing_cell == 2
    assert result.error == "NameError: name 'y' is not defined"
    assert executed.cells[3].outputs == []


def test_restart_empties_namespace(fresh: KernelSession) -> None:
    fresh.run_cell("gone_after_restart = 1")
    fresh.restart()
    assert fresh.restarts == 1
    assert fresh.check(["gone_after_restart"], []).artifacts == (("gone_after_restart", False),)
    assert fresh.run_cell("print('fresh')").execution_count == 1
