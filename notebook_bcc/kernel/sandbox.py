"""A bubblewrap sandbox for a local kernel: model-written code sees nothing of the host but a
read-only filesystem, and writes only its own ``outputs/`` and a private /tmp.

The kernel is started through a kernel spec whose ``argv`` is the ``python3`` spec's wrapped in
``bwrap``; jupyter_client launches it as usual. It talks to ``bcc`` over ``ipc`` sockets in a
directory bound into the sandbox (TCP to the host's loopback is gone with ``--unshare-net``),
and is interrupted by message (``interrupt_mode: message``), since a signal to ``bwrap`` would
not reach it. The spec itself lives in a directory of its own outside the sandbox's view (a
cell that rewrote it would run the next restart unconfined).

Inside: its own PID, IPC, UTS and network namespaces, a new session, no capabilities, a fresh
``/proc``, the user's home an empty read-only tmpfs, and an environment built from
``ALLOWED_ENV`` only (also for ``bwrap`` itself, whose copy is the sandbox's pid 1). The run
directory (the kernel's cwd) is bound read-only but its ``outputs/``. Every process the kernel
starts ends with the PID namespace, when the kernel exits or ``bcc`` dies (``--die-with-parent``).
The kernel runs under the limits of ``SandboxLimits`` (memory, processes, file size), set by a
few lines of Python that then exec it. The Python installation, the site-packages and this
package stay readable (they may live under the hidden home).
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

from notebook_bcc.errors import UsageError

__all__ = [
    "ALLOWED_ENV",
    "INSTALL_HINT",
    "UNSANDBOXED",
    "Sandbox",
    "SandboxLimits",
    "bwrap_path",
    "choose",
    "require_for_resume",
    "sandbox_env",
]

#: How to get bubblewrap, for the error of ``--sandbox`` without it (docs/sandbox.md, "Sandbox").
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
)

SPEC_NAME = "bcc-sandboxed"

#: The variables of bcc's environment a sandboxed kernel gets (names, ``fnmatch`` patterns):
#: the locale, the time zone, the terminal and the thread counts of the numeric libraries.
ALLOWED_ENV: tuple[str, ...] = (
    "PATH", "MALLOC_ARENA_MAX", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "OMP_NUM_THREADS", "OPENBLAS_*",
    "MKL_*", "NUMEXPR_*", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS",
)  # fmt: skip

#: Sets the limits (argv 1-3: RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE; soft and hard alike, so
#: the kernel cannot raise them again) and execs the kernel (argv 4 on).
_LIMITED_EXEC = (
    "import os, resource as r, sys\n"
    "for name, value in zip(('RLIMIT_AS', 'RLIMIT_NPROC', 'RLIMIT_FSIZE'), sys.argv[1:4]):\n"
    "    r.setrlimit(getattr(r, name), (int(value), int(value)))\n"
    "os.execv(sys.argv[4], sys.argv[4:])\n"
)


@dataclass(frozen=True)
class SandboxLimits:
    """What a sandboxed kernel (with every process it starts) may take. ``max_processes``
    binds only for a user other than root: Linux never applies RLIMIT_NPROC to uid 0."""

    memory_mb: int  # address space of each process (RLIMIT_AS): over it, MemoryError
    max_processes: int  # RLIMIT_NPROC
    max_file_mb: int  # the largest file a process may write (RLIMIT_FSIZE): over it, EFBIG

    def argv(self, kernel_argv: list[str]) -> list[str]:
        """``kernel_argv`` started under these limits."""
        mib = 1 << 20
        values = (self.memory_mb * mib, self.max_processes, self.max_file_mb * mib)
        return [sys.executable, "-I", "-S", "-c", _LIMITED_EXEC, *map(str, values), *kernel_argv]


@cache
def bwrap_path() -> str | None:
    """The ``bwrap`` executable when it can build a sandbox on this machine, else None (it
    is missing, or user namespaces are not allowed here)."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    probe = [found, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid"]
    probe += ["--proc", "/proc", "--die-with-parent", "true"]
    try:
        ok = subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return found if ok else None


#: What ``bcc run --model replay:DIR`` warns (one line) when the recorded code will run
#: without the sandbox (a live model is refused instead: ``choose``).
UNSANDBOXED = (
    "bubblewrap cannot run here, so the recorded code runs unsandboxed, with your permissions "
    f"(fix: {INSTALL_HINT}, or pass --no-sandbox to run so without this warning)"
)


def choose(requested: bool | None, model: str, remote: bool = False) -> bool:
    """Whether a run's kernels are sandboxed: as ``--sandbox`` / ``--no-sandbox`` say, else
    on for a ``model`` (not for the offline analyst, whose code is ours). Never for a gateway's
    kernels, which run elsewhere. Raises UsageError (exit 2) for ``--sandbox`` where
    bubblewrap cannot run, or with a gateway, and for a model's run where bubblewrap cannot
    run and ``--no-sandbox`` was not given; a ``replay:`` run's recorded code then runs
    unsandboxed (the caller warns: ``UNSANDBOXED``)."""
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
    if model == "offline":
        return False
    if bwrap_path() is None and not model.startswith("replay:"):
        raise UsageError(
            "a model's code runs only in the bubblewrap sandbox, and bubblewrap cannot run here",
            remedy=f"{INSTALL_HINT}, or pass --no-sandbox to run it unconfined",
        )
    return bwrap_path() is not None


