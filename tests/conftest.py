"""Shared fixtures: repository paths, the shared datasets (skipped when absent), run helpers."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# The suite runs two workers on two cores (pytest -n 2); an OpenMP pool of a core's size in
# each (scikit-learn's gradient boosting, in a worker's scripted kernels or in a real kernel,
# which inherits it) spins while it waits for a core the other worker holds. One thread each.
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
BCC = [sys.executable, "-m", "notebook_bcc"]
FINAL_METRICS_KEYS = {
    "task",
    "metric",
    "cv_mean",
    "cv_std",
    "test_score",
    "baseline_score",
    "model",
}


#: NotebookClient settings for a test that reads a cell's output: wait up to 60 s for the
#: kernel's output after each cell and fail if it never comes (nbclient's default waits 4 s
#: and then goes on without it: on a loaded machine a print could be lost silently)
WHOLE_OUTPUT = {"iopub_timeout": 60, "raise_on_iopub_timeout": True}


def manifest() -> list[dict[str, str]]:
    path = SHARED / "manifest.csv"
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def problem_text(row: dict[str, str]) -> str:
    """A problem.md written from a manifest row: front matter with the target, then the text."""
    lines = ["---", f"title: {row['problem'].rstrip('.?')}"]
    if row.get("target"):
        lines.append(f"target: {row['target']}")
    lines.append(f"task: {row['task']}")
    lines += ["---", "", row["problem"], ""]
    return "\n".join(lines)


@pytest.fixture
def shared_datasets() -> Path:
    if not (SHARED / "manifest.csv").exists():
        pytest.skip("../shared/datasets is absent")
    return SHARED


def made_once(
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    name: str,
    make: Callable[[Path], None],
) -> Path:
    """The folder ``make(folder)`` filled, made once per test session: the xdist workers share
    it (the first to come makes it under a file lock; the others wait and read it)."""
    if worker_id == "master":  # no workers: this session's own temporary directory
        folder = tmp_path_factory.getbasetemp() / f"once-{name}"
        if not folder.exists():
            make(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent / f"once-{name}"  # the session's, not a worker's
    shared.mkdir(exist_ok=True)
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        folder, done = shared / "made", shared / "done"
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a worker that failed left
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def penguins_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The penguins example run offline and verified, as ``bcc run`` makes it (in process, its
    kernels scripted: ``tests/inprocess.py``), once per session for every test that starts from
    a completed run: read it, or copy it before changing it. ``bcc``'s standard output is in
    ``stdout.txt`` beside it."""

    def make(folder: Path) -> None:
        from tests.inprocess import bcc_in_process

        example = ROOT / "examples" / "penguins"
        proc = bcc_in_process(
            "run", str(example / "problem.md"), str(example / "penguins.csv"),
            "--out", str(folder / "run"), "--quiet",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        (folder / "stdout.txt").write_text(proc.stdout)

    return made_once(tmp_path_factory, worker_id, "penguins", make) / "run"


def example_run(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, name: str
) -> tuple[Path, subprocess.CompletedProcess]:
    """``examples/<name>`` run offline by ``bcc run`` as a user runs it (a process, real
    kernels), once per session: test_end_to_end checks the run, test_recipes the recipes' result
    lines in its notebook. Returns the run directory and what ``bcc`` returned."""
    example = ROOT / "examples" / name

    def make(folder: Path) -> None:
        folder.mkdir(parents=True)
        data = sorted(str(p) for p in example.iterdir() if p.suffix == ".csv")
        proc = run_bcc(
            "run", str(example / "problem.md"), *data, "--out", str(folder / "run"), "--quiet"
        )  # fmt: skip
        (folder / "proc.json").write_text(
            json.dumps({"args": proc.args, "returncode": proc.returncode,
                        "stdout": proc.stdout, "stderr": proc.stderr})
        )  # fmt: skip

    folder = made_once(tmp_path_factory, worker_id, f"example-{name}", make)
    saved = json.loads((folder / "proc.json").read_text())
    return folder / "run", subprocess.CompletedProcess(**saved)


def output_text(outputs: list) -> str:
    """What a cell's outputs say as text: its streams, and the plain text of its displays
    (a step's ``Result:`` line is a display)."""
    parts = []
    for out in outputs:
        if out.get("output_type") == "stream":
            parts.append("".join(out.get("text", "")))
        elif "data" in out:
            parts.append("".join(out["data"].get("text/plain", "")) + "\n")
    return "".join(parts)


def run_bcc(
    *args: str, timeout: float = 600, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [*BCC, *args], capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd
    )


# -- fault timings: each fault test records the wall time from its fault to exit or recovery --


@pytest.fixture
def fault_clock(record_property: object):
    """``fault_clock(what, seconds)`` records a timing, printed in a table after the run."""

    def record(what: str, seconds: float) -> None:
        record_property("fault_s", f"{what}: {seconds:.2f} s")  # type: ignore[operator]

    return record


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    rows = [
        (report.nodeid.split("::")[-1], value)
        for report in terminalreporter.stats.get("passed", [])
        if report.when == "call"
        for key, value in report.user_properties
        if key == "fault_s"
    ]
    if rows:
        terminalreporter.section("wall time from fault to exit or recovery")
        for test, value in sorted(rows):
            terminalreporter.write_line(f"{test}: {value}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The unit tests are all part of ``make check`` (marked ``check``)."""
    unit = ROOT / "tests" / "unit"
    for item in items:
        if unit in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.check)
