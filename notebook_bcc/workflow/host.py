"""KernelHost: the run's kernel, started on first use, and what the run learns from it.

``launch`` spawns the kernel's process (or asks a gateway for a kernel, in a thread) at the
start of a run, so that it boots while the data files are previewed; ``ensure`` waits for it
before the first agent is asked, because every planner is told the packages the kernel has
(``KernelSession.environment``, the kernel's own answer). It runs the parameters cell of a
new run or replays the notebook of a resumed one, records the
kernel's pid for a later resume to reap, inspects the namespace into the ledger after cells,
rebuilds the state after a restart (within ``--max-kernel-restarts``) and fetches the results
at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from notebook_bcc.errors import KernelError
from notebook_bcc.kernel.processes import process_start_time
from notebook_bcc.kernel.protocol import Kernel
from notebook_bcc.kernel.records import CellOutcome, CheckReport, Namespace
from notebook_bcc.rundir.ledger import DELETED
from notebook_bcc.rundir.results import (
    FETCH_WHOLE,
    FINDINGS_NAMES,
    RESULT_LIMITS,
    RESULT_NAMES,
    shortened_parts,
)
from notebook_bcc.workflow.context import RunContext
from notebook_bcc.workflow.kernels import KernelRequest

__all__ = ["KernelHost"]


class KernelHost:
    def __init__(
        self,
        ctx: RunContext,
        *,
        resumed: bool = False,
        named_modules: tuple[str, ...] = (),
        rebuild_why: str = "resume",
        gateway_role: str = "",
    ) -> None:
        self.ctx = ctx
        #: on a gateway, a kernel with a role works in a directory of its own there (a fork's
        #: branch: its shutdown removes its own, not the run kernel's)
        self.gateway_role = gateway_role
        self.rebuild_why = rebuild_why  # why a ``resumed`` kernel replays the notebook
        self.named_modules = named_modules  # the problem's, reported with the environment
        self.resumed = resumed  # a resumed run rebuilds its kernel state by replay
        self.kernel: Kernel | None = None  # started: ready for cells
        self._launched: Kernel | None = None  # spawned, still booting

    def launch(self) -> None:
        """Spawn the kernel's process now without waiting for it (``ensure`` waits)."""
        if self.kernel is None and self._launched is None:
            self._launched = self._session()
            self._launched.launch()

    def ensure(self) -> Kernel:
        """The run's kernel, started on first use."""
        if self.kernel is not None:
            return self.kernel
        ctx = self.ctx
        self.kernel, self._launched = self._launched or self._session(), None
        self.kernel.start()
        if self.kernel.environment is not None:
            ctx.state.kernel_environment = self.kernel.environment.text()
        self.record()
        if self.resumed:
            self.replay(self.rebuild_why)
        else:
            for cell in ctx.doc.setup_cells():
                outcome = self.kernel.run_cell(cell.source)
                if outcome.status != "ok":
                    raise KernelError(f"the parameters cell failed: {outcome.excerpt[-300:]}")
                ctx.doc.set_outputs(cell, outcome.outputs, outcome.execution_count)
            self.inspect_kernel("parameters")
            ctx.doc.save()
        return self.kernel

    def _session(self) -> Kernel:
        root = self.ctx.store.root
        request = KernelRequest(self.ctx.config, root, root, self.gateway_role, self.named_modules)
        return self.ctx.kernels(request)

    def record(self) -> None:
        """Note the kernel's pid and process group, so a later resume can reap an orphan."""
        assert self.kernel is not None
        self.ctx.store.append_event(
            {
                "type": "kernel",
                "pid": self.kernel.pid,
                "pgid": self.kernel.pgid,
                # the pid's start time: a resume kills only the process that still has both
                "started": self.kernel.pid and process_start_time(self.kernel.pid),
                **({"gateway_kernel": self.kernel.remote_id} if self.kernel.remote_id else {}),
                "environment": self.ctx.state.kernel_environment,
            }
        )

    def replay(self, why: str) -> list[str]:
        """Re-run the notebook's code cells to rebuild kernel state, then delete again what
        the ledger says is gone; return divergences."""
        assert self.kernel is not None
        diverged = []
        for i, source in enumerate(self.ctx.doc.code_sources()):
            outcome = self.kernel.run_cell(source)
            if outcome.status != "ok":
                diverged.append(f"code cell {i} failed on replay: {outcome.error_name}")
        # what the runner freed (a safe deprecation) is no cell's doing: the cells made it again
        freed = [r.name for r in self.ctx.state.ledger.records.values() if r.status == DELETED]
        self.kernel.delete(freed)
        self.ctx.store.append_event({"type": "kernel_replay", "why": why, "diverged": diverged})
        self.inspect_kernel(f"{self.ctx.state.path}#replay")
        return diverged

    def inspect_kernel(self, where: str) -> None:
        """Inspect the namespace into the ledger (best effort: a failure keeps the last view)."""
        assert self.kernel is not None
        ctx = self.ctx
        try:
            names = self.kernel.inspect_namespace()
        except (KernelError, TimeoutError, ValueError) as exc:
            ctx.store.append_event({"type": "inspect_failed", "error": str(exc)})
            return
        self._record(names, where)

    def check_and_inspect(
        self, where: str, artifacts: Sequence[str], criteria: Sequence[str]
    ) -> CheckReport:
        """An action's checks and the inspection after it, in one round trip to the kernel.
        Raises TimeoutError or KernelError as ``KernelSession.check`` does; the ledger then
        keeps its last view."""
        assert self.kernel is not None
        try:
            report, names = self.kernel.check_and_inspect(artifacts, criteria)
        except (TimeoutError, KernelError) as exc:
            self.ctx.store.append_event({"type": "inspect_failed", "error": str(exc)})
            raise
        self._record(names, where)
        return report

    def _record(self, names: Namespace, where: str) -> None:
        ctx = self.ctx
        ctx.state.ledger.record_namespace(names.variables, where)
        ctx.state.kernel_code = {
            "modules": [list(m) for m in names.modules],
            "callables": [list(c) for c in names.callables],
        }
        ctx.doc.set_variables(ctx.state.ledger.to_json())

    def recover(self, outcome: CellOutcome, restarted: bool) -> str:
        """Say what happened to the kernel; after a restart, rebuild its state by replay."""
        config, counters = self.ctx.config, self.ctx.state.counters
        limit = f"exceeded {config.cell_timeout:g} s"
        if not restarted:
            return f"the cell {limit} and was interrupted; the kernel kept its state"
        counters.kernel_restarts += 1
        self.record()
        if counters.kernel_restarts > config.max_kernel_restarts:
            raise KernelError(
                f"the kernel was restarted {counters.kernel_restarts} times "
                f"(budget {config.max_kernel_restarts})",
                remedy="fix the code that kills or hangs the kernel, or continue with "
                f"`bcc resume {self.ctx.store.root} --max-kernel-restarts N`",
            )
        diverged = self.replay(f"kernel {outcome.status}")
        what = "died" if outcome.status == "dead" else f"{limit} and ignored the interrupt"
        note = f"the kernel {what}; it was restarted and the notebook replayed"
        return note + (f" ({len(diverged)} cells diverged)" if diverged else "")

    def results(self) -> dict[str, Any]:
        """The results and the small JSON-serialisable artifacts of the plan (summary.json)."""
        assert self.kernel is not None
        names = [*RESULT_NAMES, *FINDINGS_NAMES]
        for st in self.ctx.state.stages:
            names += [n for n in st.verified_artifacts if n not in names]
            for t in st.steps:
                names += [n for n in t.verified_artifacts if n not in names]
        try:
            return self.kernel.fetch_json(names, whole=FETCH_WHOLE)
        except (KernelError, TimeoutError, ValueError) as exc:  # the summary goes on without
            self.ctx.store.append_event({"type": "artifacts_failed", "error": str(exc)})
            return {}

    def result_notes(self, codes: Sequence[str]) -> list[str]:
        """For the reflector: each part of a result the code touched that is too large to
        report in full (or not JSON), so the model can fix it in this step (issue 39)."""
        touched = [n for n in RESULT_NAMES if any(n in code for code in codes)]
        if not touched or self.kernel is None:
            return []
        try:
            values = self.kernel.fetch_json(touched, whole=RESULT_LIMITS)
        except (KernelError, TimeoutError, ValueError):
            return []
        return [
            f"{part}: too large to report in full, so the summary shows only its type, size "
            "and first 200 characters; keep an answer short (a count, a few values, or a file "
            "written under outputs/ and named in the answer)"
            for name, value in values.items()
            for part in shortened_parts(value, (name,))
        ]

    def adopt(self, other: KernelHost) -> None:
        """Take ``other``'s kernel as the run's (a fork's kept branch); ours ends."""
        mine, self.kernel, other.kernel = self.kernel, other.kernel, None
        if mine is not None:
            mine.shutdown(now=True)

    def shutdown(self, *, now: bool) -> None:
        """Stop the kernel; one that was launched and never used is killed."""
        if self.kernel is not None:
            self.kernel.shutdown(now=now)
        if self._launched is not None:
            self._launched.shutdown(now=True)
            self._launched = None
