"""Orchestration overhead: `bcc run` wall time / re-executing its notebook with nbclient.

Measured in one run on the penguins example (offline analyst):

  A  `bcc run --no-verify`   the orchestrated run: agents, parsing, logs, checkpoints, cells
  B  `bcc run`               the same plus the final verification (a second, full execution)
  C  nbclient re-execution of the notebook A produced, in a fresh kernel

Prints A/C (target <= 1.5) and B/C for reference. Then the same run A with the kernel in the
bubblewrap sandbox (S) and on a Jupyter Kernel Gateway started on 127.0.0.1 (G), each as a
ratio to A (target <= 1.15); a kind that cannot run here (no bubblewrap) is said so.
Usage: .venv/bin/python benchmarks/overhead.py [problem.md data.csv]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import run_bcc  # noqa: E402


def timed_run(problem: Path, data: Path, out: Path, *extra: str) -> float:
    start = time.perf_counter()
    proc = run_bcc("run", str(problem), str(data), "--out", str(out), "--quiet", *extra)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bcc run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed


def reexecute(run_dir: Path) -> float:
    nb = nbformat.read(run_dir / "notebook.ipynb", as_version=4)
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(run_dir)}}
    )
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def kernel_kinds(problem: Path, data: Path, folder: Path, local: float) -> None:
    """Sandboxed and gateway kernels against the local run ``local`` (seconds)."""
    from notebook_bcc.kernel.sandbox import bwrap_path
    from tests.integration.test_gateway import KernelGateway

    if bwrap_path() is None:
        print("sandboxed                S = not measured: bubblewrap cannot run here")
    else:
        sandboxed = timed_run(problem, data, folder / "s", "--no-verify", "--sandbox")
        print(f"bcc run --sandbox        S = {sandboxed:7.2f} s   S/A = {sandboxed / local:.2f}")
    (folder / "gw").mkdir()
    gateway = KernelGateway(folder / "gw")
    gateway.start()
    try:
        remote = timed_run(
            problem, data, folder / "g", "--no-verify", "--kernel-gateway", gateway.url
        )
    finally:
        gateway.kill()
    print(f"bcc run --kernel-gateway G = {remote:7.2f} s   G/A = {remote / local:.2f}")
    print("target: S/A and G/A <= 1.15")


def problem_and_data(args: list[str]) -> tuple[Path, Path]:
    """``[problem.md data.csv]`` from the command line, else the penguins example."""
    example = ROOT / "examples" / "penguins"
    problem = Path(args[0]) if args else example / "problem.md"
    data = Path(args[1]) if len(args) > 1 else example / "penguins.csv"
    return problem, data


def main() -> None:
    problem, data = problem_and_data(sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        a = timed_run(problem, data, Path(tmp) / "a", "--no-verify")
        b = timed_run(problem, data, Path(tmp) / "b")
        c = reexecute(Path(tmp) / "a")
        print(f"bcc run --no-verify      A = {a:7.2f} s")
        print(f"bcc run (with verify)    B = {b:7.2f} s")
        print(f"nbclient re-execution    C = {c:7.2f} s")
        print(f"overhead ratio A/C = {a / c:.2f}  (target <= 1.5)")
        print(f"with verification B/C = {b / c:.2f}")
        kernel_kinds(problem, data, Path(tmp), a)


if __name__ == "__main__":
    main()
