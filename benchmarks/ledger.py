"""Ledger and context growth (issue: the variable ledger). Prints, measured in one run:

1. with 500 variables in the kernel (one a 1,000,000-row DataFrame): one silent inspection's
   time over a trivial cell's round trip (target <= 5);
2. an action-generator prompt over those 500 variables: its size over the one prompt budget
   (target <= 1.0; issue 11 replaced the ledger's own 3,000-character bound by that budget),
   the ledger section's size, and how many of the 500 names it still shows (target: all);
3. over a full offline run of the longest shared dataset: for each prompt kind, the largest
   rendered prompt over the median (history grows with the run; reported, no target) and the
   largest prompt over the budget (target <= 1.0);
4. the `bcc` process's peak RSS (not the kernel's) on a 1,000-row versus a 1,000,000-row CSV
   of the same columns (target ratio <= 1.2).

Usage: .venv/bin/python benchmarks/ledger.py
"""

from __future__ import annotations

import csv
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
sys.path.insert(0, str(ROOT))

from benchmarks.prompt_sizes import prompt_sizes  # noqa: E402
from notebook_bcc.contract.observation import Observation  # noqa: E402
from notebook_bcc.contract.prompts import PROMPT_BUDGET_CHARS, render  # noqa: E402
from notebook_bcc.fsm import Event  # noqa: E402
from notebook_bcc.kernel.session import KernelSession  # noqa: E402
from notebook_bcc.rundir.ledger import VariableLedger  # noqa: E402
from tests.conftest import problem_text  # noqa: E402


def inspection_ratio(tmp: Path) -> tuple[float, tuple[int, int, int, int]]:
    with KernelSession(tmp, cell_timeout=600) as kernel:
        kernel.run_cell(
            "import numpy as np, pandas as pd\n"
            "big = pd.DataFrame({'a': np.arange(1_000_000), 'b': np.random.rand(1_000_000),"
            " 'c': np.random.choice(['x', 'y', 'z'], 1_000_000)})\n"
            "for i in range(499):\n"
            "    globals()[f'v{i:03d}'] = {'i': i, 'name': f'item {i}'} if i % 2 else list(range(i))"
        )
        trivial = []
        for _ in range(5):
            start = time.perf_counter()
            kernel.run_cell("1")
            trivial.append(time.perf_counter() - start)
        inspections = []
        infos = ()
        for _ in range(3):
            start = time.perf_counter()
            infos = kernel.inspect()
            inspections.append(time.perf_counter() - start)
    ledger = VariableLedger()
    ledger.record_namespace(infos, "bench")
    print(f"variables inspected: {len(infos)}")
    obs = Observation(
        event=Event.COMPLETE_ACTION,
        problem="Predict `a`.",
        files=("assets/d.csv",),
        location="s/t/b",
        iteration=1,
        ledger_view=ledger.prompt_view(["big"]),
    )
    prompt = render(obs)
    user = prompt.user
    section = user[user.index("## Variables in the kernel") : user.index("## Preview")]
    shown = sum(1 for i in infos if i.name in section)
    return statistics.median(inspections) / statistics.median(trivial), (
        prompt.size,
        len(section),
        shown,
        len(infos),
    )


def longest_dataset() -> dict[str, str] | None:
    if not (SHARED / "manifest.csv").exists():
        return None
    rows = list(csv.DictReader((SHARED / "manifest.csv").read_text(encoding="utf-8").splitlines()))
    return max(rows, key=lambda r: int(r["rows"]))


def run_bcc(problem: Path, data: Path, out: Path) -> int:
    """Run bcc under /usr/bin/time-like accounting; return the process's peak RSS in kB."""
    code = (
        "import resource, runpy, sys\n"
        "sys.argv = ['bcc', 'run', sys.argv[1], sys.argv[2], '--out', sys.argv[3], '--quiet', '--no-verify']\n"
        "try:\n"
        "    runpy.run_module('notebook_bcc', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('PEAK_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(problem), str(data), str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    peak = [ln for ln in proc.stderr.splitlines() if ln.startswith("PEAK_KB")]
    if not peak:
        raise SystemExit(f"bcc failed: {proc.stderr[-2000:]}")
    return int(peak[-1].split()[1])


def prompt_growth(run: Path) -> dict[str, float]:
    return {event: max(v) / statistics.median(v) for event, v in prompt_sizes(run).items()}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        ratio, (size, section, shown, total) = inspection_ratio(tmp)
        print(f"1. inspection / trivial cell = {ratio:.2f}  (target <= 5)")
        print(
            f"2. prompt with {total} variables: {size:,} chars = {size / PROMPT_BUDGET_CHARS:.2f} "
            f"of the budget (target <= 1.0); ledger section {section:,} chars; "
            f"names shown {shown}/{total} (target: all)"
        )
        row = longest_dataset()
        if row:
            (tmp / "p.md").write_text(problem_text(row))
            run_bcc(tmp / "p.md", SHARED / row["file"], tmp / "long")
            growth = prompt_growth(tmp / "long")
            worst = max(growth.values())
            largest = max(max(v) for v in prompt_sizes(tmp / "long").values())
            print(f"3. largest/median prompt per kind on {row['file']} ({row['rows']} rows):")
            for event, value in sorted(growth.items()):
                print(f"     {event:<16} {value:.2f}")
            print(f"   worst = {worst:.2f}  (reported; history grows with the run)")
            print(
                f"   largest prompt {largest:,} chars = {largest / PROMPT_BUDGET_CHARS:.2f} of the "
                "budget  (target <= 1.0)"
            )
        else:
            print("3. skipped: ../shared/datasets is absent")
        (tmp / "q.md").write_text("---\ntarget: y\ntask: regression\n---\nPredict `y`.\n")
        for n in (1_000, 1_000_000):
            with open(tmp / f"d{n}.csv", "w") as fh:
                fh.write("a,b,c,y\n")
                for i in range(n):
                    fh.write(
                        f"{i % 97},{(i * 7) % 89},{'pq'[i % 2]},{(i % 97) * 0.5 + (i * 7) % 89}\n"
                    )
        small = run_bcc(tmp / "q.md", tmp / "d1000.csv", tmp / "s")
        large = run_bcc(tmp / "q.md", tmp / "d1000000.csv", tmp / "l")
        print(
            f"4. bcc peak RSS: {small / 1024:.0f} MB (1,000 rows) vs {large / 1024:.0f} MB "
            f"(1,000,000 rows): ratio {large / small:.2f}  (target <= 1.2)"
        )


if __name__ == "__main__":
    main()
