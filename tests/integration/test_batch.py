"""``bcc batch``: real ``bcc run`` processes with the offline analyst, on this machine and on a
Dask ``LocalCluster``; killed batches and lost workers; the cost bound.

A batch killed after two runs stays on real kernels: its rows, held mid-run by a failpoint,
must end their kernels when the batch dies. The rest of the batch's bookkeeping (skip, retry, results, the cost bound, a
lost Dask worker's row resumed) is the workflow's logic, so each row's ``bcc`` runs its kernels
scripted (``tests/scripted_bcc.py``: ``scripted_runs``,
and ``dask_setup`` on the Dask workers): the batch, its row processes, their parent-death signal
and the Dask cluster and its lost worker stay real; no kernel process is started. That a run
SIGTERMed (what the parent-death signal sends) leaves no kernel alive is checked with real
kernels by the fault matrix (``tests/faults/test_fault_matrix.py``). Usage errors and the
spent cost bound start no row: ``bcc batch`` runs in this process (``tests/inprocess.py``).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from notebook_bcc.batch import attempt
from tests.conftest import BCC, ROOT, run_bcc
from tests.faults.test_kill_resume import _wait
from tests.inprocess import bcc_in_process
from tests.scripted_bcc import COMMAND

SCRIPTED = COMMAND  # bcc, its rows' kernels scripted

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

QUESTION = "Which `soil` has the highest total `height`?"


def _tables(tmp: Path, n: int) -> list[tuple[Path, Path]]:
    """``n`` small tables whose answers differ (b wins for even k, a for odd k)."""
    made = []
    for k in range(n):
        rows = ["light,water,soil,height"]
        for i in range(60):
            boost = 5 if (i % 2) == (k % 2) else 0  # even k: the odd rows (b) grow taller
            rows.append(f"{(i + k) % 7},{(i * 3) % 11},{'ab'[i % 2]},{i % 7 + boost}")
        data = tmp / f"plants{k}.csv"
        data.write_text("\n".join(rows) + "\n")
        problem = tmp / f"p{k}.md"
        problem.write_text(f"---\ntitle: Plants {k}\n---\n{QUESTION}\n")
        made.append((problem, data))
    return made


def _expected(data: Path) -> str:
    frame = pd.read_csv(data)
    return str(frame.groupby("soil")["height"].sum().idxmax())


def _manifest(tmp: Path, n: int) -> Path:
    lines = ["id,problem,data,seed"]
    lines += [f"r{k},{p.name},{d.name},{k}" for k, (p, d) in enumerate(_tables(tmp, n))]
    path = tmp / "manifest.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _results(out: Path) -> dict[str, dict]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def _answer(record: dict) -> object:
    [answer] = record["answers"]
    return answer["value"] if answer.get("answered") else None


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The rows of a batch run in this process are scripted ``bcc``s; the environment a
    batch process needs for its rows to be (``PYTHONPATH``: ``tests`` from anywhere)."""
    monkeypatch.setattr(attempt, "BCC_COMMAND", COMMAND)
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + path if path else ""))
    return {"PYTHONPATH": os.environ["PYTHONPATH"]}


