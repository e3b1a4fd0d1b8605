"""A kernel in this process, for tests of the workflow's logic (issue 40).

``ScriptedKernels`` is a ``KernelFactory`` (``notebook_bcc/workflow/kernels.py``): hand it to
``create_run``/``resume_run``/``ask_run``/``replay_run`` (``kernels=``) and the run's kernel,
its fork's branch kernels and its verifier are ``ScriptedKernel``s. A cell's code really runs:
it is exec-ed in a namespace of the kernel's own, in the kernel's working directory, with its
stdout, stderr, the value of a last expression and an exception captured as a live kernel
reports them (``CellOutcome``). Inspection, checks, scores, deletions, values and the
environment are answered by bcc's own in-kernel helper (``kernel/in_kernel*.py``) over that
namespace, so the ledger, the guards and the results see what a real kernel would tell them.

What only a real kernel can do is scripted: a cell whose code holds ``# kernel: timeout`` runs,
then reports that it ran past the cell timeout and was interrupted (its namespace kept);
``# kernel: hang`` the same, but the kernel "did not recover" and restarts empty;
``# kernel: dead`` runs, then the kernel "died" and restarts empty. ``script`` may answer any
cell with an outcome of its own. Nothing here starts a process, so no sandbox applies: that
is tested with real kernels. A figure is shown as a kernel's inline backend shows it; it is
drawn only by ``ScriptedKernels(draws=True)`` (the runs on shared tables, where a figure can
fail as it is drawn), and otherwise saved as one pixel: drawing is matplotlib's work, not the
workflow's, and a third of a small table's run.
"""

from __future__ import annotations

import ast
import base64
import builtins
import contextlib
import io
import json
import sys
import threading
import traceback
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from time import monotonic
from typing import Any

import matplotlib
from IPython.core.formatters import DisplayFormatter
from matplotlib.backends.backend_agg import FigureCanvasAgg

from notebook_bcc.kernel.helper_source import SOURCE
from notebook_bcc.kernel.inspection import FETCH_CHARS, check_report_of, namespace_of
from notebook_bcc.kernel.outputs import excerpt
from notebook_bcc.kernel.records import CellOutcome, CheckReport, KernelEnvironment, Namespace
from notebook_bcc.kernel.session import ANALYSIS_PACKAGES
from notebook_bcc.syntax import parse_module
from notebook_bcc.workflow.kernels import KernelRequest

__all__ = ["FigureCanvas", "ScriptedKernel", "ScriptedKernels", "show"]

#: one cell or helper call at a time in this process: each works in its kernel's directory
#: (``os.chdir``) and captures ``sys.stdout``, which are the process's, not a thread's
_ONE_AT_A_TIME = threading.RLock()

Script = Callable[[str, "ScriptedKernel"], CellOutcome | None]


