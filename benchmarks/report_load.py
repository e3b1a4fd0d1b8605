"""report.html stays usable on a long run: an offline run with modelling (penguins), its
report's size, transitions and figures, and the time headless Chromium takes to load it
(navigation start to the load event, read from the page's own performance timing).

Target: under 2 s for a run of 60 transitions with figures.
Usage: .venv/bin/python benchmarks/report_load.py [problem.md data.csv]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.overhead import problem_and_data  # noqa: E402
from tests.browser import Chromium  # noqa: E402
from tests.conftest import run_bcc  # noqa: E402


def main() -> None:
    problem, data = problem_and_data(sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        proc = run_bcc("run", str(problem), str(data), "--out", str(run), "--quiet")
        if proc.returncode not in (0, 9):
            raise SystemExit(f"bcc run failed ({proc.returncode}): {proc.stderr[-2000:]}")
        report = run / "report.html"
        text = report.read_text(encoding="utf-8")
        with Chromium() as browser:
            browser.open(report.as_uri())
            ms = browser.evaluate(
                "performance.timing.loadEventStart - performance.timing.navigationStart"
            )
            transitions = browser.evaluate("document.querySelectorAll('#timeline details').length")
            figures = browser.evaluate("document.querySelectorAll('img').length")
    print(f"report.html: {len(text) / 1e6:.2f} MB, {transitions} transitions, {figures} figures")
    print(f"load in headless Chromium: {ms / 1000:.2f} s (target < 2 s at 60 transitions)")


if __name__ == "__main__":
    main()