def require_for_resume(sandboxed: bool) -> None:
    """Refuse (UsageError, exit 2) to go on with a sandboxed run where bubblewrap is gone:
    its kernels never run unconfined."""
    if sandboxed and bwrap_path() is None:
        raise UsageError(
            "this run's kernels run in the bubblewrap sandbox, and bubblewrap cannot run here",
            remedy=INSTALL_HINT,
        )


def sandbox_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` a sandboxed kernel (and ``bwrap``) may see: ``ALLOWED_ENV``."""
    return {k: v for k, v in env.items() if any(fnmatch.fnmatchcase(k, p) for p in ALLOWED_ENV)}


def _readable() -> list[Path]:
    """What the kernel must still read: the interpreter, the environment, sys.path and this
    package (an editable install lives outside site-packages)."""
    package = Path(__file__).resolve().parents[2]
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent}
    paths |= {Path(p) for p in sys.path if p} | {package}
    return sorted(p.resolve() for p in paths if p.exists())


@dataclass(frozen=True)
class Sandbox:
    """Confines kernels working in ``root`` (cwd; read-only but ``root/outputs``, made if
    missing); ``sockets`` is the directory of their connection file and ipc sockets (bound
    writable), ``spec_dir`` where their kernel spec is written (out of their sight)."""

    root: Path
    sockets: Path
    spec_dir: Path
    limits: SandboxLimits

    def argv(self, kernel_argv: list[str], env: Mapping[str, str]) -> list[str]:
        """``kernel_argv`` in the sandbox, with ``env`` as its whole environment."""
        bwrap = bwrap_path()
        if bwrap is None:
            raise OSError(f"bubblewrap cannot run here: {INSTALL_HINT}")
        home, runtime = Path.home(), self.sockets.parent
        cmd = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"]
        cmd += ["--hostname", "sandbox", "--new-session", "--die-with-parent"]
        cmd += ["--cap-drop", "ALL", "--clearenv"]
        for name, value in env.items():
            cmd += ["--setenv", name, value]
        cmd += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        cmd += ["--tmpfs", str(home)]
        if not (runtime.is_relative_to(home) or runtime.is_relative_to("/tmp")):
            cmd += ["--tmpfs", str(runtime)]  # other kernels' connection files and specs
        for path in _readable():
            if path.is_relative_to(home) or path.is_relative_to("/tmp"):
                cmd += ["--ro-bind", str(path), str(path)]
        cmd += ["--ro-bind", str(self.root), str(self.root)]  # its cwd: bcc's files
        for path in (self.root / "outputs", self.sockets):  # the only places it writes
            cmd += ["--bind", str(path), str(path)]
        cmd += ["--remount-ro", str(home)]  # the hidden home is empty and read-only
        cmd += ["--chdir", str(self.root), "--"]
        return cmd + self.limits.argv(kernel_argv)

    def spec_manager(self, kernel_name: str, env: Mapping[str, str]) -> KernelSpecManager:
        """A kernel spec manager that knows one spec, ``SPEC_NAME``: ``kernel_name``'s spec
        run inside the sandbox, with the allowed part of ``env`` (``sandbox_env``), its own
        variables and the hidden home; written in ``spec_dir``."""
        base = KernelSpecManager().get_kernel_spec(kernel_name)
        argv = [sys.executable if a in ("python", "python3") else a for a in base.argv]
        # glibc reserves 64 MiB of address space per thread's arena, which RLIMIT_AS counts:
        # with 2 a kernel with pandas and scikit-learn peaks at ~0.7 GB instead of ~1.4 GB
        inside = {"MALLOC_ARENA_MAX": "2", **sandbox_env(env), **base.env}
        inside["HOME"] = str(Path.home())
        # the home is read-only inside: IPython and matplotlib keep their files in /tmp
        inside |= {"IPYTHONDIR": "/tmp/.ipython", "MPLCONFIGDIR": "/tmp/.mpl"}
        (self.root / "outputs").mkdir(exist_ok=True)
        folder = self.spec_dir / "kernels" / SPEC_NAME
        folder.mkdir(parents=True, exist_ok=True)
        spec = {
            "argv": self.argv(argv, inside),
            "display_name": f"{base.display_name} (sandboxed)",
            "language": base.language,
            "interrupt_mode": "message",
            "env": {},  # bwrap's own environment is the allowed one too (``sandboxed.py``)
            "metadata": base.metadata,
        }
        (folder / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
        return KernelSpecManager(kernel_dirs=[str(self.spec_dir / "kernels")])