def _batch(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """``bcc batch ARGS`` in this process, from ``tmp`` (its rows in processes of their own)."""
    return bcc_in_process("batch", *args, cwd=tmp)


def _kernels(run: Path) -> list[int]:
    events = run / "events.jsonl"
    lines = events.read_text().splitlines() if events.exists() else []
    return [r["pid"] for r in map(json.loads, lines) if r.get("type") == "kernel" and r.get("pid")]


def test_a_batch_killed_after_two_runs_skips_them_and_resumes_the_others(tmp_path: Path) -> None:
    """Two rows complete; the batch is killed while the other two are mid-run. They are held
    at their third agent call (a failpoint), so neither can complete before the kill however
    busy the machine (once, under load, a row completed between the check and the kill)."""
    manifest = _manifest(tmp_path, 4)
    out = tmp_path / "batch"
    first_two = tmp_path / "first_two.csv"
    first_two.write_text("\n".join(manifest.read_text().splitlines()[:3]) + "\n")
    done = run_bcc("batch", str(first_two), "--jobs", "2", "--out", str(out), "--no-verify",
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    first = set(_results(out))
    assert first == {"r0", "r1"}
    mark = tmp_path / "held"
    held = {"BCC_FAILPOINTS": "agent@3=pause", "BCC_FAILPOINTS_MARK": str(mark)}
    args = [*BCC, "batch", str(manifest), "--jobs", "2", "--out", str(out), "--no-verify"]
    proc = subprocess.Popen(
        args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, **held},
    )  # fmt: skip
    runs = out / "runs"
    others = ["r2", "r3"]

    def both_started_one_held() -> bool:
        started = [r for r in others if (runs / r / "state.json").exists()]
        return mark.exists() and len(started) == 2 and all(_kernels(runs / r) for r in started)

    try:
        assert _wait(both_started_one_held, 180), "the other two rows did not start"
        proc.kill()  # SIGKILL: the batch says nothing to its runs
        proc.wait(10)
        kernels = [pid for r in others for pid in _kernels(runs / r)]
        # the runs die with the batch (parent-death signal) and end their kernels
        assert _wait(lambda: not any(map(_alive, kernels)), 60), kernels
        for r in others:
            state = json.loads((runs / r / "state.json").read_text())["fsm_state"]
            assert state != "WORKFLOW_COMPLETED", (r, state)
    finally:
        if proc.poll() is None:
            proc.kill()
    again = run_bcc("batch", str(manifest), "--jobs", "2", "--out", str(out), "--no-verify",
                    cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert "4 completed" in again.stdout
    records = _results(out)
    assert sorted(records) == ["r0", "r1", "r2", "r3"]
    assert {r for r, rec in records.items() if rec["action"] == "skipped"} == first
    assert {r for r, rec in records.items() if rec["action"] == "resume"} == set(others)
    for k in range(4):
        assert _answer(records[f"r{k}"]) == _expected(tmp_path / f"plants{k}.csv")
        config = json.loads((runs / f"r{k}" / "config.json").read_text())
        assert config["seed"] == k and config["verify"] is False  # row and command line
    with (out / "results.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["id"] for r in rows] == ["r0", "r1", "r2", "r3"]
    assert all(r["status"] == "completed" and r["exit_code"] == "0" for r in rows)
    index = (out / "index.html").read_text()
    assert all(f'href="runs/r{k}/report.html"' in index for k in range(4))
    assert not list(runs.glob("*.old-*"))


def _ids(n: int) -> list[str]:
    return [f"r{k}" for k in range(n)]


def test_failed_rows_are_kept_skipped_and_retried_only_when_asked(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    (problem, data), = _tables(tmp_path, 1)  # fmt: skip
    manifest = tmp_path / "m.jsonl"
    rows = [
        {"id": "good", "problem": problem.name, "data": [data.name], "no_verify": True},
        {"id": "missing", "problem": problem.name, "data": "nowhere.csv"},
    ]
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "batch"
    first = _batch(tmp_path, str(manifest), "--out", str(out), "--quiet")
    assert first.returncode == 1, first.stderr
    records = _results(out)
    assert records["good"]["status"] == "completed"
    assert records["missing"]["status"] == "failed" and records["missing"]["exit_code"] == 3
    assert "nowhere.csv" in records["missing"]["message"]
    (tmp_path / "nowhere.csv").write_text(data.read_text())
    again = _batch(tmp_path, str(manifest), "--out", str(out), "--quiet")
    assert again.returncode == 1 and _results(out)["missing"]["action"] == "skipped"
    retried = _batch(tmp_path, str(manifest), "--out", str(out), "--quiet", "--retry-failed")
    assert retried.returncode == 0, retried.stderr
    records = _results(out)
    assert records["missing"]["status"] == "completed" and records["missing"]["action"] == "run"
    assert records["good"]["action"] == "skipped"


def test_a_spent_cost_bound_starts_nothing(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, 2)
    out = tmp_path / "batch"
    proc = _batch(tmp_path, str(manifest), "--out", str(out), "--max-cost-usd", "0")
    assert proc.returncode == 1
    records = _results(out)
    assert [r["status"] for r in records.values()] == ["not_run", "not_run"]
    assert "--max-cost-usd is spent" in records["r0"]["message"]
    assert not list((out / "runs").glob("r*"))


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["--jobs", "0"], 2, "--jobs 0 is below 1"),
        (["--max-llm-cals", "3"], 2, "'--max-llm-cals' is not an option"),
        (["--executor", "dask"], 2, "--executor dask needs --scheduler"),
    ],
)
def test_batch_usage_errors_are_one_line(tmp_path: Path, args: list[str], code: int, said: str):
    manifest = _manifest(tmp_path, 1)
    proc = _batch(tmp_path, str(manifest), *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code and len(lines) == 1 and said in lines[0], proc.stderr


def test_a_bad_manifest_is_one_line_exit_3(tmp_path: Path) -> None:
    manifest = tmp_path / "m.csv"
    manifest.write_text("id,problem,data,colour\nx,p.md,d.csv,red\n")
    proc = _batch(tmp_path, str(manifest))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 3 and len(lines) == 1, proc.stderr
    assert "manifest row 1: 'colour' is not an option of `bcc run`" in lines[0]


def test_a_dask_cluster_runs_the_batch_and_survives_a_lost_worker(
    tmp_path: Path, scripted: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each answer is the table's own (``_expected``), as a local batch's are (above). A
    worker is lost while both are in the middle of a row (held in its cleaning cell), so the
    lost row is resumed, however busy the machine."""
    distributed = pytest.importorskip("distributed")
    manifest = _manifest(tmp_path, 3)
    out, mark = tmp_path / "dask", tmp_path / "in_cell"
    monkeypatch.setenv("BCC_SCRIPTED_SLOW_CELL", "clean_dataset = raw_dataset.copy()")
    monkeypatch.setenv("BCC_SCRIPTED_SLOW_MARK", str(mark))
    monkeypatch.setenv("BCC_SCRIPTED_SLOW_S", "5")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            preload=["tests.scripted_bcc"],  # the rows' kernels scripted (``dask_setup``)
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        workers = client.run(os.getpid)
        assert client.run(lambda: attempt.BCC_COMMAND) == dict.fromkeys(workers, COMMAND)
        args = [*SCRIPTED, "batch", str(manifest), "--executor", "dask", "--scheduler",
                cluster.scheduler_address, "--jobs", "3", "--out", str(out), "--no-verify"]  # fmt: skip
        proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            in_cell = lambda: mark.exists() and len(mark.read_text().split()) >= 2  # noqa: E731
            assert _wait(in_cell, 180), "the rows never reached their cleaning cell"
            held = int(mark.read_text().split()[-1])  # a row's bcc, 5 s in its cell
            parent = int(Path(f"/proc/{held}/stat").read_text().rsplit(")", 1)[1].split()[1])
            assert parent in workers.values(), (parent, workers)
            os.kill(parent, signal.SIGKILL)  # its worker; the nanny starts another
            stdout, stderr = proc.communicate(timeout=420)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, stderr.decode()[-3000:]
    assert "3 completed" in stdout.decode()
    dask_records = _results(out)
    assert sorted(dask_records) == _ids(3)
    for k in range(3):
        assert _answer(dask_records[f"r{k}"]) == _expected(tmp_path / f"plants{k}.csv")
        assert dask_records[f"r{k}"]["status"] == "completed"
    assert any(r["action"] == "resume" for r in dask_records.values()), json.dumps(dask_records)
