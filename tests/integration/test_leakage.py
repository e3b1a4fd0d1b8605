"""The offline analyst never reports a leak as a result (issue 13): a target defined as a
threshold of another column is caught by the single-feature check, and by ``drop``.

The offline analyst's choice is what is tested: ``bcc`` runs in this process with scripted
kernels (``tests/inprocess.py``); the analyst's cells really run, and the run is verified."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.inprocess import bcc_in_process

pytestmark = pytest.mark.timeout(300)


def _table(path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 400
    x = rng.uniform(0, 100, n)
    a, b = rng.normal(size=n), rng.normal(size=n)
    label = np.where(x < 60, "low", "high")
    lines = ["score,noise_a,noise_b,grade"]
    lines += [f"{x[i]:.3f},{a[i]:.4f},{b[i]:.4f},{label[i]}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")


def _run(tmp: Path, front: str) -> dict:
    data = tmp / "grades.csv"
    _table(data)
    problem = tmp / "problem.md"
    problem.write_text(f"---\ntarget: grade\n{front}---\nPredict the `grade` of a student.\n")
    proc = bcc_in_process(
        "run", str(problem), str(data), "--out", str(tmp / "run"), "--quiet", "--no-verify"
    )  # the verification of the analyst's cells is test_end_to_end's
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((tmp / "run" / "summary.json").read_text())["key_results"]


def test_a_threshold_of_a_feature_is_caught_as_leakage(tmp_path: Path) -> None:
    metrics = _run(tmp_path, "")
    assert "score" in metrics["excluded"]
    assert "predicts the target almost perfectly on its own" in metrics["excluded"]["score"]
    assert metrics["cv_mean"] < 0.95 and metrics["test_score"] < 0.95


def test_drop_removes_the_column_and_says_why(tmp_path: Path) -> None:
    metrics = _run(tmp_path, "drop: [score]\n")
    assert metrics["excluded"]["score"] == "listed under drop: in problem.md"
    assert metrics["cv_mean"] < 0.95


def test_keep_overrides_the_leakage_check(tmp_path: Path) -> None:
    metrics = _run(tmp_path, "keep: [score]\n")
    assert "score" not in metrics["excluded"]
    assert metrics["cv_mean"] > 0.95  # the analyst was told the column is legitimate
