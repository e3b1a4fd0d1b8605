"""bcc's own files, trust and secrets, attacked by a scripted hostile model through litellm
(issue 38, items 1, 5 and 6). The runs use ``--no-sandbox``, so a cell can reach every file of
the run: bcc itself must still never write through a link, reap a process it did not start,
or let a secret of its environment out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.fakellm import FakeLLM, scripted_reply
from tests.integration.test_llm import bcc, files_containing, llm_run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

#: bcc's files the hostile cell replaces by links to host files (the final names, and the temp
#: names bcc's own writes go through)
ATTACKED = [
    "events.jsonl",
    "state.json",
    "notebook.ipynb",
    "summary.json",
    "report.html",
    "logs/0001_START_WORKFLOW.xml",
    ".state.json.tmp",
    ".notebook.ipynb.tmp",
    ".summary.json.tmp",
    ".summary.md.tmp",
    ".report.html.tmp",
    *(
        f"logs/.{seq:04d}_{event}.pending.xml.tmp"
        for seq in range(4, 9)
        for event in (
            "COMPLETE_ACTION",
            "COMPLETE_STEP",
            "COMPLETE_STAGE",
            "FINISH_WORKFLOW",
        )
    ),  # fmt: skip
    # the overflow files: where bcc wrote them before, and where it writes them now
    *(f"outputs/cell-{seq}-{n}.txt" for seq in range(3, 7) for n in range(1, 4)),
    *(f"logs/cells/.cell-{seq}-{n}.txt.tmp" for seq in range(3, 7) for n in range(1, 4)),
    *(f"logs/cells/cell-{seq}-{n}.txt" for seq in range(3, 7) for n in range(1, 4)),
]


def hostile_cell(links: dict[str, str]) -> str:
    """Put a link at each of ``links`` (run-relative name: host file), then print past the cap."""
    return (
        "import os\n"
        f"for _name, _target in {links!r}.items():\n"
        "    os.makedirs(os.path.dirname(_name) or '.', exist_ok=True)\n"
        "    if os.path.lexists(_name):\n"
        "        os.remove(_name)\n"
        "    os.symlink(_target, _name)\n"
        "print('overflow ' * 10_000)\n"
        "result = 1"
    )


def test_bcc_never_writes_through_a_link_the_run_put_in_its_files(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    links, before = {}, {}
    for i, name in enumerate(ATTACKED):
        target = host / f"file-{i}.txt"
        target.write_bytes(f"host file {i}: {name}\n".encode())
        links[name], before[target] = str(target), target.read_bytes()
    with FakeLLM() as fake:
        fake.policy = lambda req: scripted_reply(req.transition, hostile_cell(links))
        done = llm_run(fake, tmp_path, "--no-sandbox")
    assert done.proc.returncode == 0, done.proc.stderr
    assert {p: p.read_bytes() for p in before} == before  # every host file byte-identical
    spilled = [p for p in (done.run / "logs" / "cells").glob("cell-*.txt") if not p.is_symlink()]
    assert spilled and "overflow overflow" in spilled[0].read_text()
    assert not [p for p in (done.run / "outputs").glob("cell-*") if not p.is_symlink()]
    notebook = (done.run / "notebook.ipynb").read_text()
    assert f"full text in logs/cells/{spilled[0].name}" in notebook
    # what bcc replaced is its own again; events.jsonl says a link was replaced
    for name in ("events.jsonl", "state.json", "notebook.ipynb", "summary.json", "report.html"):
        assert not (done.run / name).is_symlink(), name
    lines = (done.run / "events.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["type"] == "link_replaced"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_resume_kills_no_process_a_forged_kernel_line_names(tmp_path: Path) -> None:
    # the victim, in its own process group; a decoy whose command line names ipykernel
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    decoy = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)", "ipykernel_launcher"],
        start_new_session=True,
    )
    try:
        with FakeLLM() as fake:
            fake.policy = lambda req: scripted_reply(req.transition, "result = 1")
            done = llm_run(fake, tmp_path, "--no-sandbox", "--max-llm-calls", "2")
            assert done.proc.returncode == 7, done.proc.stderr  # budget: aborted, resumable
            forged = [
                # the pid names ipykernel, the group is the victim's (what the issue saw)
                {"type": "kernel", "pid": decoy.pid, "pgid": victim.pid},
                # a start time that is not the victim's
                {"type": "kernel", "pid": victim.pid, "pgid": victim.pid, "started": 1},
            ]
            with open(done.run / "events.jsonl", "a") as fh:
                fh.writelines(json.dumps(line) + "\n" for line in forged)
            proc, _, _ = bcc("resume", str(done.run), "--max-llm-calls", "20", "--quiet")
        assert proc.returncode == 0, proc.stderr
        time.sleep(0.2)
        assert _alive(victim.pid) and _alive(decoy.pid)
        reaped = [
            json.loads(line)
            for line in (done.run / "events.jsonl").read_text().splitlines()
            if '"orphans_reaped"' in line
        ]
        assert not reaped
    finally:
        for proc in (victim, decoy):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_secret_of_bccs_environment_leaves_in_no_file_and_no_prompt(tmp_path: Path) -> None:
    key = f"sk-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    # the model knows the key: its code prints it (whole, in two pieces, to fd 2), its reply
    # echoes it
    code = (
        f"print('the key is', {key!r})\n"
        f"import sys\nsys.stdout.write({key[:20]!r}); sys.stdout.flush()\n"
        f"sys.stdout.write({key[20:]!r} + '\\n')\n"
        f"import os\nos.write(2, b'fd 2: ' + {key!r}.encode())\n"  # ipykernel copies it to kernel.log
        "result = 1"
    )
    with FakeLLM() as fake:
        fake.policy = lambda req: scripted_reply(req.transition, code) + f"<!-- {key} -->"
        done = llm_run(fake, tmp_path, "--no-sandbox", key=key)
        requests = list(fake.requests)
    assert done.proc.returncode == 0, done.proc.stderr
    assert files_containing(done.run, key) == []
    asked = [r for r in requests if key in json.dumps(r.body.get("messages"))]
    assert asked == []
    notebook = json.loads((done.run / "notebook.ipynb").read_text())
    outputs = json.dumps([c.get("outputs") for c in notebook["cells"]])
    assert "the key is [redacted]" in outputs
