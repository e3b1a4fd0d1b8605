"""Fork wall time (issue 30): a fork's branches at once against the same branches one after
another.

The offline analyst forks its model comparison by model family (a linear model, gradient
boosting; here asked by front matter `fork: yes`, as the table is small), each branch in a
kernel of its own that first replays the notebook so far. The same run is made ROUNDS times
each way (``RunConfig.fork_at_once``), interleaved, and the fork's wall time read from its
log: the JOIN's duration (from the arranger's reply to the join) less the FORK's (the
arranger's own time). Printed: min and median per way, and the
ratio of the medians (target <= 0.75 on 2 cores).

Usage: .venv/bin/python benchmarks/fork_wall.py [problem.md data.csv] [--rounds N]
(default: examples/diabetes)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from notebook_bcc.config import RunConfig  # noqa: E402
from notebook_bcc.workflow.session import create_run  # noqa: E402


def fork_seconds(problem: Path, data: Path, out: Path, *, at_once: bool) -> float:
    """One offline run; the wall time of its (single) fork."""
    config = RunConfig(model="offline", fork_at_once=at_once)
    result = create_run(config, problem, [data], out=out).run()
    if result.exit_code != 0:
        raise SystemExit(f"the run failed ({result.exit_code}): {result.message}")
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    moves = {e["event"]: e for e in events if e.get("type") == "transition"}
    if "JOIN" not in moves:
        raise SystemExit("the run did not fork")
    return (moves["JOIN"]["duration_ms"] - moves["FORK"]["duration_ms"]) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    example = ROOT / "examples" / "diabetes"
    problem, data = args.inputs or (example / "problem.md", example / "diabetes.csv")
    times: dict[str, list[float]] = {"at once": [], "one after another": []}
    with tempfile.TemporaryDirectory() as tmp:
        # the front matter asks for the fork the offline analyst makes only for large tables
        text = problem.read_text()
        asked = "---\nfork: yes\n" + (text[4:] if text.startswith("---\n") else "---\n" + text)
        problem = Path(tmp) / "problem.md"
        problem.write_text(asked)
        for n in range(args.rounds):
            for label, at_once in (("at once", True), ("one after another", False)):
                out = Path(tmp) / f"{n}-{at_once}"
                times[label].append(fork_seconds(problem, data, out, at_once=at_once))
    print(f"fork wall time, {args.rounds} runs each way, {os.cpu_count()} cores ({problem}):")
    for label, values in times.items():
        print(f"  {label:<18} min {min(values):6.2f} s  median {statistics.median(values):6.2f} s")
    ratio = statistics.median(times["at once"]) / statistics.median(times["one after another"])
    print(f"  ratio at once / one after another: {ratio:.2f} (target <= 0.75)")


if __name__ == "__main__":
    main()
