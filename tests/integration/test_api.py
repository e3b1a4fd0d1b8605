"""The library (issue 42): ``notebook_bcc.run`` on the penguins example returns a ``Run``
whose answers are summary.json's, as Python values; ``open_run(path).ask(...)`` answers a
follow-up; a ``Run`` shows itself in Jupyter. Called from Python, not through the CLI, in this
process with scripted kernels (``tests/inprocess.py``): what is tested is the library's face;
the same run on real kernels is test_end_to_end's example run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import notebook_bcc
from tests.conftest import ROOT
from tests.inprocess import scripted_kernels

pytestmark = pytest.mark.timeout(600)

EXAMPLE = ROOT / "examples" / "penguins"


@pytest.fixture(autouse=True)
def _scripted() -> Iterator[None]:
    with scripted_kernels():
        yield


def test_run_open_and_ask_from_python(tmp_path: Path) -> None:
    run = notebook_bcc.run(
        EXAMPLE / "problem.md", [EXAMPLE / "penguins.csv"], out=tmp_path / "run", model="offline"
    )
    assert isinstance(run, notebook_bcc.Run)
    assert (run.exit_code, run.state) == (0, "WORKFLOW_COMPLETED")
    summary = json.loads(run.summary_path.read_text())
    assert [a.to_json() for a in run.answers] == summary["answers"]
    assert run.answers and all(a.answered for a in run.answers)
    assert run.key_results == summary["key_results"] and run.key_results["cv_mean"] > 0.9
    assert run.findings and run.verification["status"] == "passed"
    assert run.notebook.exists() and run.report().exists()
    page = run._repr_html_()
    for a in run.answers:
        assert a.question.split()[0] in page
    assert "notebook.ipynb" in page and "passed" in page

    opened = notebook_bcc.open_run(run.path)
    assert opened.exit_code is None and opened.answers == run.answers
    asked = opened.ask("Which island has the most penguins?")
    assert asked.exit_code == 0 and asked.state == "WORKFLOW_COMPLETED"
    biscoe = pd.read_csv(EXAMPLE / "penguins.csv")["island"].value_counts().idxmax()
    follow_up = asked.answers[-1]
    assert (follow_up.question, follow_up.value) == ("Which island has the most penguins?", biscoe)


def test_bad_input_raises_the_error_the_cli_prints(tmp_path: Path) -> None:
    from notebook_bcc.errors import InputError

    with pytest.raises(InputError) as caught:
        notebook_bcc.run(tmp_path / "nope.md", tmp_path / "nope.csv", out=tmp_path / "run")
    assert caught.value.exit_code == 3 and not (tmp_path / "run").exists()
    with pytest.raises(ValueError):  # InputError is a ValueError: no bcc import needed
        notebook_bcc.open_run(tmp_path)
