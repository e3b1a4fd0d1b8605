"""``Kernel``: what the workflow asks of a kernel, whatever runs the code.

The run's kernel, a fork's branch kernels and the verification kernel are all used through this
protocol; ``KernelSession`` (a live Jupyter kernel) is the product's only implementation. It is
the seam where tests put a kernel of their own (``tests/scripted_kernel.py``) to check the
workflow's logic without starting processes, as httpx's ``MockTransport`` stands in for the
network; what is about kernels is tested with real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from notebook_bcc.kernel.records import CellOutcome, CheckReport, KernelEnvironment, Namespace

__all__ = ["Kernel"]


class Kernel(Protocol):
    """A kernel the run executes cells in and looks into (see ``KernelSession`` for the
    semantics of each call: which raise, which never do)."""

    #: the problem's named modules, reported with the environment when it starts
    named_modules: tuple[str, ...]
    #: the kernel's Python and packages, known once it started (None: it did not say)
    environment: KernelEnvironment | None
    #: automatic and explicit restarts so far: each empties the namespace
    restarts: int
    #: called before each (re)start; raising refuses it (the verifier closing)
    before_start: Callable[[], None] | None

    @property
    def pid(self) -> int | None: ...

    @property
    def pgid(self) -> int | None: ...

    @property
    def remote_id(self) -> str | None: ...

    def launch(self) -> None: ...

    def start(self) -> None: ...

    def run_cell(
        self, source: str, *, spill_name: str | None = None, excerpt_chars: int | None = None
    ) -> CellOutcome: ...

    def inspect_namespace(self, timeout: float = 30) -> Namespace: ...

    def check_and_inspect(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> tuple[CheckReport, Namespace]: ...

    def score(self, expression: str, timeout: float = 30) -> tuple[float | None, str]: ...

    def delete(self, names: Sequence[str]) -> None: ...

    def fetch_json(
        self,
        names: Sequence[str],
        max_chars: int = ...,
        timeout: float = 30,
        whole: Mapping[str, int] | None = None,
    ) -> dict[str, Any]: ...

    def restart(self) -> None: ...

    def shutdown(self, *, now: bool = False) -> None: ...
