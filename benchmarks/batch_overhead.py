"""What ``bcc batch`` costs over running the same runs by hand: eight offline runs through
``bcc batch --jobs 2`` against the same eight started two at a time by a shell loop
(``bcc run a & bcc run b & wait``), in one invocation, as a ratio (target <= 1.10).

    python benchmarks/batch_overhead.py [--runs 8]

The tables are small (60 rows, one question), so the figure is the batch's own overhead
(its process, the manifest, the per-run bookkeeping and results) on top of eight whole
``bcc run`` processes with their kernels and verification.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BCC = [sys.executable, "-m", "notebook_bcc"]


def _inputs(tmp: Path, n: int) -> list[tuple[Path, Path]]:
    made = []
    for k in range(n):
        rows = ["light,water,soil,height"]
        rows += [
            f"{(i + k) % 7},{(i * 3) % 11},{'ab'[i % 2]},{i % 7 + 5 * (i % 2)}" for i in range(60)
        ]
        data, problem = tmp / f"plants{k}.csv", tmp / f"p{k}.md"
        data.write_text("\n".join(rows) + "\n")
        problem.write_text(
            f"---\ntitle: Plants {k}\n---\nWhich `soil` has the highest total `height`?\n"
        )
        made.append((problem, data))
    return made


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        pairs = _inputs(tmp, args.runs)
        manifest = tmp / "manifest.csv"
        manifest.write_text(
            "id,problem,data\n" + "".join(f"r{k},{p},{d}\n" for k, (p, d) in enumerate(pairs))
        )
        started = time.monotonic()
        batch = subprocess.run(
            [*BCC, "batch", str(manifest), "--jobs", "2", "--out", str(tmp / "batch"), "--quiet"],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        batch_s = time.monotonic() - started
        if batch.returncode != 0:
            print(batch.stdout, batch.stderr)
            return 1
        lines = []
        for k in range(0, len(pairs), 2):
            runs = [f"{sys.executable} -m notebook_bcc run {p} {d} --out {tmp / f'loop{j}'} --quiet &"
                    for j, (p, d) in enumerate(pairs[k : k + 2], k)]  # fmt: skip
            lines += [*runs, "wait"]
        started = time.monotonic()
        loop = subprocess.run(
            ["bash", "-c", "\n".join(lines)], cwd=ROOT, stdout=subprocess.DEVNULL, check=False
        )
        loop_s = time.monotonic() - started
        if loop.returncode != 0:
            return 1
    print(f"{args.runs} offline runs, two at a time")
    print(f"  bcc batch --jobs 2: {batch_s:.1f} s")
    print(f"  shell loop, pairs:  {loop_s:.1f} s")
    print(f"  ratio batch / loop: {batch_s / loop_s:.2f} (target <= 1.10)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
