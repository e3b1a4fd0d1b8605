"""report.html for a reader (issue 42), in a real headless Chromium, from a scripted model run
through litellm and the loopback server: the answers and findings are rendered text (no
literal ``**`` or ``####``), the notebook's figure is an image in the page, key results are
rounded with the exact value on hover, the model's ``<script>`` and ``<img onerror>`` are text
that never runs, and printing leaves out the process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.browser import Chromium, chromium_path
from tests.fakellm import FakeLLM
from tests.integration.test_llm import MODEL, bcc_here

REQUIRED = os.environ.get("BCC_REQUIRE_BROWSER") == "1"  # .ci/run installs chromium
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(chromium_path() is None and not REQUIRED, reason="chromium not installed"),
]

SUMMARY = (
    "**1. Do districts with smaller classes score higher?**\n\n#### Class size\n\n"
    "The raw slope is -2.28 points per pupil.\n\n<script>window.pwned = 1</script>\n\n"
    '<img src="x" onerror="window.pwned = 2">'
)
CODE = f"""
import matplotlib.pyplot as plt
_fig, _ax = plt.subplots()
_ax.plot([1, 2, 3], [3, 1, 2])
_ax.set_title("scores by class size")
plt.show()
final_metrics = {{"task": "regression", "metric": "r2", "cv_mean": 0.79252187516363,
                 "cv_std": -7.845191954958253e-05, "test_score": 0.8, "baseline_score": 0.0,
                 "model": "ols"}}
final_summary = {SUMMARY!r}
result = 1
"""


def test_the_report_reads_as_a_report_and_runs_no_model_html(tmp_path: Path) -> None:
    problem, data, run = tmp_path / "problem.md", tmp_path / "t.csv", tmp_path / "run"
    problem.write_text(
        "---\ntitle: Class size\n---\n\n# Class size\n\nDo **smaller** classes help?\n"
    )
    data.write_text("a,b\n1,2\n3,4\n")
    with FakeLLM(code=CODE) as fake:
        proc, _, _ = bcc_here(
            "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
            "--out", str(run), "--quiet",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    nb = json.loads((run / "notebook.ipynb").read_text())
    pngs = [
        o for c in nb["cells"] for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert len(pngs) == 1
    with Chromium() as browser:
        browser.open((run / "report.html").as_uri())
        reader = "document.querySelector('#reader')"
        text = browser.evaluate(f"{reader}.innerText")
        assert "**" not in text and "####" not in text and "title: Class size" not in text
        assert browser.evaluate(f"{reader}.querySelector('.problem strong').innerText") == (
            "smaller"
        )
        assert browser.evaluate(f"{reader}.querySelector('.findings h4').innerText") == (
            "Class size"
        )
        assert "<script>window.pwned = 1</script>" in text  # shown as text ...
        assert '<img src="x" onerror="window.pwned = 2">' in text
        assert browser.evaluate("typeof window.pwned") == "undefined"  # ... never run
        assert browser.evaluate(f"{reader}.querySelectorAll('.findings img').length") == 0
        assert browser.evaluate(f"{reader}.querySelectorAll('figure img').length") == len(pngs)
        link = browser.evaluate(f"{reader}.querySelector('figcaption a').getAttribute('href')")
        assert browser.evaluate(f"document.querySelector('{link}') !== null")  # the cell
        cells = browser.evaluate(
            "[...document.querySelectorAll('table.key td span.num')]"
            ".map(s => [s.innerText, s.title])"
        )
        assert ["0.7925", "0.79252187516363"] in cells
        assert ["-7.845e-05", "-7.845191954958253e-05"] in cells
        top = browser.evaluate(f"{reader}.getBoundingClientRect().top")
        assert 0 <= top < browser.evaluate("innerHeight"), "the reader's part comes first"
        browser.send("Emulation.setEmulatedMedia", media="print")
        shown = "s => getComputedStyle(document.querySelector(s)).display"
        assert browser.evaluate(f"({shown})('#timeline')") == "none"
        assert browser.evaluate(f"({shown})('#reader')") != "none"
        assert browser.console_errors() == []
        browser.send("Emulation.setEmulatedMedia", media="")
        browser.screenshot(tmp_path / "reader.png")
