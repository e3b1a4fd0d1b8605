"""A bubblewrap sandbox for a local kernel: model-written code runs with no network, a
read-only filesystem except the run directory and a private /tmp, and the user's home hidden.

The kernel is started through a kernel spec whose ``argv`` is the ``python3`` spec's wrapped in
``bwrap``; jupyter_client launches it as usual. It talks to ``bcc`` over ``ipc`` sockets in a
directory bound into the sandbox (TCP to the host's loopback is gone with ``--unshare-net``),
and is interrupted by message (``interrupt_mode: message``), since a signal to ``bwrap`` would
not reach it. The Python installation, the site-packages and this package stay readable (they
may live under the hidden home).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

from notebook_bcc.errors import UsageError

__all__ = ["INSTALL_HINT", "UNSANDBOXED", "Sandbox", "bwrap_path", "choose"]

#: How to get bubblewrap, for the error of ``--sandbox`` without it (README, "Sandbox").
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
)

SPEC_NAME = "bcc-sandboxed"


@cache
def bwrap_path() -> str | None:
    """The ``bwrap`` executable when it can build a sandbox on this machine, else None (it
    is missing, or user namespaces are not allowed here)."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    probe = [found, "--ro-bind", "/", "/", "--unshare-net", "--die-with-parent", "true"]
    try:
        ok = subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return found if ok else None


#: What ``bcc run`` warns (one line) when a model's code will run without the sandbox.
UNSANDBOXED = (
    "bubblewrap cannot run here, so the model's code runs unsandboxed, with your permissions "
    f"(fix: {INSTALL_HINT}, or pass --no-sandbox to run so without this warning)"
)


def choose(requested: bool | None, offline: bool, remote: bool = False) -> bool:
    """Whether a run's kernels are sandboxed: as ``--sandbox`` / ``--no-sandbox`` say, else
    on for a model (not for the offline analyst, whose code is ours) when bubblewrap works.
    Never for a gateway's kernels, which run elsewhere. Raises UsageError (exit 2) for
    ``--sandbox`` where bubblewrap cannot run, or with a gateway."""
    if remote:
        if requested:
            raise UsageError(
                "--sandbox confines local kernels, not a gateway's",
                remedy="drop --sandbox, or --kernel-gateway to run locally in the sandbox",
            )
        return False
    if requested and bwrap_path() is None:
        raise UsageError("--sandbox: bubblewrap is not available here", remedy=INSTALL_HINT)
    if requested is not None:
        return requested
    return not offline and bwrap_path() is not None


def _readable() -> list[Path]:
    """What the kernel must still read: the interpreter, the environment, sys.path and this
    package (an editable install lives outside site-packages)."""
    package = Path(__file__).resolve().parents[2]
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent}
    paths |= {Path(p) for p in sys.path if p} | {package}
    return sorted(p.resolve() for p in paths if p.exists())


@dataclass(frozen=True)
class Sandbox:
    """Confines kernels of the run directory ``root``; ``sockets`` is the directory of their
    connection file and ipc sockets (bound writable)."""

    root: Path
    sockets: Path

    def argv(self, kernel_argv: list[str]) -> list[str]:
        bwrap = bwrap_path()
        if bwrap is None:
            raise OSError(f"bubblewrap cannot run here: {INSTALL_HINT}")
        home = Path.home()
        cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        cmd += ["--unshare-net", "--unshare-ipc", "--die-with-parent", "--tmpfs", "/tmp"]
        cmd += ["--tmpfs", str(home)]
        for path in _readable():
            if path.is_relative_to(home) or path.is_relative_to("/tmp"):
                cmd += ["--ro-bind", str(path), str(path)]
        for path in (self.root, self.sockets):
            cmd += ["--bind", str(path), str(path)]
        cmd += ["--remount-ro", str(home)]  # the hidden home is empty and read-only
        cmd += ["--chdir", str(self.root), "--"]
        return cmd + kernel_argv

    def spec_manager(self, kernel_name: str) -> KernelSpecManager:
        """A kernel spec manager that knows one spec, ``SPEC_NAME``: ``kernel_name``'s spec
        run inside the sandbox (written next to the sockets)."""
        base = KernelSpecManager().get_kernel_spec(kernel_name)
        argv = [sys.executable if a in ("python", "python3") else a for a in base.argv]
        folder = self.sockets / "kernels" / SPEC_NAME
        folder.mkdir(parents=True, exist_ok=True)
        spec = {
            "argv": self.argv(argv),
            "display_name": f"{base.display_name} (sandboxed)",
            "language": base.language,
            "interrupt_mode": "message",
            # the home is read-only inside: IPython and matplotlib keep their files in /tmp
            "env": {**base.env, "IPYTHONDIR": "/tmp/.ipython", "MPLCONFIGDIR": "/tmp/.mpl"},
            "metadata": base.metadata,
        }
        (folder / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
        return KernelSpecManager(kernel_dirs=[str(self.sockets / "kernels")])
