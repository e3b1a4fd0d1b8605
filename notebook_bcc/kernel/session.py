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
import concurrent.futures
import contextlib
import json
import os
import shutil
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

import nbformat
import zmq
from jupyter_client import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from jupyter_core.utils import run_sync
from nbclient.exceptions import DeadKernelError

from notebook_bcc.errors import BccError, KernelError
from notebook_bcc.kernel import processes
from notebook_bcc.kernel.gateway import REQUEST_TIMEOUT_S, Gateway
from notebook_bcc.kernel.helper_source import call_expression
from notebook_bcc.kernel.outputs import (
    RICH_OUTPUT_MAX_BYTES,
    StreamingClient,
    StreamSink,
    drop_oversized,
    excerpt,
    merge_streams,
)
from notebook_bcc.kernel.ready import ReadyKernelClient
from notebook_bcc.kernel.records import CellOutcome, CheckReport, Namespace, VariableInfo
from notebook_bcc.kernel.sandbox import SPEC_NAME, Sandbox

__all__ = [
    "RICH_OUTPUT_MAX_BYTES",
    "CellOutcome",
    "CheckReport",
    "KernelSession",
    "Namespace",
    "VariableInfo",
]

_OUTSTREAM = "notebook_bcc.kernel.stream.BoundedOutStream"  # bounds each stream message
_IPC_PATH_MAX = 90  # AF_UNIX paths are limited to ~107 bytes; leave room for '-ipc-N'
FETCH_CHARS = 8_000  # JSON size up to which a variable's value is fetched (summary, results)


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
        sandboxed: bool = False,
        gateway: Gateway | None = None,
    ) -> None:
        self.cwd = Path(cwd)
        self.cell_timeout = cell_timeout
        self.startup_timeout = startup_timeout
        self.output_cap_chars = output_cap_chars
        self.excerpt_chars = excerpt_chars
        self.kernel_name = kernel_name
        self.restarts = 0
        #: Run the kernel in a bubblewrap sandbox (``sandbox.py``): no network, read-only
        #: filesystem but ``cwd`` and a private /tmp, home hidden. Needs the ipc transport.
        self.sandboxed = sandboxed
        #: Start the kernel through this Jupyter gateway instead of locally (``gateway.py``).
        self.gateway = gateway
        self._sockets: Path | None = None  # a sandboxed kernel's own connection directory
        self._remote_mark = ""  # set in a gateway kernel's builtins when it was prepared
        self._env = dict(env) if env is not None else None
        self.log_path = log_path  # the kernel process's own stdout/stderr go here when set
        # Where a cell's full stream text goes when it passes ``output_cap_chars``:
        # ``spill_dir / f"cell-{spill_name}.txt"`` for ``run_cell(..., spill_name=...)``, named in
        # the truncation marker (relative to ``cwd`` when inside it). None: the rest is dropped.
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self._log_file: Any = None
        self._client: StreamingClient | None = None
        #: a gateway kernel ``launch`` is starting in a thread: its client, or what went wrong
        self._remote_launch: concurrent.futures.Future[StreamingClient] | None = None
        #: the client is connected (implies ``_client``; a ``launch``-ed kernel may still boot)
        self._ready = False
        self._live: tuple[int, int] | None = None  # this kernel's entry in processes._LIVE
        self._last_reply: dict[str, Any] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def launch(self) -> None:
        """Start the kernel and return without waiting for it, so that it boots while the
        caller works; ``start`` (or the first cell) waits for it. A local kernel's process is
        spawned; a gateway kernel is asked for and connected to in a thread of its own (the
        gateway takes 0.3-1 s). A no-op for a kernel already launched; a failure here is left
        to ``start`` to retry and report."""
        if self._client is not None or self._remote_launch is not None or not self.cwd.is_dir():
            return
        if self.gateway is not None:
            self._remote_launch = future = concurrent.futures.Future()
            threading.Thread(
                target=self._launch_remote_in_thread,
                args=(future,),
                name="bcc-gateway-launch",
                daemon=True,
            ).start()
            return
        try:
            run_sync(self._a_spawn)(self._transports()[0], self._kernel_env())
        except Exception:
            run_sync(self._a_teardown)(True)
            return
        atexit.unregister(self.shutdown)
        atexit.register(self.shutdown)

    def start(self) -> None:
        """Start the kernel (no-op when running). Tries ipc, then tcp. Raises KernelError."""
        if self._ready:
            return
        if not self.cwd.is_dir():
            raise KernelError(f"kernel working directory does not exist: {self.cwd}")
        if self.gateway is not None:
            self._start_remote()
        elif self._client is not None:  # launched: wait for it, else start afresh
            try:
                run_sync(self._client.async_start_new_kernel_client)()
            except Exception:
                run_sync(self._a_teardown)(True)
                self._start_local()
        else:
            self._start_local()
        self._ready = True
        with contextlib.suppress(TimeoutError, KernelError):  # a nicety: figures still display
            self._call_helper("figures_ns", None, 30)

    def _transports(self) -> tuple[str, ...]:
        if self.sandboxed:  # no network inside: ipc sockets in a directory bound into it
            return ("ipc",)
        return ("ipc", "tcp") if zmq.has("ipc") else ("tcp",)

    def _kernel_env(self) -> dict[str, str]:
        return processes.scrub_env(self._env if self._env is not None else os.environ)

    def _start_local(self) -> None:
        env = self._kernel_env()
        error: BaseException | None = None
        for transport in self._transports():
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

    def _launch_remote_in_thread(self, future: concurrent.futures.Future) -> None:
        """``launch``'s thread: ask the gateway for a kernel and connect to it, on an event loop
        of this thread's own; the client (or the error) goes to ``future``."""
        try:
            future.set_result(run_sync(self._a_remote_client)())
        except BaseException as exc:
            future.set_exception(exc)

    def _launched_remote(self) -> StreamingClient | None:
        """The client ``launch`` connected in its thread (waited for), None if it failed."""
        future, self._remote_launch = self._remote_launch, None
        if future is None:
            return None
        try:
            return future.result(timeout=self.startup_timeout + REQUEST_TIMEOUT_S)
        except Exception:
            return None

    def _start_remote(self) -> None:
        """Start a kernel through the gateway (or take the one ``launch`` started) and move
        it into the run's working directory there (the data files sent or linked). Raises
        KernelError."""
        assert self.gateway is not None
        try:
            self._client = self._launched_remote() or run_sync(self._a_remote_client)()
        except Exception as exc:
            run_sync(self._a_teardown)(True)
            raise KernelError(
                f"kernel gateway {self.gateway.url}: could not start a kernel: {exc}"
            ) from exc
        atexit.unregister(self.shutdown)
        atexit.register(self.shutdown)
        self._ready = True  # connected; the preparation is its first request
        self._prepare_remote()

    def _prepare_remote(self) -> None:
        """Move the remote kernel into the run's working directory with the data files, and
        mark the process (a builtins attribute) so that a restart behind our back shows."""
        assert self.gateway is not None
        self._remote_mark = uuid.uuid4().hex
        setup = (
            self.gateway.setup_code(self.cwd)
            + f"\nsetattr(__import__('builtins'), '_bcc_kernel_mark', {self._remote_mark!r})"
        )
        expr = f"(lambda d: (exec({setup!r}, d), __import__('os').getcwd())[1])({{}})"
        try:
            content = self._silent({"bcc": expr}, self.startup_timeout)
        except Exception as exc:
            raise KernelError(f"kernel gateway: the remote kernel failed: {exc}") from exc
        result = (content or {}).get("user_expressions", {}).get("bcc", {})
        if result.get("status") != "ok":
            detail = f"{result.get('ename')}: {result.get('evalue')}" if result else "no reply"
            raise KernelError(f"kernel gateway: preparing the remote working directory: {detail}")

    async def _a_remote_client(self) -> StreamingClient:
        """A kernel asked for on the gateway and connected to; removed again if the
        connection fails."""
        assert self.gateway is not None
        client = self._new_client(self.gateway.manager(self.kernel_name), [])
        await client.async_start_new_kernel()
        try:
            await client.async_start_new_kernel_client()
        except BaseException:
            await processes.stop(client, True)
            raise
        return client

    def _new_client(self, km: Any, extra_arguments: list[str]) -> StreamingClient:
        return StreamingClient(
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
            extra_arguments=extra_arguments,
        )

    async def _a_launch(self, transport: str, env: dict[str, str]) -> None:
        await self._a_spawn(transport, env)
        assert self._client is not None
        await self._client.async_start_new_kernel_client()

    async def _a_spawn(self, transport: str, env: dict[str, str]) -> None:
        """Start the kernel process (not waiting for it to answer)."""
        where: dict[str, Any] = {"kernel_name": self.kernel_name}
        if transport == "ipc":  # absolute socket paths; a relative default breaks with cwd
            base = Path(jupyter_runtime_dir()) / f"bcc-{uuid.uuid4().hex[:12]}"
            if self.sandboxed:  # its own directory: the sandbox sees no other kernel's keys
                self._sockets = base
                base = base / "k"
            if len(str(base)) > _IPC_PATH_MAX:
                raise OSError(f"ipc socket path too long: {base}")
            base.parent.mkdir(parents=True, exist_ok=True)
            where |= {"connection_file": f"{base}.json", "ip": f"{base}-ipc"}
        if self._sockets is not None:
            sandbox = Sandbox(self.cwd.resolve(), self._sockets)
            where |= {
                "kernel_name": SPEC_NAME,
                "kernel_spec_manager": sandbox.spec_manager(self.kernel_name),
            }
        km = AsyncKernelManager(transport=transport, client_factory=ReadyKernelClient, **where)
        client = self._new_client(km, [f"--IPKernelApp.outstream_class={_OUTSTREAM}"])
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
            processes.track(self._live)

    def _on_cell_executed(self, cell: Any, cell_index: int, execute_reply: dict) -> None:
        self._last_reply = execute_reply

    def shutdown(self, *, now: bool = False) -> None:
        """Stop the kernel; idempotent. ``now``: kill it at once instead of asking it to exit
        (what is running is lost). A graceful shutdown falls back to a kill."""
        atexit.unregister(self.shutdown)
        launched = self._launched_remote()  # a gateway kernel still being asked for: waited for
        if launched is not None:
            run_sync(processes.stop)(launched, True)
        run_sync(self._a_teardown)(now)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    async def _a_teardown(self, now: bool) -> None:
        client, self._client = self._client, None
        self._ready = False
        live, self._live = self._live, None
        if client is not None:
            await processes.stop(client, now)
        if live is not None:  # an interrupted teardown leaves it for kill_live_kernels()
            processes.untrack(live)
        sockets, self._sockets = self._sockets, None
        if sockets is not None:
            shutil.rmtree(sockets, ignore_errors=True)

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
    def remote_id(self) -> str | None:
        """The kernel's id on the gateway (None for a local kernel)."""
        if self.gateway is None or self._client is None or self._client.km is None:
            return None
        return getattr(self._client.km, "kernel_id", None)

    @property
    def pgid(self) -> int | None:
        """The kernel's process group id (its own group: ``pid`` as launched by jupyter)."""
        return (self._live[1] or None) if self._live is not None else None

    def __enter__(self) -> KernelSession:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def _running(self) -> StreamingClient:
        if not self._ready:
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
        if status != "ok" and self._restarted_remotely():
            status, ename = "dead", "DeadKernelError"
            evalue = "the kernel died; the gateway restarted it with an empty namespace"
            self.restarts += 1
            self._prepare_remote()
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

    def _restarted_remotely(self) -> bool:
        """A gateway restarts a kernel that died on its own, and nbclient does not notice
        (jupyter/nbclient#319): the mark set when it was prepared is then gone."""
        if self.gateway is None or self._client is None:
            return False
        expr = "getattr(__import__('builtins'), '_bcc_kernel_mark', '')"
        try:
            content = self._silent({"bcc": expr}, self.interrupt_grace + 5)
        except DeadKernelError:
            return True
        value = ((content or {}).get("user_expressions", {}).get("bcc") or {}).get("data", {})
        return value.get("text/plain") != repr(self._remote_mark)

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
        return self._call_helpers({"bcc": (func, payload)}, timeout)["bcc"]

    def _call_helpers(self, calls: dict[str, tuple[str, Any]], timeout: float) -> dict[str, Any]:
        """Several helper calls in one silent request (one round trip, which a gateway's
        kernel makes costly): key -> JSON value of ``func(payload)``."""
        expressions = {
            key: call_expression(func, payload) for key, (func, payload) in calls.items()
        }
        try:
            content = self._silent(expressions, timeout)
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
        values = {}
        for key in calls:
            result = content.get("user_expressions", {}).get(key, {})
            if result.get("status") != "ok":
                raise KernelError(
                    f"inspection failed: {result.get('ename')}: {result.get('evalue')}"
                )
            values[key] = json.loads(ast.literal_eval(result["data"]["text/plain"]))
        return values

    def inspect(self, timeout: float = 30) -> tuple[VariableInfo, ...]:
        """Summaries of the user's data variables (no modules, callables, types or _names)."""
        return self.inspect_namespace(timeout).variables

    def inspect_namespace(self, timeout: float = 30) -> Namespace:
        """The user's data variables, and the modules and callables they can use, by name."""
        return _namespace(self._call_helper("inspect_ns", None, timeout))

    def check_and_inspect(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> tuple[CheckReport, Namespace]:
        """``check`` and ``inspect_namespace`` in one round trip."""
        payload = {"artifacts": list(artifacts), "criteria": list(criteria)}
        data = self._call_helpers(
            {"check": ("check_ns", payload), "inspect": ("inspect_ns", None)}, timeout
        )
        return _check_report(data["check"]), _namespace(data["inspect"])

    def check(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> CheckReport:
        """Which artifact names exist, and how each criterion ``bool(expr)`` evaluates."""
        payload = {"artifacts": list(artifacts), "criteria": list(criteria)}
        return _check_report(self._call_helper("check_ns", payload, timeout))

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


def _namespace(data: dict[str, Any]) -> Namespace:
    code = data.get("code", {})
    return Namespace(
        tuple(
            VariableInfo(**{**v, "columns": tuple((c, t) for c, t in v["columns"])})
            for v in data["vars"]
        ),
        tuple((n, m) for n, m in code.get("modules", [])),
        tuple((n, m) for n, m in code.get("callables", [])),
    )


def _check_report(data: dict[str, Any]) -> CheckReport:
    return CheckReport(
        artifacts=tuple((name, bool(ok)) for name, ok in data["artifacts"]),
        criteria=tuple((expr, verdict, detail) for expr, verdict, detail in data["criteria"]),
    )
