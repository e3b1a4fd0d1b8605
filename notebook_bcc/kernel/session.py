"""``KernelSession``, the only class that talks to the Jupyter kernel.

``KernelSession`` keeps one ipykernel alive per run and executes cells through an nbclient
client (``client.py``: timeouts with interrupt, dead-kernel detection, output collection and
draining). Namespace inspection and checks go through a silent ``execute_request`` whose
``user_expressions`` run a helper exec-ed into a fresh dict (``calls.py``), so the user
namespace, the history and the execution count are left untouched. Where the kernel lives is
its backend's concern (``backend.py``): a local process (``local.py``), the same in a
bubblewrap sandbox (``sandboxed.py``) or a kernel on a gateway (``remote.py``).

Threads: a session is used by one thread at a time, never by two at once. ``launch`` may
come from another thread than the one that then starts and drives it (it only spawns the
process; the client's sockets are made by ``start``), and a session may pass to another
thread once the first is done with it. A fork (``workflow/fork.py``) does both: the main
thread launches each branch's kernel, the branch's thread starts and drives it, and after
that thread has ended the main thread carries on with the kernel it keeps and shuts the
others down. Spawn from a thread that outlives the kernel: bubblewrap's
``--die-with-parent`` kills a sandboxed kernel when the thread that spawned it ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from time import monotonic
from typing import Any

import nbformat
from nbclient.exceptions import DeadKernelError

from notebook_bcc.config import RunConfig
from notebook_bcc.errors import KernelError
from notebook_bcc.kernel.backend import KernelBackend
from notebook_bcc.kernel.calls import helper_expressions, helper_values, silent_request
from notebook_bcc.kernel.client import StreamingClient, new_client
from notebook_bcc.kernel.gateway import Gateway
from notebook_bcc.kernel.inspection import FETCH_CHARS, check_report_of, namespace_of
from notebook_bcc.kernel.local import LocalBackend
from notebook_bcc.kernel.loop import run_sync
from notebook_bcc.kernel.outputs import (
    RICH_OUTPUT_MAX_BYTES,
    StreamSink,
    drop_oversized,
    excerpt,
    merge_streams,
)
from notebook_bcc.kernel.records import (
    CellOutcome,
    CheckReport,
    KernelEnvironment,
    Namespace,
    VariableInfo,
)
from notebook_bcc.kernel.remote import GatewayBackend
from notebook_bcc.kernel.sandbox import SandboxLimits
from notebook_bcc.kernel.sandboxed import SandboxedBackend
from notebook_bcc.kernel.spill import spill_target
from notebook_bcc.redaction import redact, redact_tree

__all__ = [
    "ANALYSIS_PACKAGES",
    "FETCH_CHARS",
    "RICH_OUTPUT_MAX_BYTES",
    "CellOutcome",
    "CheckReport",
    "KernelEnvironment",
    "KernelSession",
    "Namespace",
    "VariableInfo",
]

#: the distributions whose versions (or absence) the kernel reports when it starts: what
#: analysis notebooks commonly import, so a plan does not count on one that is missing
ANALYSIS_PACKAGES = [
    *("pandas", "numpy", "scipy", "scikit-learn", "statsmodels", "matplotlib", "seaborn"),
    *("pyarrow", "openpyxl", "xlrd", "tabulate", "plotly", "xgboost", "lightgbm"),
    *("networkx", "sympy"),
]


class KernelSession:
    """One live ipykernel working in ``cwd``, with a scrubbed environment.

    ``restarts`` counts automatic and explicit restarts: each one empties the namespace, so a
    caller that sees it change must replay its cells. ``sandbox``: run it in a bubblewrap
    sandbox under these limits; ``gateway``: start it on this Jupyter gateway. Stream text
    past ``output_cap_chars`` goes to ``spill_dir / f"cell-{spill_name}.txt"`` for
    ``run_cell(..., spill_name=...)`` (None: the rest is dropped).
    """

    #: Seconds an interrupted kernel gets to become idle again, on top of the 4 s a kernel that
    #: honours the interrupt takes at most to answer it.
    interrupt_grace: float = 1.0

    def __init__(
        self,
        cwd: Path,
        *,
        cell_timeout: float = RunConfig.cell_timeout,
        startup_timeout: float = RunConfig.kernel_startup_timeout,
        output_cap_chars: int = RunConfig.output_cap_chars,
        excerpt_chars: int = RunConfig.excerpt_chars,
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        kernel_name: str = "python3",
        spill_dir: Path | None = None,
        sandbox: SandboxLimits | None = None,
        gateway: Gateway | None = None,
    ) -> None:
        self.cwd = Path(cwd)
        self.cell_timeout = cell_timeout
        self.startup_timeout = startup_timeout
        self.output_cap_chars = output_cap_chars
        self.excerpt_chars = excerpt_chars
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self.sandbox, self.gateway = sandbox, gateway
        self.restarts = 0
        #: the kernel's Python and analysis packages, read once it started (None: not read)
        self.environment: KernelEnvironment | None = None
        #: modules the problem names, whose presence the environment also reports
        self.named_modules: tuple[str, ...] = ()
        self.backend: KernelBackend
        if gateway is not None:
            self.backend = GatewayBackend(
                self.cwd,
                self._new_client,
                gateway=gateway,
                kernel_name=kernel_name,
                startup_timeout=startup_timeout,
            )
        else:
            local: dict[str, Any] = {"kernel_name": kernel_name, "env": env, "log_path": log_path}
            self.backend = (
                SandboxedBackend(self.cwd, self._new_client, limits=sandbox, **local)
                if sandbox is not None
                else LocalBackend(self.cwd, self._new_client, **local)
            )
        self._client: StreamingClient | None = None  # connected: cells and requests can go

    def _new_client(self, km: Any, extra_arguments: list[str]) -> StreamingClient:
        return new_client(km, extra_arguments, self.cell_timeout, self.startup_timeout)

    # -- where the kernel lives ---------------------------------------------------------------

    @property
    def before_start(self) -> Callable[[], None] | None:
        """Called before each kernel (re)start and each process spawn; raising refuses it
        (``ShadowRun`` starts nothing once it is closed)."""
        return self.backend.before_start

    @before_start.setter
    def before_start(self, check: Callable[[], None] | None) -> None:
        self.backend.before_start = check

    @property
    def sandboxed(self) -> bool:
        return self.backend.sandboxed

    @property
    def pid(self) -> int | None:
        return self.backend.pid

    @property
    def pgid(self) -> int | None:
        """The kernel's process group id (its own group: ``pid`` as launched by jupyter)."""
        return self.backend.pgid

    @property
    def remote_id(self) -> str | None:
        """The kernel's id on the gateway (None for a local kernel)."""
        return self.backend.remote_id

    def launch(self) -> None:
        """Start the kernel and return without waiting for it, so that it boots while the
        caller works; ``start`` (or the first cell) waits for it. A no-op for a kernel already
        launched; a failure here is left to ``start`` to retry and report."""
        if self._client is None:
            self.backend.launch()

    def start(self) -> None:
        """Start the kernel and connect to it (no-op when connected). Raises KernelError.

        Once connected, the backend prepares it (a gateway kernel moves into the run's working
        directory there), and figures are set to describe themselves in text.
        """
        if self._client is not None:
            return
        if self.backend.before_start is not None:
            self.backend.before_start()
        if not self.cwd.is_dir():
            raise KernelError(f"kernel working directory does not exist: {self.cwd}")
        self._client = self.backend.start()
        self.backend.prepare(self._silent)
        probe = {"packages": ANALYSIS_PACKAGES, "modules": list(self.named_modules)}
        calls = {"figures": ("figures_ns", None), "env": ("environment_ns", probe)}
        with contextlib.suppress(TimeoutError, KernelError):  # niceties: cells run without them
            self.environment = KernelEnvironment.from_json(self._call_helpers(calls, 30)["env"])

    def restart(self) -> None:
        """Replace the kernel by a fresh one (empty namespace, execution count 1)."""
        self._restart(now=False)

    def _restart(self, *, now: bool) -> None:
        self._client = None
        self.backend.stop(now=now)
        self.restarts += 1
        self.start()

    def shutdown(self, *, now: bool = False) -> None:
        """Stop the kernel; idempotent. ``now``: kill it at once instead of asking it to exit
        (what is running is lost). A graceful shutdown falls back to a kill."""
        self._client = None
        self.backend.close(now=now)

    def _running(self) -> StreamingClient:
        if self._client is None:
            self.start()
        assert self._client is not None
        return self._client

    def __enter__(self) -> KernelSession:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    # -- cells ----------------------------------------------------------------------------------

    def run_cell(
        self, source: str, *, spill_name: str | None = None, excerpt_chars: int | None = None
    ) -> CellOutcome:
        """Execute one cell; never raises for user errors, timeouts or kernel death.

        The agents' excerpt of its output is ``excerpt_chars`` long at most (default: the
        session's ``excerpt_chars``; a cell that builds the run's results gets more).

        Stream text past ``output_cap_chars`` is cut from the outputs while it arrives; with
        ``spill_name`` and ``spill_dir`` set, all of it is written to ``cell-{spill_name}.txt``
        there (see ``CellOutcome.spilled``).

        ``timeout``: the cell ran past ``cell_timeout`` and was interrupted. If the kernel is not
        idle again within ``interrupt_grace`` seconds (SIGINT ignored), it is restarted and its
        state is lost (``restarts`` increases). ``dead``: the kernel died during the cell; it is
        restarted, so the next call works on an empty namespace. Raises KernelError only when the
        kernel cannot be restarted or the connection breaks.
        """
        spill = spill_target(self.spill_dir, spill_name, self.cwd)
        client = self._running()
        cell = nbformat.v4.new_code_cell(source)
        limit = excerpt_chars or self.excerpt_chars
        sink = StreamSink(self.output_cap_chars, limit, *spill, root=self.cwd)
        started = monotonic()
        try:
            alive = client.execute(cell, sink)
        except Exception as exc:
            raise KernelError(f"kernel communication failed: {exc}") from exc
        reply = client.last_reply or {}
        content = reply.get("content", {})
        if not alive:
            status, ename, evalue = "dead", "DeadKernelError", "the kernel died; it was restarted"
            self._restart(now=True)
        elif reply and "header" not in reply:  # nbclient's synthetic reply: timed out
            status, ename = "timeout", "TimeoutError"
            evalue = f"cell exceeded {self.cell_timeout:g} s and was interrupted"
            if not self._await_idle(self.interrupt_grace):
                evalue += "; the kernel did not recover and was restarted"
                self._restart(now=True)
        elif content.get("status") == "error":
            status, ename, evalue = "error", content.get("ename"), content.get("evalue")
        else:
            status, ename, evalue = "ok", None, None
        if status != "ok" and self._client is not None and self._restarted_behind():
            status, ename = "dead", "DeadKernelError"
            evalue = "the kernel died; the gateway restarted it with an empty namespace"
            self.restarts += 1
            self.backend.prepare(self._silent)
        # what bcc keeps of a cell, the secrets of its environment redacted (docs/sandbox.md, "Secrets")
        outputs = redact_tree(
            drop_oversized(merge_streams([dict(o) for o in cell.get("outputs", [])]))
        )
        evalue = evalue and redact(evalue)
        return CellOutcome(
            status=status,
            outputs=tuple(outputs),
            execution_count=cell.get("execution_count"),
            duration_ms=int((monotonic() - started) * 1000),
            excerpt=redact(excerpt(outputs, status, ename, evalue, limit, sink)),
            error_name=ename,
            error_value=evalue,
            spilled=sink.spilled,
        )

    # -- the namespace --------------------------------------------------------------------------

    def inspect(self, timeout: float = 30) -> tuple[VariableInfo, ...]:
        """Summaries of the user's data variables (no modules, callables, types or _names)."""
        return self.inspect_namespace(timeout).variables

    def inspect_namespace(self, timeout: float = 30) -> Namespace:
        """The user's data variables, and the modules and callables they can use, by name."""
        return namespace_of(self._call_helper("inspect_ns", None, timeout))

    def check_and_inspect(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> tuple[CheckReport, Namespace]:
        """``check`` and ``inspect_namespace`` in one round trip."""
        payload = {"artifacts": list(artifacts), "criteria": list(criteria)}
        data = self._call_helpers(
            {"check": ("check_ns", payload), "inspect": ("inspect_ns", None)}, timeout
        )
        return check_report_of(data["check"]), namespace_of(data["inspect"])

    def check(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> CheckReport:
        """Which artifact names exist, and how each criterion ``bool(expr)`` evaluates."""
        payload = {"artifacts": list(artifacts), "criteria": list(criteria)}
        return check_report_of(self._call_helper("check_ns", payload, timeout))

    def score(self, expression: str, timeout: float = 30) -> tuple[float | None, str]:
        """A fork's choice ``expression`` evaluated in the user namespace: (a finite number,
        "") or (None, why not)."""
        number, why = self._call_helper("score_ns", expression, timeout)
        return number, why

    def delete(self, names: Sequence[str]) -> None:
        """Delete names (and IPython's hidden references to their values), then gc.collect()."""
        if names:
            self._call_helper("delete_ns", list(names), 30)

    def fetch_json(
        self,
        names: Sequence[str],
        max_chars: int = FETCH_CHARS,
        timeout: float = 30,
        whole: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        """Values of the named variables that are small and JSON-serialisable (others left
        out); a name in ``whole`` (name -> a part's limit) is never left out: a part over its
        limit, or not JSON, stands as a marker (``in_kernel_results.py``)."""
        payload = {"names": list(names), "max_chars": max_chars, "whole": dict(whole or {})}
        return self._call_helper("fetch_ns", payload, timeout)

    # -- silent requests ------------------------------------------------------------------------

    def _silent(self, expressions: dict[str, str], timeout: float) -> dict[str, Any] | None:
        """A silent request's reply content, None past the deadline; DeadKernelError."""
        client = self._running()
        return run_sync(silent_request)(client.kc, client.km, expressions, timeout)

    def _await_idle(self, timeout: float) -> bool:
        try:
            return self._silent({}, timeout) is not None
        except DeadKernelError:
            return False

    def _restarted_behind(self) -> bool:
        return self.backend.restarted_behind(self._silent, self.interrupt_grace + 5)

    def _call_helper(self, func: str, payload: Any, timeout: float) -> Any:
        """Run ``func(json payload)`` of the helper source in the kernel; return its JSON value.

        Raises TimeoutError past ``timeout`` (the kernel is interrupted, or restarted if it stays
        busy) and KernelError if the kernel died (it is restarted).
        """
        return self._call_helpers({"bcc": (func, payload)}, timeout)["bcc"]

    def _call_helpers(self, calls: dict[str, tuple[str, Any]], timeout: float) -> dict[str, Any]:
        """Several helper calls in one silent request (one round trip, which a gateway's
        kernel makes costly): key -> JSON value of ``func(payload)``."""
        try:
            content = self._silent(helper_expressions(calls), timeout)
        except DeadKernelError:
            self._restart(now=True)
            raise KernelError("the kernel died during inspection; it was restarted") from None
        if content is None:
            self._running()
            self.backend.interrupt()
            if not self._await_idle(self.interrupt_grace + 4):
                self._restart(now=True)
            raise TimeoutError(f"kernel inspection exceeded {timeout:g} s")
        return helper_values(content, calls)
