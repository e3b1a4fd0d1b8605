"""report.html in a real headless Chromium: an offline run and a scripted-LLM run (litellm to
the loopback server) each load with no console error; the reader's part comes first, the plan
tree below it; clicking a
transition shows its prompt and the cells it ran."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import Chromium, chromium_path
from tests.fakellm import FakeLLM
from tests.inprocess import bcc_in_process
from tests.integration.test_llm import llm_run

REQUIRED = os.environ.get("BCC_REQUIRE_BROWSER") == "1"  # .ci/run installs chromium
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(chromium_path() is None and not REQUIRED, reason="chromium not installed"),
]


def first_action(run: Path) -> int:
    return int(sorted((run / "logs").glob("*_COMPLETE_ACTION.xml"))[0].name[:4])


def check_in_browser(run: Path, shot: Path) -> None:
    seq = first_action(run)
    with Chromium() as browser:
        browser.open((run / "report.html").as_uri())
        assert browser.evaluate("document.querySelectorAll('#plan li').length") >= 3
        top = browser.evaluate("document.querySelector('#reader').getBoundingClientRect().top")
        assert 0 <= top < browser.evaluate("innerHeight"), "the reader's part comes first"
        below = browser.evaluate("document.querySelector('#plan').getBoundingClientRect().top")
        assert below > top, "the process follows the reader's part"
        assert browser.screenshot(shot).stat().st_size > 10_000
        target = f"document.querySelector('#t-{seq:04d}')"
        assert browser.evaluate(f"{target}.open") is False
        assert browser.evaluate(f"{target}.querySelector('pre.prompt').checkVisibility()") is False
        browser.evaluate(f"{target}.querySelector('summary').click()")
        assert browser.evaluate(f"{target}.open") is True
        assert browser.evaluate(f"{target}.querySelector('pre.prompt').checkVisibility()") is True
        cells = browser.evaluate(f"{target}.querySelectorAll('.cell').length")
        assert cells >= 1
        link = browser.evaluate(f"{target}.querySelector('a[href^=\"#nb-\"]').getAttribute('href')")
        assert browser.evaluate(f"document.querySelector('{link}') !== null")
        assert browser.console_errors() == []


def test_an_offline_run_reports_itself(penguins_run: Path, tmp_path: Path) -> None:
    """The session's completed penguins run (``tests/conftest.py``): its last line names the
    report, which is read in the browser (not changed)."""
    stdout = (penguins_run.parent / "stdout.txt").read_text()
    assert stdout.strip().endswith(f"(report: {penguins_run}/report.html)")
    check_in_browser(penguins_run, tmp_path / "offline.png")


def test_a_scripted_model_run_reports_itself(tmp_path: Path) -> None:
    with FakeLLM() as fake:
        done = llm_run(fake, tmp_path, where="here")
    assert done.proc.returncode == 0, done.proc.stderr
    check_in_browser(done.run, tmp_path / "llm.png")


def test_bcc_report_redraws_it(tmp_path: Path) -> None:
    with FakeLLM() as fake:
        done = llm_run(fake, tmp_path, where="here")
    (done.run / "report.html").unlink()
    proc = bcc_in_process("report", str(done.run))
    assert proc.returncode == 0 and proc.stdout.strip() == str(done.run / "report.html")
    assert '<details id="t-0001">' in (done.run / "report.html").read_text()


def test_a_huge_output_shows_its_excerpt_and_links_its_spill_file(tmp_path: Path) -> None:
    from tests.scripted import ScriptedAgent, make_runner, one_stage

    code = "print('x' * 60_000)\nresult = 1"
    agent = ScriptedAgent(lambda obs: one_stage(obs, lambda o: code))
    result = make_runner(tmp_path, agent, verify=False).run()
    assert result.final_state == "WORKFLOW_COMPLETED"
    page = (tmp_path / "run" / "report.html").read_text()
    [spill] = sorted((tmp_path / "run" / "logs" / "cells").glob("cell-*.txt"))
    assert f'<a href="logs/cells/{spill.name}">logs/cells/{spill.name}</a>: the full output' in page
    assert "x" * 60_000 not in page