class ScriptedKernel:
    """One kernel: a namespace in this process (see the module's docstring)."""

    def __init__(
        self, request: KernelRequest, script: Script | None = None, *, draws: bool = False
    ) -> None:
        self.request = request
        self.draws = draws  # figures drawn, or saved as one pixel (``FigureCanvas``)
        self.cwd = request.cwd
        self.script = script
        self.cell_timeout = request.config.cell_timeout
        self.excerpt_chars = request.config.excerpt_chars
        self.named_modules: tuple[str, ...] = request.named_modules
        self.environment: KernelEnvironment | None = None
        self.restarts = 0
        self.before_start: Callable[[], None] | None = None
        self.ran: list[str] = []  # every cell's source, in order
        self.started = self.closed = False
        self._count = 0
        self._reset()
        matplotlib.use("module://tests.scripted_kernel")  # figures shown as a kernel shows them

    # -- the process it does not have ----------------------------------------------------
    @property
    def pid(self) -> int | None:
        return None

    @property
    def pgid(self) -> int | None:
        return None

    @property
    def remote_id(self) -> str | None:
        return None

    def launch(self) -> None:
        """Nothing boots."""

    def start(self) -> None:
        if self.started:
            return
        if self.before_start is not None:
            self.before_start()
        self.started = True
        probe = {"packages": ANALYSIS_PACKAGES, "modules": list(self.named_modules)}
        self.environment = KernelEnvironment.from_json(self._helper("environment_ns", probe))

    def restart(self) -> None:
        if self.before_start is not None:
            self.before_start()
        self.restarts += 1
        self._reset()

    def shutdown(self, *, now: bool = False) -> None:
        self.closed = True

    # -- cells ---------------------------------------------------------------------------
    def run_cell(
        self, source: str, *, spill_name: str | None = None, excerpt_chars: int | None = None
    ) -> CellOutcome:
        self.ran.append(source)
        self._count += 1
        started = monotonic()
        scripted = self.script(source, self) if self.script else None
        if scripted is not None:
            return scripted
        outputs, error = self._exec(source)
        status, ename, evalue = "ok", None, None
        if error is not None:
            status, ename, evalue = "error", type(error).__name__, str(error)
        if "# kernel: timeout" in source or "# kernel: hang" in source:
            status, ename = "timeout", "TimeoutError"
            evalue = f"cell exceeded {self.cell_timeout:g} s and was interrupted"
            if "# kernel: hang" in source:
                evalue += "; the kernel did not recover and was restarted"
                self.restart()
        elif "# kernel: dead" in source:
            status, ename, evalue = "dead", "DeadKernelError", "the kernel died; it was restarted"
            self.restart()
        limit = excerpt_chars or self.excerpt_chars
        return CellOutcome(
            status=status,
            outputs=tuple(outputs),
            execution_count=self._count,
            duration_ms=int((monotonic() - started) * 1000),
            excerpt=excerpt(outputs, status, ename, evalue, limit),
            error_name=ename,
            error_value=evalue,
        )

    def _exec(self, source: str) -> tuple[list[dict[str, Any]], BaseException | None]:
        out, err = io.StringIO(), io.StringIO()
        outputs: list[dict[str, Any]] = []
        error: BaseException | None = None
        with (
            _ONE_AT_A_TIME,
            _figures_drawn(self.draws),
            contextlib.chdir(self.cwd),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            _displays_captured(),
        ):
            try:
                value = self._exec_in_namespace(source)
            except Exception as exc:  # noqa: BLE001 - the cell's error is its outcome
                error, value = exc, None
            figures = _figures_shown()
        for name, stream in (("stdout", out), ("stderr", err)):
            if stream.getvalue():
                outputs.append({"output_type": "stream", "name": name, "text": stream.getvalue()})
        outputs += figures  # what it displayed and showed, in order
        if value is not None:
            data, metadata = _formatted(value)
            outputs.append(
                {
                    "output_type": "execute_result",
                    "execution_count": self._count,
                    "data": data,
                    "metadata": metadata,
                }
            )
        if error is not None:
            outputs.append(
                {
                    "output_type": "error",
                    "ename": type(error).__name__,
                    "evalue": str(error),
                    "traceback": traceback.format_exception(error),
                }
            )
        return outputs, error

    def _exec_in_namespace(self, source: str) -> Any:
        """Run the cell; the value of its last line when that is an expression (as IPython).

        The source is split as text and each part compiled from text: compiling an AST object
        on a thread other than the main one fails now and then on CPython 3.11 ("AST
        constructor recursion depth mismatch")."""
        name = f"<cell {self._count}>"
        body = parse_module(source, name).body  # bcc's lock: one parse at a time across threads
        head, last = source, None
        if body and isinstance(body[-1], ast.Expr):
            lines = source.splitlines(keepends=True)
            start = body[-1].lineno - 1
            line = lines[start].encode()
            before = "".join(lines[:start]) + line[: body[-1].col_offset].decode()
            text = ast.get_source_segment(source, body[-1])
            with contextlib.suppress(SyntaxError):  # a parenthesised last line: run it whole
                compile(before, name, "exec")
                head, last = before, compile(text or "None", name, "eval")
        exec(compile(head, name, "exec"), self.namespace)
        return None if last is None else eval(last, self.namespace)

    # -- looking in: bcc's own in-kernel helper over this namespace ----------------------
    def inspect(self, timeout: float = 30) -> tuple[Any, ...]:
        return self.inspect_namespace(timeout).variables

    def inspect_namespace(self, timeout: float = 30) -> Namespace:
        return namespace_of(self._helper("inspect_ns", None))

    def check(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> CheckReport:
        payload = {"artifacts": list(artifacts), "criteria": list(criteria)}
        return check_report_of(self._helper("check_ns", payload))

    def check_and_inspect(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> tuple[CheckReport, Namespace]:
        return self.check(artifacts, criteria), self.inspect_namespace()

    def score(self, expression: str, timeout: float = 30) -> tuple[float | None, str]:
        number, why = self._helper("score_ns", expression)
        return number, why

    def delete(self, names: Sequence[str]) -> None:
        if names:
            self._helper("delete_ns", list(names))

    def fetch_json(
        self,
        names: Sequence[str],
        max_chars: int = FETCH_CHARS,
        timeout: float = 30,
        whole: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        payload = {"names": list(names), "max_chars": max_chars, "whole": dict(whole or {})}
        return self._helper("fetch_ns", payload)

    def _helper(self, func: str, payload: Any) -> Any:
        with _ONE_AT_A_TIME, contextlib.chdir(self.cwd):
            return json.loads(getattr(self._helpers, func)(json.dumps(payload)))

    def _reset(self) -> None:
        """An empty namespace, and the helper looking into it (as IPython's shell)."""
        self.namespace: dict[str, Any] = {
            "__name__": "__main__",
            "__builtins__": builtins,
            "display": _display,  # a kernel's builtins
            "get_ipython": lambda: _SHELL,
        }
        shell = types.SimpleNamespace(
            user_ns=self.namespace,
            user_ns_hidden={},
            all_ns_refs=[self.namespace],
            history_manager=types.SimpleNamespace(output_hist={}),
            last_execution_result=None,
            displayhook=types.SimpleNamespace(),
        )
        helpers = _helper_module()
        helpers.__dict__["_shell"] = lambda: shell
        helpers.__dict__["_results_ns"] = lambda: self.namespace
        self._helpers = helpers


class ScriptedKernels:
    """A ``KernelFactory`` of ``ScriptedKernel``s; ``made`` keeps each, in order."""

    def __init__(self, script: Script | None = None, *, draws: bool = False) -> None:
        self.script = script
        #: draw each figure (a run on a real table: a figure can fail as it is drawn), or save
        #: it as one pixel (the workflow's logic: drawing is matplotlib's work, and a third of
        #: a small table's run). The verifier never draws: it re-runs cells whose figures the
        #: run's kernel drew, from the same code and data.
        self.draws = draws
        self.made: list[ScriptedKernel] = []

    def __call__(self, request: KernelRequest) -> ScriptedKernel:
        kernel = ScriptedKernel(request, self.script, draws=self.draws and not request.verifier)
        self.made.append(kernel)
        return kernel

    def of_role(self, role: str) -> list[ScriptedKernel]:
        return [k for k in self.made if k.request.role == role]


# -- a matplotlib backend (``module://tests.scripted_kernel``), as the inline one behaves -------

#: a PNG of one white pixel: what a figure is saved as when figures are not drawn
PLACEHOLDER_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGP4DwABAQEAsTj2FAAAAABJRU5ErkJggg=="
)
_drawing = {"on": True}


@contextlib.contextmanager
def _figures_drawn(on: bool) -> Iterator[None]:
    """While a cell runs: whether its figures are drawn (the kernel's ``draws``)."""
    before, _drawing["on"] = _drawing["on"], on
    try:
        yield
    finally:
        _drawing["on"] = before


class FigureCanvas(FigureCanvasAgg):
    """Draws as Agg does; or, when the kernel does not draw, saves each figure as one pixel
    (its layout is still computed wherever the cell asks for it)."""

    def print_figure(self, filename: Any, *args: Any, **kwargs: Any) -> None:
        if _drawing["on"]:
            return super().print_figure(filename, *args, **kwargs)
        if hasattr(filename, "write"):
            filename.write(PLACEHOLDER_PNG)
        else:
            with open(filename, "wb") as fh:
                fh.write(PLACEHOLDER_PNG)
        return None


_shown: list[dict[str, Any]] = []  # the figures the current cell showed, as display_data


def show(*args: Any, **kwargs: Any) -> None:
    """``plt.show()``: each open figure shown as a PNG, then closed (as in a kernel)."""
    from matplotlib import pyplot as plt

    for number in plt.get_fignums():
        figure = plt.figure(number)
        png = io.BytesIO()
        figure.savefig(png, format="png", bbox_inches="tight")
        text = _FIGURE_TEXT(figure)  # as the helper describes a kernel's figures
        data = {"image/png": base64.b64encode(png.getvalue()).decode(), "text/plain": text}
        _shown.append({"output_type": "display_data", "data": data, "metadata": {}})
    plt.close("all")


def _helper_module() -> types.ModuleType:
    """bcc's in-kernel helper, as a kernel gets it (``kernel/helper_source.py``)."""
    helpers = types.ModuleType("_bcc_scripted_helper")
    exec(compile(SOURCE, "in_kernel.py", "exec"), helpers.__dict__)
    return helpers


_FIGURE_TEXT = _helper_module().describe_figure
_FORMATTER = DisplayFormatter()  # IPython's: each object's mimetypes, as a kernel sends them
# a figure's plain text is the helper's description, as bcc registers it in a kernel
_FORMATTER.formatters["text/plain"].for_type_by_name(
    "matplotlib.figure", "Figure", lambda fig, printer, cycle: printer.text(_FIGURE_TEXT(fig))
)
_SHELL = types.SimpleNamespace(display_formatter=_FORMATTER)  # what a cell's get_ipython() gives


def _display(*objs: Any, **kwargs: Any) -> None:
    """``display(obj)`` in a kernel: a display_data output of each object."""
    for obj in objs:
        data, metadata = _formatted(obj)
        _shown.append({"output_type": "display_data", "data": data, "metadata": metadata})


def _formatted(obj: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """IPython's mimetypes of ``obj``, binary ones in base64 as a kernel sends them."""
    data, metadata = _FORMATTER.format(obj)
    return {k: base64.b64encode(v).decode() if isinstance(v, bytes) else v
            for k, v in data.items()}, metadata  # fmt: skip


@contextlib.contextmanager
def _displays_captured() -> Iterator[None]:
    """``from IPython.display import display`` gives ``_display`` too (IPython's own prints
    when no shell runs)."""
    import IPython.core.display_functions as functions
    import IPython.display as public

    before = public.display, functions.display
    public.display = functions.display = _display
    try:
        yield
    finally:
        public.display, functions.display = before


def _figures_shown() -> list[dict[str, Any]]:
    """What the cell showed, and the figures it left open (the inline backend shows them at
    the end of a cell)."""
    if "matplotlib.pyplot" in sys.modules:
        show()
    shown = list(_shown)
    _shown.clear()
    return shown
