"""How much memory bcc holds while a cell prints 200 MB: the orchestrator's peak RSS growth
over the cell (``VmHWM``), as a share of the output's size, for a flushed and a never-flushed
cell (the kernel's BoundedOutStream sends at most about 1 MB per message either way).

The figure depends on how far bcc lags behind the kernel: on an idle machine it reads each
message as it comes; on a loaded one (``taskset -c 0`` with other work) more of the 200
messages wait in the queue. The test (tests/integration/test_kernel.py) asserts the bound on
each message; this prints the figure. Target: under 0.5 (100 MB) on an idle machine.
Usage: .venv/bin/python benchmarks/huge_output.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.test_kernel import _HUGE_CELL, _HUGE_CHILD  # noqa: E402

OUTPUT_KB = 200_000_000 / 1024


def main() -> None:
    for name, cell in (
        ("flushed", _HUGE_CELL),
        ("never flushed", _HUGE_CELL.replace("    sys.stdout.flush()\n", "")),
    ):
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run(
                [sys.executable, "-c", _HUGE_CHILD, tmp, cell],
                capture_output=True, text=True, timeout=300, cwd=ROOT,
            )  # fmt: skip
        if proc.returncode:
            sys.exit(f"{name}: the child failed: {proc.stderr[-500:]}")
        result = json.loads(proc.stdout.splitlines()[-1])
        peak = result["peak_kb"]
        print(
            f"{name:14s} peak RSS growth {peak / 1024:7.1f} MB = {peak / OUTPUT_KB:.2f} of the "
            f"output; {result['messages']} messages, the largest {result['largest_message']:,} chars"
        )


if __name__ == "__main__":
    main()
