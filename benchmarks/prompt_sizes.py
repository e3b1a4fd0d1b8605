"""Rendered prompt sizes (issue 11). For each run it measures, prints per prompt kind: how many
prompts, the first, the largest and the total size in characters (system + user, as logged),
then the whole run's total, against the one budget ``PROMPT_BUDGET_CHARS`` (history is trimmed
to it; decision text never is).

Runs measured, each in this process's time:
- ``offline``: the penguins example with the offline analyst (a scripted agent);
- ``replayed trial``: a real-model trial through the relay, kept in
  ``benchmarks/fixtures/penguins_trial`` (replies only), replayed with ``bcc replay``, so its
  prompts are rendered by this release;
- any run directory given as an argument (a recorded trial, say), measured from its logs.

Usage: .venv/bin/python benchmarks/prompt_sizes.py [RUN_DIR ...]
"""

from __future__ import annotations

import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from notebook_bcc.contract.prompts import PROMPT_BUDGET_CHARS  # noqa: E402
from tests.conftest import run_bcc  # noqa: E402

TRIAL = ROOT / "benchmarks" / "fixtures" / "penguins_trial"


def prompt_sizes(run: Path) -> dict[str, list[int]]:
    """Rendered size (system + user) of every prompt of a run, per event, in log order."""
    sizes: dict[str, list[int]] = defaultdict(list)
    parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
    for path in sorted((run / "logs").glob("[0-9]*_*.xml")):
        if path.name.endswith((".attempts.xml", ".abandoned.xml")):
            continue
        root = etree.parse(str(path), parser).getroot()
        request = root.find("request")
        if request is not None:
            sizes[root.get("event")].append(sum(len(p.text or "") for p in request.iter("prompt")))
    return sizes


def omissions(run: Path) -> int:
    """Prompts in which the budget left history out (the renderer says so in the prompt)."""
    marker = b"left out to keep this prompt within its budget"
    return sum(marker in p.read_bytes() for p in (run / "logs").glob("[0-9]*_*.xml"))


def report(name: str, run: Path) -> None:
    sizes = prompt_sizes(run)
    print(f"\n{name}: {run}")
    print(f"{'prompt':<16} {'count':>5} {'first':>8} {'largest':>8} {'total':>10}")
    for event, values in sizes.items():
        print(f"{event:<16} {len(values):>5} {values[0]:>8,} {max(values):>8,} {sum(values):>10,}")
    every = [v for values in sizes.values() for v in values]
    print(
        f"{'whole run':<16} {len(every):>5} {'':>8} {max(every):>8,} {sum(every):>10,}   "
        f"largest/budget {max(every) / PROMPT_BUDGET_CHARS:.2f}; "
        f"prompts with history left out: {omissions(run)}"
    )


def _run(args: list[str], out: Path) -> Path:
    fast = ["--no-verify"] if args[0] == "run" else []
    proc = run_bcc(*args, "--out", str(out), "--quiet", *fast, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"bcc {args[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return out


def main() -> None:
    print(f"budget: {PROMPT_BUDGET_CHARS:,} characters per prompt")
    with tempfile.TemporaryDirectory() as tmp:
        example = ROOT / "examples" / "penguins"
        offline = ["run", str(example / "problem.md"), str(example / "penguins.csv")]
        report("offline (scripted) run", _run(offline, Path(tmp) / "offline"))
        if TRIAL.exists():
            report("replayed real-model trial", _run(["replay", str(TRIAL)], Path(tmp) / "replay"))
    for arg in sys.argv[1:]:
        report("recorded run", Path(arg))


if __name__ == "__main__":
    main()
