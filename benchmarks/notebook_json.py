"""What ``rundir/notebook_json.py`` saves: a run's notebook written once per cell as it grows
(what ``Notebook.save`` does after every transition), by ``nbformat.writes`` and by
``NotebookJson``, in one invocation; prints both totals, their ratio, and the saving as a
share of the run's wall time when given.

    python benchmarks/notebook_json.py [NOTEBOOK.ipynb] [--run-seconds S]

Without a notebook, the penguins example's own (``bcc run`` it into /tmp first) or, failing
that, 60 synthetic cells with a 40 KB figure every fifth.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import nbformat

from notebook_bcc.rundir.notebook_json import NotebookJson


def _synthetic() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for i in range(60):
        cell = nbformat.v4.new_code_cell(f"x_{i} = {i}\nprint(x_{i})\n" * 5)
        cell.outputs = [nbformat.v4.new_output("stream", text=f"{i}\n" * 20)]
        if i % 5 == 0:
            png = "iVBORw0KGgo" * 4000
            cell.outputs.append(nbformat.v4.new_output("display_data", data={"image/png": png}))
        nb.cells.append(cell)
    return nb


def _saves(nb: nbformat.NotebookNode, write: object) -> float:
    """Seconds to write the notebook after each of its cells is added."""
    growing = copy.deepcopy(nb)
    cells, growing.cells = growing.cells, []
    started = time.perf_counter()
    for cell in cells:
        growing.cells.append(cell)
        write(growing)  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("notebook", nargs="?", type=Path, default=Path("/tmp/k-pen/notebook.ipynb"))
    parser.add_argument("--run-seconds", type=float, default=None)
    args = parser.parse_args()
    if args.notebook.exists():
        nb, what = nbformat.read(args.notebook, as_version=4), str(args.notebook)
    else:
        nb, what = _synthetic(), "60 synthetic cells"
    assert NotebookJson()(nb) == nbformat.writes(nb)
    plain = min(_saves(nb, nbformat.writes) for _ in range(3))
    cached = min(_saves(nb, NotebookJson()) for _ in range(3))
    print(f"{what}: {len(nb.cells)} cells, one save per cell added")
    print(f"nbformat.writes {plain * 1000:.0f} ms, NotebookJson {cached * 1000:.0f} ms")
    print(
        f"ratio nbformat/NotebookJson: {plain / cached:.2f}x, saved {(plain - cached) * 1000:.0f} ms"
    )
    if args.run_seconds:
        print(f"saved per run: {(plain - cached) / args.run_seconds:.2%} of {args.run_seconds:g} s")


if __name__ == "__main__":
    main()
