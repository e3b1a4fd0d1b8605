"""Where the run's kernels come from: one factory for the run's kernel, a fork's branch kernels
and the verification kernel.

``KernelHost`` and the verifier ask a ``KernelFactory`` for a ``Kernel`` (``kernel/protocol.py``)
with a ``KernelRequest``; the product's factory, ``open_kernel``, makes a ``KernelSession`` (a
live Jupyter kernel: local, sandboxed or on a gateway, as the run's settings say). A test hands
``Runner`` a factory of its own to run the workflow's logic on a kernel it scripts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from notebook_bcc.config import RunConfig
from notebook_bcc.kernel.gateway import TOKEN_ENV, Gateway
from notebook_bcc.kernel.protocol import Kernel
from notebook_bcc.kernel.sandbox import SandboxLimits
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.rundir.store import SPILL_DIR

__all__ = ["KernelFactory", "KernelRequest", "gateway_of", "open_kernel", "sandbox_of"]


@dataclass(frozen=True)
class KernelRequest:
    """What the run asks a kernel for."""

    config: RunConfig
    run_dir: Path  # the run directory (its kernel.log, its logs/cells/ spill files)
    cwd: Path  # where the kernel works: the run directory, or the verifier's scratch copy
    #: "" for the run's kernel, the branch's id for a fork's branch, "verify" for the verifier;
    #: on a gateway, a kernel with a role works in a remote directory of its own
    role: str = ""
    named_modules: tuple[str, ...] = ()  # the problem's, reported with the environment

    @property
    def verifier(self) -> bool:
        return self.role == "verify"


#: makes the kernel a request asks for (not started: the caller launches or starts it)
KernelFactory = Callable[[KernelRequest], Kernel]


def gateway_of(config: RunConfig) -> Gateway | None:
    """Where the run's kernels come from, with the token read from the environment now."""
    if not config.kernel_gateway:
        return None
    token = os.environ.get(TOKEN_ENV) or None
    return Gateway(config.kernel_gateway, token, config.kernel_data_dir, config.keep_gateway_files)


def sandbox_of(config: RunConfig) -> SandboxLimits | None:
    """The limits of the run's sandboxed kernels; None when they are not sandboxed."""
    if not config.sandbox:
        return None
    return SandboxLimits(
        config.sandbox_memory_mb, config.sandbox_max_processes, config.sandbox_max_file_mb
    )


def open_kernel(request: KernelRequest) -> KernelSession:
    """A live Jupyter kernel as the run's settings say (the product's ``KernelFactory``).

    The verifier's keeps its outputs as nbclient collects them (nothing is cut or spilled: it
    only says whether the notebook re-runs); the others cut long streams to the run's
    ``output_cap_chars`` and spill the whole text to ``logs/cells/``."""
    config = request.config
    gateway = gateway_of(config)
    if gateway is not None and request.role:
        gateway = replace(gateway, role=request.role)
    log = request.run_dir / "kernel.log"  # the kernel's own messages, not bcc's stderr
    common = {
        "cell_timeout": config.cell_timeout,
        "startup_timeout": config.kernel_startup_timeout,
        "sandbox": sandbox_of(config),
        "gateway": gateway,
        "log_path": log,
    }
    if request.verifier:
        session = KernelSession(request.cwd, **common)
    else:
        session = KernelSession(
            request.cwd,
            output_cap_chars=config.output_cap_chars,
            excerpt_chars=config.excerpt_chars,
            spill_dir=request.run_dir / SPILL_DIR,
            **common,
        )
    session.named_modules = request.named_modules
    return session
