"""Orchestration overhead: `bcc run` wall time / re-executing its notebook with nbclient.

Measured in one run (offline analyst), each kind timed ROUNDS times, interleaved, and the
median taken (single timings on a 2-core machine vary by 10-20%):

  A  `bcc run --no-verify`   the orchestrated run: agents, parsing, logs, checkpoints, cells
  B  `bcc run`               the same plus verification (a shadow kernel verifying as it goes)
  C  nbclient re-execution of the notebook A produced, in a fresh kernel
  S  A with the kernel in the bubblewrap sandbox (not measured where bubblewrap cannot run)
  G  A with the kernel on a Jupyter Kernel Gateway started on 127.0.0.1

Targets: A/C <= 1.25 and B/C <= 1.6 (issue 16); S/A and G/A <= 1.15 (issue 15).
Usage: .venv/bin/python benchmarks/overhead.py [problem.md data.csv] [--rounds N] [--only ABC]
(``--only ABC``: just the two ratios of issue 16, without the sandboxed and gateway runs)
"""

from __future__ import annotations

import statistics
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


def problem_and_data(args: list[str]) -> tuple[Path, Path]:
    """``[problem.md data.csv]`` from the command line, else the penguins example."""
    example = ROOT / "examples" / "penguins"
    problem = Path(args[0]) if args else example / "problem.md"
    data = Path(args[1]) if len(args) > 1 else example / "penguins.csv"
    return problem, data


def main() -> None:
    args = sys.argv[1:]
    rounds = 3
    if "--rounds" in args:
        at = args.index("--rounds")
        rounds = int(args[at + 1])
        del args[at : at + 2]
    kinds = "ABCSG"
    if "--only" in args:
        at = args.index("--only")
        kinds = args[at + 1].upper()
        del args[at : at + 2]
    problem, data = problem_and_data(args)
    from notebook_bcc.kernel.sandbox import bwrap_path
    from tests.integration.test_gateway import KernelGateway

    sandbox = "S" in kinds and bwrap_path() is not None
    times: dict[str, list[float]] = {k: [] for k in "ABCSG"}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "gw").mkdir()
        gateway = KernelGateway(folder / "gw")
        if "G" in kinds:
            gateway.start()
        try:
            for i in range(rounds):
                times["A"].append(timed_run(problem, data, folder / f"a{i}", "--no-verify"))
                times["B"].append(timed_run(problem, data, folder / f"b{i}"))
                times["C"].append(reexecute(folder / f"a{i}"))
                if sandbox:
                    times["S"].append(
                        timed_run(problem, data, folder / f"s{i}", "--no-verify", "--sandbox")
                    )
                if "G" in kinds:
                    url = gateway.url
                    times["G"].append(
                        timed_run(
                            problem, data, folder / f"g{i}", "--no-verify", "--kernel-gateway", url
                        )
                    )
        finally:
            gateway.kill()
    med = {k: statistics.median(v) for k, v in times.items() if v}
    for key, label in [
        ("A", "bcc run --no-verify     "),
        ("B", "bcc run (with verify)   "),
        ("C", "nbclient re-execution   "),
        ("S", "bcc run --sandbox       "),
        ("G", "bcc run --kernel-gateway"),
    ]:
        if key in med:
            runs = " ".join(f"{t:.2f}" for t in times[key])
            print(f"{label} {key} = {med[key]:6.2f} s median of {rounds} ({runs})")
    print(f"overhead ratio A/C = {med['A'] / med['C']:.2f}  (target <= 1.25)")
    print(f"with verification B/C = {med['B'] / med['C']:.2f}  (target <= 1.6)")
    if "S" in med:
        print(f"sandboxed S/A = {med['S'] / med['A']:.2f}  (target <= 1.15)")
    elif "S" in kinds:
        print("sandboxed S/A = not measured: bubblewrap cannot run here")
    if "G" in med:
        print(f"gateway G/A = {med['G'] / med['A']:.2f}  (target <= 1.15)")


if __name__ == "__main__":
    main()
