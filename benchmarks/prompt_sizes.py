"""Rendered prompt sizes (issue: real models). Prints, measured in one offline run of the
penguins example: for each of the six prompt kinds, the size in characters (system + user) of
its first rendering and the largest over the whole run, and its bound (the template's length
plus the size bound of each field it uses; see ``notebook_bcc.prompts.BOUNDS``).

Usage: .venv/bin/python benchmarks/prompt_sizes.py
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from notebook_bcc.prompts import BOUNDS, template_path  # noqa: E402
from tests.conftest import run_bcc  # noqa: E402


def prompt_sizes(run: Path) -> dict[str, list[int]]:
    """Rendered size (system + user) of every prompt of a run, per event, in log order."""
    sizes: dict[str, list[int]] = defaultdict(list)
    for path in sorted((run / "logs").glob("[0-9]*_*.xml")):
        root = etree.parse(str(path)).getroot()
        request = root.find("request")
        if request is not None:
            sizes[root.get("event")].append(sum(len(p.text or "") for p in request.iter("prompt")))
    return sizes


def bound(event: str) -> int:
    text = template_path(event).read_text(encoding="utf-8")
    fields = set(re.findall(r"\$(\w+)", text))
    return len(text) + sum(BOUNDS.get(name, 500) for name in fields)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "penguins"
        example = ROOT / "examples" / "penguins"
        proc = run_bcc(
            "run", str(example / "problem.md"), str(example / "penguins.csv"),
            "--out", str(run), "--quiet", "--no-verify",
        )  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"bcc run failed ({proc.returncode}): {proc.stderr[-2000:]}")
        sizes = prompt_sizes(run)
    print(f"{'prompt':<16} {'count':>5} {'first':>7} {'largest':>8} {'bound':>8}")
    for event, values in sizes.items():
        print(f"{event:<16} {len(values):>5} {values[0]:>7,} {max(values):>8,} {bound(event):>8,}")


if __name__ == "__main__":
    main()
