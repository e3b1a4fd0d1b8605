"""The only module that talks to the Jupyter kernel.

``KernelSession`` keeps one ipykernel alive per run and executes cells through an nbclient
``NotebookClient`` (timeouts with interrupt, dead-kernel detection, output collection).
Namespace inspection and checks go through a silent ``execute_request`` whose
``user_expressions`` run a helper exec-ed into a fresh dict, so the user namespace, the
history and the execution count are left untouched.

All calls must come from one thread: the zmq sockets live on that thread's event loop.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import copy
import fnmatch
import json
import os
import signal
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

import nbformat
import zmq
from jupyter_client import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from notebook_bcc.errors import BccError, KernelError
from notebook_bcc.kernel.helper_source import SOURCE as _HELPER_SOURCE
from notebook_bcc.kernel.outputs import (
    RICH_OUTPUT_MAX_BYTES,
    StreamSink,
    drop_oversized,
    excerpt,
    merge_streams,
)

__all__ = [
    "RICH_OUTPUT_MAX_BYTES",
    "SECRET_PATTERNS",
    "CellOutcome",
    "CheckReport",
    "KernelSession",
    "VariableInfo",
    "VerificationResult",
    "execute_notebook",
    "kill_live_kernels",
    "live_kernels",
    "reap_kernels",
    "scrub_env",
]

SECRET_PATTERNS: tuple[str, ...] = (
    "*_API_KEY", "*_APIKEY", "*_TOKEN", "*_SECRET", "*_SECRET_KEY", "*_PASSWORD", "*_PASSWD",
    "*_ACCESS_KEY", "*_PRIVATE_KEY", "*_CREDENTIALS", "*_KEY_ID", "AWS_*", "OPENAI_*",
    "ANTHROPIC_*", "AZURE_OPENAI_*", "GEMINI_*", "GOOGLE_API_*", "GROQ_*", "MISTRAL_*",
    "COHERE_*", "TOGETHER_*", "HF_*", "HUGGINGFACE_*", "LITELLM_*", "OPENROUTER_*",
    "DEEPSEEK_*", "XAI_*",
)  # fmt: skip

_OUTSTREAM = "notebook_bcc.kernel.stream.BoundedOutStream"  # bounds each stream message
_IPC_PATH_MAX = 90  # AF_UNIX paths are limited to ~107 bytes; leave room for '-ipc-N'
FETCH_CHARS = 8_000  # JSON size up to which a variable's value is fetched (summary, results)


# (pid, pgid) of the kernels started by any KernelSession of this process and not yet shut down
_LIVE: set[tuple[int, int]] = set()


def live_kernels() -> tuple[tuple[int, int], ...]:
    """(pid, process group id) of this process's running kernels."""
    return tuple(_LIVE)


def _sigkill(pid: int, pgid: int) -> bool:
    """SIGKILL a kernel's process group (never our own), else its pid; False if neither went.

    Safe in a signal handler: no locks, no asyncio, no logging.
    """
    if pgid > 0 and pgid != os.getpgrp():
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
            return True
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return False
    return True


def kill_live_kernels() -> None:
    """SIGKILL every live kernel of this process; for a hard exit (signal-handler safe).

    Sessions are left as they are.
    """
    for pid, pgid in tuple(_LIVE):
        _sigkill(pid, pgid)


def reap_kernels(recorded: Sequence[tuple[int, int]]) -> list[int]:
    """SIGKILL recorded (pid, pgid) kernels still running; return the pids killed.

    A pid counts only while its command line still names ipykernel (pids are reused).
    """
    reaped = []
    for pid, pgid in recorded:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"ipykernel" in cmdline and _sigkill(pid, pgid):
            reaped.append(pid)
    return reaped


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """Return ``env`` without variables whose name matches ``SECRET_PATTERNS`` (any case)."""
    patterns = [p.upper() for p in SECRET_PATTERNS]
    return {
        k: v for k, v in env.items() if not any(fnmatch.fnmatchcase(k.upper(), p) for p in patterns)
    }


@dataclass(frozen=True)
class CellOutcome:
    status: str  # "ok" | "error" | "timeout" | "dead"
    outputs: tuple[dict, ...]
    execution_count: int | None
    duration_ms: int
    excerpt: str
    error_name: str | None = None
    error_value: str | None = None
    spilled: str | None = None  # the file with the full stream text, when the outputs were cut


