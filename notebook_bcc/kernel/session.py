"""``KernelSession``, the only class that talks to the Jupyter kernel.

``KernelSession`` keeps one ipykernel alive per run and executes cells through an nbclient
``NotebookClient`` (timeouts with interrupt, dead-kernel detection, output collection).
Namespace inspection and checks go through a silent ``execute_request`` whose
``user_expressions`` run a helper exec-ed into a fresh dict, so the user namespace, the
history and the execution count are left untouched.

Its parts, each a class the next builds on: ``launch.py`` (starting the kernel where it lives,
restarting and shutting it down), ``calls.py`` (silent requests and helper calls),
``execution.py`` (running a cell) and ``inspection.py`` (the namespace).

All calls must come from one thread: the zmq sockets live on that thread's event loop.
"""

from __future__ import annotations

import contextlib

from notebook_bcc.errors import KernelError
from notebook_bcc.kernel.execution import CellExecution
from notebook_bcc.kernel.inspection import FETCH_CHARS, NamespaceInspection
from notebook_bcc.kernel.outputs import RICH_OUTPUT_MAX_BYTES
from notebook_bcc.kernel.records import (
    CellOutcome,
    CheckReport,
    KernelEnvironment,
    Namespace,
    VariableInfo,
)

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


class KernelSession(CellExecution, NamespaceInspection):
    """One live ipykernel, started in ``cwd`` with a scrubbed environment.

    ``restarts`` counts automatic and explicit restarts: each one empties the namespace, so a
    caller that sees it change must replay its cells.
    """

    def start(self) -> None:
        """Start the kernel (no-op when running). Tries ipc, then tcp. Raises KernelError.

        Once connected, a gateway kernel is moved into the run's working directory there (the
        data files sent or linked), and figures are set to describe themselves in text.
        """
        if self._ready:
            return
        super().start()
        if self.gateway is not None:  # connected; the preparation is its first request
            self._prepare_remote()
        probe = {"packages": ANALYSIS_PACKAGES, "modules": list(self.named_modules)}
        calls = {"figures": ("figures_ns", None), "env": ("environment_ns", probe)}
        with contextlib.suppress(TimeoutError, KernelError):  # niceties: cells run without them
            self.environment = KernelEnvironment.from_json(self._call_helpers(calls, 30)["env"])

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
