"""Behaviour unchanged: the same runs by this checkout and by a baseline commit, compared.

For each case, ``bcc`` of the baseline (a ``git worktree`` of ``--baseline``, run with this
checkout's environment) and ``bcc`` of this checkout run the same command; the notebooks' code
cells and the variable ledgers (name, status, kind, created_by) must be byte-identical. Cases:
the three examples and five ``../shared/datasets`` tables of different kinds offline with
``--max-alternatives 1`` (the offline analyst's fork rule changed on purpose in issue 40: one
behavior per step leaves it out of the comparison), an offline fork (``--max-alternatives 2``
on a table whose problem asks for one, ``fork: yes``), and ``bcc replay`` of the recorded
real-model runs in ``benchmarks/fixtures``. Prints one line per case and exits 1 when any differs.

Usage: .venv/bin/python benchmarks/behaviour_unchanged.py --baseline REV [--only NAME ...]
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.checkouts import ROOT, bcc_of, checkout
from tests.conftest import manifest, problem_text

SHARED = ROOT.parent / "shared" / "datasets"
TABLES = ["rd_msleep.csv", "dabench_titanic.csv", "sm_co2.csv", "rd_survey.csv", "vega_cars.csv"]
FORK_TABLE = "dabench_weather_train.csv"  # asked to fork (`fork: yes`): forks in both


def _problem(tmp: Path, name: str) -> Path:
    rows = {r["file"]: r for r in manifest()}
    path = tmp / f"{Path(name).stem}.md"
    text = problem_text(rows[name])
    if name == FORK_TABLE:  # the offline analyst forks when asked (it once forked by size)
        text = text.replace("---\n", "---\nfork: yes\n", 1)
    path.write_text(text)
    return path


def cases(tmp: Path) -> dict[str, list[str]]:
    """name -> the arguments of ``bcc`` after the command (``--out`` is added)."""
    found: dict[str, list[str]] = {}
    one = ["--max-alternatives", "1", "--no-verify", "--quiet"]
    for example in sorted((ROOT / "examples").glob("*/problem.md")):
        data = sorted(str(p) for p in example.parent.glob("*.csv"))
        found[f"example {example.parent.name}"] = ["run", str(example), *data, *one]
    if (SHARED / "manifest.csv").exists():
        for name in TABLES:
            found[f"table {name}"] = ["run", str(_problem(tmp, name)), str(SHARED / name), *one]
        fork = ["--max-alternatives", "2", "--no-verify", "--quiet"]
        found[f"fork {FORK_TABLE}"] = [
            "run", str(_problem(tmp, FORK_TABLE)), str(SHARED / FORK_TABLE), *fork
        ]  # fmt: skip
    for recorded in sorted((ROOT / "benchmarks" / "fixtures").glob("*/config.json")):
        found[f"replay {recorded.parent.name}"] = ["replay", str(recorded.parent), "--quiet"]
    return found


def fingerprint(run: Path) -> tuple[list[str], list[tuple[str, str, str, str]]]:
    """The code cells and the ledger (name, status, kind, created_by) of a run."""
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    ledger = json.loads((run / "state.json").read_text())["ledger"]
    return code, [(v["name"], v["status"], v["kind"], v["created_by"]) for v in ledger]


def _first_difference(cells_b, cells_a, ledger_b, ledger_a) -> str:
    """Where the two runs part: the first cell (a unified diff) or ledger row that differs."""
    for i, (b, a) in enumerate(zip(cells_b, cells_a, strict=False)):
        if b != a:
            diff = difflib.unified_diff(
                b.splitlines(), a.splitlines(), "before", "after", lineterm=""
            )
            return f"  code cell {i}:\n" + "\n".join(f"    {line}" for line in list(diff)[2:14])
    for b, a in zip(ledger_b, ledger_a, strict=False):
        if b != a:
            return f"  ledger: before {b}, after {a}"
    return "  one run has more cells or variables than the other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the commit to compare against")
    parser.add_argument("--only", nargs="*", help="case names containing one of these")
    args = parser.parse_args()
    differ = 0
    with tempfile.TemporaryDirectory() as tmp, checkout(args.baseline, Path(tmp)) as before:
        for n, (name, argv) in enumerate(cases(Path(tmp)).items()):
            if args.only and not any(o in name for o in args.only):
                continue
            prints = []
            for label, code in (("before", before), ("after", ROOT)):
                out = Path(tmp) / f"{n}-{label}"
                proc = bcc_of(code, [*argv, "--out", str(out)])
                if proc.returncode not in (0, 9, 10):
                    print(f"{name}: {label} exited {proc.returncode}: {proc.stderr[-300:]}")
                    prints.append(None)
                    continue
                prints.append(fingerprint(out))
            (cells_b, ledger_b), (cells_a, ledger_a) = (p or ([], []) for p in prints)
            same = None not in prints and cells_b == cells_a and ledger_b == ledger_a
            differ += not same
            print(
                f"{name}: {'identical' if same else 'DIFFERENT'} "
                f"({len(cells_a)} code cells, {len(ledger_a)} variables; before "
                f"{len(cells_b)}, {len(ledger_b)})"
            )
            if not same and None not in prints:
                print(_first_difference(cells_b, cells_a, ledger_b, ledger_a))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
