"""How a notebook reads (issue 17): the offline analyst on the examples and ../shared/datasets.

For each input, `bcc run --no-verify` (offline), then from notebook.ipynb:

  cells        code cells after the parameters and inputs cells (helper cells included)
  median       median code lines per such cell (target <= 25)
  to_data      code lines a reader scrolls past, in cells after the parameters and inputs
               cells, before the first table or figure (display_data / execute_result);
               helper cells are collapsed, so their lines are not counted (target <= 30)
  to_data_all  the same, counting the collapsed helper cells' lines too
  helpers      helper cells, and how many are tagged ``bcc-helpers`` *and* collapsed
  contract     stage or step headings that contain "Artifacts:" or "Acceptance:" (target 0)

Usage: .venv/bin/python benchmarks/notebook_readability.py [--only NAME ...] [--keep DIR]
       .venv/bin/python benchmarks/notebook_readability.py --notebook PATH ...  (no runs)
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
sys.path.insert(0, str(ROOT))
from tests.conftest import problem_text, run_bcc  # noqa: E402

HELPER_TAG = "bcc-helpers"
CONTRACT_WORDS = ("Artifacts:", "Acceptance:")


@dataclass(frozen=True)
class Readability:
    name: str
    cells: int
    lines: int
    median: float
    to_data: int | None
    to_data_all: int | None
    helpers: int
    helpers_collapsed: int
    contract: int
    failed_behaviors: int | None = None


def _lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def _is_helper(cell: nbformat.NotebookNode) -> bool:
    return HELPER_TAG in cell.metadata.get("tags", [])


def measure(name: str, path: Path) -> Readability:
    nb = nbformat.read(path, as_version=4)
    roles = [c.metadata.get("bcc", {}).get("role") for c in nb.cells]
    start = max((i for i, r in enumerate(roles) if r in ("parameters", "inputs")), default=-1)
    code = [c for c in nb.cells[start + 1 :] if c.cell_type == "code"]
    to_data = to_data_all = None
    seen = seen_all = 0
    for cell in code:
        if any(o.output_type in ("display_data", "execute_result") for o in cell.outputs):
            to_data, to_data_all = seen + _lines(cell.source), seen_all + _lines(cell.source)
            break
        seen_all += _lines(cell.source)
        if not _is_helper(cell):
            seen += _lines(cell.source)
    helpers = [c for c in code if _is_helper(c)]
    headings = [
        c.source
        for c in nb.cells
        if c.cell_type == "markdown" and c.metadata.get("bcc", {}).get("role") in ("stage", "step")
    ]
    counts = [_lines(c.source) for c in code]
    return Readability(
        name=name,
        cells=len(code),
        lines=sum(counts),
        median=statistics.median(counts) if counts else 0.0,
        to_data=to_data,
        to_data_all=to_data_all,
        helpers=len(helpers),
        helpers_collapsed=sum(
            1 for c in helpers if c.metadata.get("jupyter", {}).get("source_hidden")
        ),
        contract=sum(1 for h in headings if any(w in h for w in CONTRACT_WORDS)),
    )


def inputs(only: list[str]) -> list[tuple[str, Path, Path]]:
    """(name, problem.md, data) for each example and each table of ../shared/datasets."""
    found = [
        (d.name, d / "problem.md", next(d.glob("*.csv")))
        for d in sorted((ROOT / "examples").iterdir())
        if (d / "problem.md").exists()
    ]
    if (SHARED / "manifest.csv").exists():
        problems = Path(tempfile.mkdtemp(prefix="bcc-readability-"))
        with open(SHARED / "manifest.csv", newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                problem = problems / f"{Path(row['file']).stem}.md"
                problem.write_text(problem_text(row), encoding="utf-8")
                found.append((Path(row["file"]).stem, problem, SHARED / row["file"]))
    return [item for item in found if not only or item[0] in only]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--keep", type=Path, help="keep the run directories here")
    parser.add_argument("--notebook", nargs="*", type=Path, help="measure these notebooks only")
    args = parser.parse_args()
    results: list[Readability] = []
    if args.notebook:
        results = [measure(p.parent.name, p) for p in args.notebook]
    else:
        out = args.keep or Path(tempfile.mkdtemp(prefix="bcc-readability-runs-"))
        for name, problem, data in inputs(args.only):
            run_dir = out / name
            proc = run_bcc("run", str(problem), str(data), "--out", str(run_dir), "--quiet",
                           "--no-verify")  # fmt: skip
            if not (run_dir / "notebook.ipynb").exists():
                print(f"{name}: no notebook (exit {proc.returncode})", file=sys.stderr)
                continue
            counts = json.loads((run_dir / "summary.json").read_text()).get("counts", {})
            measured = measure(name, run_dir / "notebook.ipynb")
            results.append(
                Readability(
                    **{**measured.__dict__, "failed_behaviors": counts.get("failed_behaviors")}
                )
            )
    print("| input | code cells | code lines | median lines/cell | lines to first data "
          "(helpers collapsed / counted) | helper cells (collapsed) | contract headings | "
          "failed behaviors |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r.name} | {r.cells} | {r.lines} | {r.median:g} | {r.to_data} / "
              f"{r.to_data_all} | {r.helpers} ({r.helpers_collapsed}) | {r.contract} | "
              f"{r.failed_behaviors if r.failed_behaviors is not None else ''} |")  # fmt: skip
    if results:
        medians = [r.median for r in results]
        firsts = [r.to_data for r in results if r.to_data is not None]
        print(
            f"\n{len(results)} notebooks: median lines/cell max {max(medians):g}, median "
            f"{statistics.median(medians):g} (target <= 25); lines to first data max "
            f"{max(firsts) if firsts else 'n/a'} (target <= 30; "
            f"{len(results) - len(firsts)} without any); contract headings "
            f"{sum(r.contract for r in results)} (target 0); helper cells not collapsed "
            f"{sum(r.helpers - r.helpers_collapsed for r in results)}"
        )


if __name__ == "__main__":
    main()