@dataclass(frozen=True)
class VariableInfo:
    name: str
    kind: str
    shape: str | None
    length: int | None
    columns: tuple[tuple[str, str], ...]
    bytes: int
    repr: str


@dataclass(frozen=True)
class Namespace:
    """One inspection of the user namespace."""

    variables: tuple[VariableInfo, ...]
    modules: tuple[tuple[str, str], ...] = ()  # (name, module), e.g. ("pd", "pandas")
    callables: tuple[tuple[str, str], ...] = ()  # (name, defining module; "" for the notebook's)


@dataclass(frozen=True)
class CheckReport:
    artifacts: tuple[tuple[str, bool], ...]
    criteria: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class VerificationResult:
    status: str  # "passed" | "failed"
    first_failing_cell: int | None
    error: str | None
    duration_ms: int
    values: dict[str, Any] = field(default_factory=dict)  # the ``fetch`` names' JSON values


class KernelSession:
    """One live ipykernel, started in ``cwd`` with a scrubbed environment.

    ``restarts`` counts automatic and explicit restarts: each one empties the namespace, so a
    caller that sees it change must replay its cells.
    """

    #: Seconds an interrupted kernel gets to become idle again, on top of the ``iopub_timeout``
    #: (4 s) nbclient already waited for the interrupted cell's outputs to end.
    interrupt_grace: float = 1.0

    def __init__(
        self,
        cwd: Path,
        *,
        cell_timeout: float = 600,
        startup_timeout: float = 60,
        output_cap_chars: int = 20_000,
        excerpt_chars: int = 2_000,
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        kernel_name: str = "python3",
        spill_dir: Path | None = None,
    ) -> None:
        self.cwd = Path(cwd)
        self.cell_timeout = cell_timeout
        self.startup_timeout = startup_timeout
        self.output_cap_chars = output_cap_chars
        self.excerpt_chars = excerpt_chars
        self.kernel_name = kernel_name
        self.restarts = 0
        self._env = dict(env) if env is not None else None
        self.log_path = log_path  # the kernel process's own stdout/stderr go here when set
        # Where a cell's full stream text goes when it passes ``output_cap_chars``:
        # ``spill_dir / f"cell-{spill_name}.txt"`` for ``run_cell(..., spill_name=...)``, named in
        # the truncation marker (relative to ``cwd`` when inside it). None: the rest is dropped.
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self._log_file: Any = None
        self._client: _Client | None = None
        self._live: tuple[int, int] | None = None  # this kernel's entry in _LIVE
        self._last_reply: dict[str, Any] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the kernel (no-op when running). Tries ipc, then tcp. Raises KernelError."""
        if self._client is not None:
            return
        if not self.cwd.is_dir():
            raise KernelError(f"kernel working directory does not exist: {self.cwd}")
        env = scrub_env(self._env if self._env is not None else os.environ)
        transports = ("ipc", "tcp") if zmq.has("ipc") else ("tcp",)
        error: BaseException | None = None
        for transport in transports:
            try:
                run_sync(self._a_launch)(transport, env)
                break
            except Exception as exc:
                error = exc
                run_sync(self._a_teardown)(True)
        else:
            raise KernelError(f"kernel {self.kernel_name!r} failed to start: {error}") from error
        atexit.unregister(self.shutdown)
        atexit.register(self.shutdown)
        with contextlib.suppress(TimeoutError, KernelError):  # a nicety: figures still display
            self._call_helper("figures_ns", None, 30)

    async def _a_launch(self, transport: str, env: dict[str, str]) -> None:
        where: dict[str, str] = {}
        if transport == "ipc":  # absolute socket paths; a relative default breaks with cwd
            base = Path(jupyter_runtime_dir()) / f"bcc-{uuid.uuid4().hex[:12]}"
            if len(str(base)) > _IPC_PATH_MAX:
                raise OSError(f"ipc socket path too long: {base}")
            base.parent.mkdir(parents=True, exist_ok=True)
            where = {"connection_file": f"{base}.json", "ip": f"{base}-ipc"}
        km = AsyncKernelManager(kernel_name=self.kernel_name, transport=transport, **where)
        client = _Client(
            nbformat.v4.new_notebook(),
            km=km,
            timeout_func=lambda _cell: self.cell_timeout or None,
            interrupt_on_timeout=True,
            # Makes nbclient stop waiting right after the interrupt; its reply has no header.
            error_on_timeout={"ename": "TimeoutError", "evalue": "", "traceback": []},
            allow_errors=True,
            startup_timeout=max(1, round(self.startup_timeout)),
            record_timing=False,
            coalesce_streams=False,  # its \r regex is quadratic on long lines; see merge_streams
            on_cell_executed=self._on_cell_executed,
            extra_arguments=[f"--IPKernelApp.outstream_class={_OUTSTREAM}"],
        )
        self._client = client
        streams: dict[str, Any] = {}
        if self.log_path is not None:
            if self._log_file is None:
                self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - kept for the kernel's life
            streams = {"stdout": self._log_file, "stderr": self._log_file}
        await client.async_start_new_kernel(cwd=str(self.cwd), env=env, **streams)
        pid = getattr(km.provisioner, "pid", None)
        if pid:
            pgid = getattr(km.provisioner, "pgid", None)
            with contextlib.suppress(OSError):
                pgid = pgid or os.getpgid(pid)
            self._live = (pid, pgid or 0)
            _LIVE.add(self._live)
        await client.async_start_new_kernel_client()

    def _on_cell_executed(self, cell: Any, cell_index: int, execute_reply: dict) -> None:
        self._last_reply = execute_reply

    def shutdown(self, *, now: bool = False) -> None:
        """Stop the kernel; idempotent. ``now``: kill it at once instead of asking it to exit
        (what is running is lost). A graceful shutdown falls back to a kill."""
        atexit.unregister(self.shutdown)
        run_sync(self._a_teardown)(now)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    async def _a_teardown(self, now: bool) -> None:
        client, self._client = self._client, None
        live, self._live = self._live, None
        if client is not None:
            await self._a_stop(client, now)
        if live is not None:  # an interrupted teardown leaves it for kill_live_kernels()
            _LIVE.discard(live)

    @staticmethod
    async def _a_stop(client: NotebookClient, now: bool) -> None:
        km, kc = client.km, client.kc
        if kc is not None:
            kc.stop_channels()
        if km is None or not km.has_kernel:
            return
        pid = getattr(km.provisioner, "pid", None)
        for immediate in (now, True):
            with contextlib.suppress(Exception):
                await km.shutdown_kernel(now=immediate)
            with contextlib.suppress(Exception):
                if not await km.is_alive():
                    return
        if pid:  # last resort: the provisioner lost track of the process
            with contextlib.suppress(OSError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)

    def restart(self) -> None:
        """Replace the kernel by a fresh one (empty namespace, execution count 1)."""
        self._restart(now=False)

    def _restart(self, *, now: bool) -> None:
        run_sync(self._a_teardown)(now)
        self.restarts += 1
        self.start()

    @property
    def pid(self) -> int | None:
        if self._client is None or self._client.km is None:
            return None
        provisioner = self._client.km.provisioner
        return getattr(provisioner, "pid", None) if provisioner is not None else None

    @property
    def pgid(self) -> int | None:
        """The kernel's process group id (its own group: ``pid`` as launched by jupyter)."""
        return (self._live[1] or None) if self._live is not None else None

    def __enter__(self) -> KernelSession:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def _running(self) -> _Client:
        if self._client is None:
            self.start()
        assert self._client is not None
        return self._client

    # -- cells ---------------------------------------------------------------------------------

    def run_cell(self, source: str, *, spill_name: str | None = None) -> CellOutcome:
        """Execute one cell; never raises for user errors, timeouts or kernel death.

        Stream text past ``output_cap_chars`` is cut from the outputs while it arrives; with
        ``spill_name`` and ``spill_dir`` set, all of it is written to ``cell-{spill_name}.txt``
        there (see ``CellOutcome.spilled``).

        ``timeout``: the cell ran past ``cell_timeout`` and was interrupted. If the kernel is not
        idle again within ``interrupt_grace`` seconds (SIGINT ignored), it is restarted and its
        state is lost (``restarts`` increases). ``dead``: the kernel died during the cell; it is
        restarted, so the next call works on an empty namespace. Raises KernelError only when the
        kernel cannot be restarted or the connection breaks.
        """
        spill = self._spill_target(spill_name)
        client = self._running()
        cell = nbformat.v4.new_code_cell(source)
        client.nb.cells = [cell]
        client.clear_display_id_mapping(0)
        self._last_reply = None
        client.sink = sink = StreamSink(self.output_cap_chars, self.excerpt_chars, *spill)
        started = monotonic()
        try:
            client.execute_cell(cell, 0)
            dead = False
        except DeadKernelError:
            dead = True
        except BccError:  # e.g. Terminated raised by a signal handler: not a kernel fault
            raise
        except Exception as exc:
            raise KernelError(f"kernel communication failed: {exc}") from exc
        finally:
            client.sink = None
            sink.finish(cell.get("outputs", []))
        reply = self._last_reply or {}
        content = reply.get("content", {})
        if dead:
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
        outputs = drop_oversized(merge_streams([dict(o) for o in cell.get("outputs", [])]))
        return CellOutcome(
            status=status,
            outputs=tuple(outputs),
            execution_count=cell.get("execution_count"),
            duration_ms=int((monotonic() - started) * 1000),
            excerpt=excerpt(outputs, status, ename, evalue, self.excerpt_chars, sink),
            error_name=ename,
            error_value=evalue,
            spilled=sink.spilled,
        )

    def _spill_target(self, spill_name: str | None) -> tuple[Path | None, str | None]:
        """The spill file for ``spill_name`` and how the marker names it; Nones for no spill."""
        if self.spill_dir is None or spill_name is None:
            return None, None
        path = self.spill_dir / f"cell-{spill_name}.txt"
        if path.name != f"cell-{spill_name}.txt":
            raise ValueError(f"spill_name must be a plain file name part: {spill_name!r}")
        try:
            return path, str(path.resolve().relative_to(self.cwd.resolve()))
        except ValueError:
            return path, str(path.resolve())

    def _await_idle(self, timeout: float) -> bool:
        try:
            return self._silent({}, timeout) is not None
        except DeadKernelError:
            return False

    # -- silent requests -----------------------------------------------------------------------

    def _silent(self, expressions: dict[str, str], timeout: float) -> dict[str, Any] | None:
        """Send a silent execute_request; return its reply content, None past the deadline."""
        client = self._running()
        return run_sync(self._a_silent)(client.kc, client.km, expressions, timeout)

    @staticmethod
    async def _a_silent(
        kc: Any, km: Any, expressions: dict[str, str], timeout: float
    ) -> dict[str, Any] | None:
        msg_id = kc.execute(
            "", silent=True, store_history=False, user_expressions=expressions, allow_stdin=False
        )
        deadline = monotonic() + timeout
        while (remaining := deadline - monotonic()) > 0:
            try:
                msg = await kc.get_shell_msg(timeout=min(1.0, remaining))
            except Empty:
                if not await km.is_alive():
                    raise DeadKernelError("Kernel died") from None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg["content"]
        return None

    def _call_helper(self, func: str, payload: Any, timeout: float) -> Any:
        """Run ``func(json payload)`` of the helper source in the kernel; return its JSON value.

        Raises TimeoutError past ``timeout`` (the kernel is interrupted, or restarted if it stays
        busy) and KernelError if the kernel died (it is restarted).
        """
        expr = (
            f"(lambda d: (exec({_HELPER_SOURCE!r}, d), d[{func!r}]({json.dumps(payload)!r}))[1])"
            "({})"
        )
        try:
            content = self._silent({"bcc": expr}, timeout)
        except DeadKernelError:
            self._restart(now=True)
            raise KernelError("the kernel died during inspection; it was restarted") from None
        if content is None:
            client = self._running()
            assert client.km is not None
            run_sync(client.km.interrupt_kernel)()
            if not self._await_idle(self.interrupt_grace + client.iopub_timeout):
                self._restart(now=True)
            raise TimeoutError(f"kernel inspection exceeded {timeout:g} s")
        result = content.get("user_expressions", {}).get("bcc", {})
        if result.get("status") != "ok":
            raise KernelError(f"inspection failed: {result.get('ename')}: {result.get('evalue')}")
        return json.loads(ast.literal_eval(result["data"]["text/plain"]))

    def inspect(self, timeout: float = 30) -> tuple[VariableInfo, ...]:
        """Summaries of the user's data variables (no modules, callables, types or _names)."""
        return self.inspect_namespace(timeout).variables

    def inspect_namespace(self, timeout: float = 30) -> Namespace:
        """The user's data variables, and the modules and callables they can use, by name."""
        data = self._call_helper("inspect_ns", None, timeout)
        code = data.get("code", {})
        return Namespace(
            tuple(
                VariableInfo(**{**v, "columns": tuple((c, t) for c, t in v["columns"])})
                for v in data["vars"]
            ),
            tuple((n, m) for n, m in code.get("modules", [])),
            tuple((n, m) for n, m in code.get("callables", [])),
        )

    def check(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> CheckReport:
        """Which artifact names exist, and how each criterion ``bool(expr)`` evaluates."""
        payload = {"artifacts": list(artifacts), "criteria": list(criteria)}
        data = self._call_helper("check_ns", payload, timeout)
        return CheckReport(
            artifacts=tuple((name, bool(ok)) for name, ok in data["artifacts"]),
            criteria=tuple((expr, verdict, detail) for expr, verdict, detail in data["criteria"]),
        )

    def delete(self, names: Sequence[str]) -> None:
        """Delete names (and IPython's hidden references to their values), then gc.collect()."""
        if names:
            self._call_helper("delete_ns", list(names), 30)

    def fetch_json(
        self, names: Sequence[str], max_chars: int = FETCH_CHARS, timeout: float = 30
    ) -> dict[str, Any]:
        """Values of the named variables that are small and JSON-serialisable (others left out)."""
        payload = {"names": list(names), "max_chars": max_chars}
        return self._call_helper("fetch_ns", payload, timeout)

    def _user_names(self, timeout: float = 30) -> list[str]:
        """All keys of the user namespace (for tests and debugging)."""
        return self._call_helper("names_ns", None, timeout)


class _Client(NotebookClient):
    """A NotebookClient that hands the running cell's stream messages to ``sink``.

    nbclient appends every stream message to the cell's outputs and offers no hook for them
    (output hooks are for Output widgets, keyed by a msg_id not known before the request), so
    this overrides ``output``, where they all pass.
    """

    sink: StreamSink | None = None

    def output(
        self, outs: list, msg: dict[str, Any], display_id: str | None, cell_index: int
    ) -> Any:
        sink = self.sink
        if (
            sink is None
            or msg["msg_type"] != "stream"
            or self.output_hook_stack.get(msg["parent_header"].get("msg_id"))  # an Output widget
            or outs is not self.nb.cells[cell_index].outputs  # a straggler of an earlier cell
        ):
            return super().output(outs, msg, display_id, cell_index)
        if self.clear_before_next_output:  # what super().output() does before appending
            outs.clear()
            self.clear_display_id_mapping(cell_index)
            self.clear_before_next_output = False
        sink.write(outs, msg["content"]["name"], msg["content"]["text"])
        return None


# -- verification ----------------------------------------------------------------------------


def execute_notebook(
    nb: nbformat.NotebookNode,
    cwd: Path,
    *,
    cell_timeout: float = 600,
    env: Mapping[str, str] | None = None,
    fetch: Sequence[str] = (),
) -> tuple[VerificationResult, nbformat.NotebookNode]:
    """Re-execute a copy of ``nb`` top to bottom in a fresh kernel; stop at the first failure.

    Returns the verdict (with the JSON values of the ``fetch`` variables the re-execution
    left, when every cell passed) and the executed copy (outputs capped like a session's).
    Raises KernelError when the kernel cannot start.
    """
    values: dict[str, Any] = {}
    executed = copy.deepcopy(nb)
    started = monotonic()
    failing: int | None = None
    error: str | None = None
    with KernelSession(Path(cwd), cell_timeout=cell_timeout, env=env) as session:
        for index, cell in enumerate(executed.cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            if "skip-execution" in cell.get("metadata", {}).get("tags", []):
                continue
            outcome = session.run_cell(cell.source)
            cell.outputs = [nbformat.from_dict(o) for o in outcome.outputs]
            cell.execution_count = outcome.execution_count
            if outcome.status != "ok":
                failing = index
                value = (outcome.error_value or "").split(";")[0]  # drop "it was restarted"
                error = " ".join(f"{outcome.error_name}: {value}".split())
                break
        if failing is None and fetch:
            values = session.fetch_json(fetch, max_chars=FETCH_CHARS)
    return (
        VerificationResult(
            status="passed" if failing is None else "failed",
            first_failing_cell=failing,
            error=error,
            duration_ms=int((monotonic() - started) * 1000),
            values=values,
        ),
        executed,
    )
