"""The litellm backend end to end (issue 3): the real CLI and the real litellm path, against
``tests.fakellm.FakeLLM``, an OpenAI-compatible server on 127.0.0.1 (no mock of litellm).

Runs are expensive (litellm's import alone takes seconds), so several tests share one run
through module-scoped fixtures: ``recorded`` (a clean run with a canary key), ``faulty``
(one fault injected per transition) and ``slow`` (every reply slower than --llm-timeout).

What is about the model's path (retries, repairs, budgets, replay, usage errors) runs ``bcc``
in this process with scripted kernels (``bcc_scripted``, ``tests/inprocess.py``): ``faulty``,
``slow``, the call budget, replay and the unknown provider; every call still goes through
litellm over real HTTP to the fake server. What is about the kernel stays on real kernels in
a ``bcc`` process: ``recorded`` (its cell prints the kernel's environment, which must not hold
the key: a scripted kernel's environment is bcc's own), the 401s and the unknown provider found
while the kernel boots (no kernel is left), and litellm missing (a process of its own).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import nbformat
import pytest
from lxml import etree

from notebook_bcc.contract.payloads import MAX_REPLY_CHARS, parse_payload
from notebook_bcc.errors import PayloadError
from tests.conftest import BCC, ROOT
from tests.fakellm import FakeLLM, Reply, Request, scripted_reply
from tests.inprocess import bcc_in_process

pytestmark = pytest.mark.timeout(180)

MODEL = "openai/fake-model"
PROBLEM = "Summarise the zorblat widget measurements and report their mean width.\n"
DATA = "zorblat_widgets.csv"
AGENT_EVENTS = [
    "START_WORKFLOW",
    "START_STEP",
    "START_BEHAVIOR",
    "COMPLETE_ACTION",
    "COMPLETE_STEP",
    "COMPLETE_STAGE",
]


@dataclass
class Done:
    proc: subprocess.CompletedProcess
    started: float
    seconds: float
    run: Path
    requests: list[Request] = field(default_factory=list)
    canary: str = ""  # a secret that must appear nowhere in the run directory

    @property
    def lines(self) -> list[str]:
        return self.proc.stderr.strip().splitlines()


def _env(key: str = "sk-test") -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY")
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    env.pop("BCC_MODEL", None)
    env.update(OPENAI_API_KEY=key, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    return env


#: where a test's ``bcc`` runs: a process of its own (``process``); in this process with
#: scripted kernels (``scripted``: the workflow's logic through the model's path); in this
#: process with real kernels (``here``: the kernel's faults, the report)
Where = Literal["process", "scripted", "here"]


def bcc(
    *args: str, key: str = "sk-test", timeout: float = 150, where: Where = "process"
) -> tuple[subprocess.CompletedProcess, float, float]:
    t0 = time.monotonic()
    if where == "process":
        proc = subprocess.run(
            [*BCC, *args], capture_output=True, text=True, timeout=timeout, env=_env(key), cwd=ROOT
        )
    else:
        proc = bcc_in_process(*args, environ=_env(key), real_kernels=where == "here")
    return proc, t0, time.monotonic() - t0


bcc_scripted = functools.partial(bcc, where="scripted")
bcc_here = functools.partial(bcc, where="here")


def model_run(fake: FakeLLM, problem: Path, data: Path, out: Path) -> subprocess.CompletedProcess:
    """``bcc run PROBLEM DATA --out OUT`` with ``fake`` as the model, in this process with
    scripted kernels."""
    proc, _, _ = bcc_scripted(
        "run", str(problem), str(data), "--model", "openai/m", "--api-base", fake.url,
        "--out", str(out), "--quiet",
    )  # fmt: skip
    return proc


def inputs(tmp: Path) -> tuple[Path, Path]:
    tmp.mkdir(parents=True, exist_ok=True)
    problem, data = tmp / "problem.md", tmp / DATA
    problem.write_text(PROBLEM)
    data.write_text("width,height\n1.5,2\n3.5,4\n5.0,6\n")
    return problem, data


def llm_run(
    fake: FakeLLM,
    tmp: Path,
    *extra: str,
    name: str = "llm-run",
    key: str = "sk-test",
    where: Where = "process",
) -> Done:
    """A model run against ``fake``, ``bcc`` running ``where`` (see ``Where``)."""
    problem, data = inputs(tmp)
    run = tmp / name
    proc, t0, seconds = bcc(
        "run", str(problem), str(data), "--model", MODEL, "--api-base", fake.url,
        "--out", str(run), "--no-verify", "--quiet", *extra, key=key, where=where,
    )  # fmt: skip
    return Done(proc, t0, seconds, run, fake.requests)


def responses(run: Path, name: str) -> list[etree._Element]:
    return etree.parse(str(run / "logs" / name)).getroot().findall("response")


def statuses(run: Path, name: str) -> list[str]:
    return [r.get("status") for r in responses(run, name)]


def code_cells(run: Path) -> list[nbformat.NotebookNode]:
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


def files_containing(root: Path, needle: str) -> list[Path]:
    """``grep -r``: every file under ``root`` whose bytes contain ``needle``."""
    data = needle.encode()
    return [p for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]


def fsm_state(run: Path) -> str:
    return json.loads((run / "state.json").read_text())["fsm_state"]


def assert_completed(done: Done) -> None:
    assert done.proc.returncode == 0, done.proc.stderr
    assert fsm_state(done.run) == "WORKFLOW_COMPLETED"


# --- a clean recorded run, with a canary API key and a cell that prints the environment -------

ENV_CODE = "import os\nresult = 42\nprint(dict(os.environ))"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Done]:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    with FakeLLM(code=ENV_CODE) as fake:
        done = llm_run(fake, tmp_path_factory.mktemp("recorded"), name="rec-run", key=canary)
    done.canary = canary
    yield done  # the server is stopped from here on


def test_scripted_workflow_completes_and_every_request_carries_the_headers(recorded: Done):
    assert_completed(recorded)
    reqs = recorded.requests
    assert [r.transition for r in reqs] == AGENT_EVENTS
    logged = [
        etree.parse(str(p)).getroot()
        for p in sorted((recorded.run / "logs").glob("[0-9][0-9][0-9][0-9]_*.xml"))
    ]
    assert [t.get("event") for t in logged if t.get("agent") != "none"] == AGENT_EVENTS
    for r in reqs:
        assert r.path.endswith("/chat/completions")
        assert r.body["model"] == "fake-model"
        assert r.headers["x-bcc-run-id"] == recorded.run.name == "rec-run"
        assert r.headers["x-bcc-location"]
    assert [r.headers["x-bcc-location"] for r in reqs] == [
        "/",
        "work",
        "work/compute",
        "work/compute/compute_b1",
        "work/compute/compute_b1",
        "work/compute/compute_b1",
    ]
    # usage and cost are recorded (cost is zero for a model without a price)
    state = json.loads((recorded.run / "state.json").read_text())
    assert state["counters"]["llm_calls"] == 6
    assert state["usage"]["prompt_tokens"] > 0 and state["usage"]["completion_tokens"] > 0


def test_tokens_are_totalled_per_stage_step_and_behavior(recorded: Done):
    assert_completed(recorded)
    state = json.loads((recorded.run / "state.json").read_text())
    by = state["usage_by_location"]
    calls = len(recorded.requests)
    assert state["counters"]["llm_calls"] == calls
    assert state["usage"]["prompt_tokens"] > 0
    assert {"work", "work/compute", "work/compute/compute_b1"} <= set(by)
    planning = by.get("(planning)", {"prompt_tokens": 0})["prompt_tokens"]
    assert by["work"]["prompt_tokens"] + planning == state["usage"]["prompt_tokens"]
    summary = json.loads((recorded.run / "summary.json").read_text())
    assert summary["usage"]["prompt_tokens"] == state["usage"]["prompt_tokens"]
    assert "work" in summary["usage_by_location"]


def test_first_prompt_contains_the_problem_and_the_file_names(recorded: Done):
    first = recorded.requests[0]
    assert first.transition == "START_WORKFLOW"
    assert [m["role"] for m in first.messages] == ["system", "user"]
    system = first.system  # the run's block: problem, questions, files, preview
    assert PROBLEM.strip() in system and PROBLEM.strip() not in first.last_user
    assert DATA in system


def test_the_api_key_reaches_neither_the_run_dir_nor_the_kernel(recorded: Done):
    assert_completed(recorded)
    canary = recorded.canary
    # the key was really used: the server saw it
    assert recorded.requests[0].headers["authorization"] == f"Bearer {canary}"
    assert files_containing(recorded.run, canary) == []
    assert files_containing(recorded.run, "OPENAI_API_KEY") == []
    cell = next(c for c in code_cells(recorded.run) if "os.environ" in c.source)
    printed = "".join(o.get("text", "") for o in cell.outputs)
    assert "PATH" in printed  # the environment was printed ...
    assert canary not in printed and "OPENAI_API_KEY" not in printed  # ... without the key


def test_replay_with_the_server_stopped_reproduces_the_code_cells(recorded: Done, tmp_path: Path):
    assert_completed(recorded)
    new = tmp_path / "replayed"
    proc, _, _ = bcc_scripted("replay", str(recorded.run), "--out", str(new), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert fsm_state(new) == "WORKFLOW_COMPLETED"
    assert [c.source for c in code_cells(new)] == [c.source for c in code_cells(recorded.run)]
    assert len(code_cells(new)) == 3  # parameters, inputs, the action


# --- one run, one fault per transition ---------------------------------------------------------

FAULT_CODE = "result = 42"
RAW_CODE = 'result = 1 if (2 < 3) & True else 0\nprint("a<b && c")'


def _truncated() -> str:
    full = scripted_reply("COMPLETE_STEP", FAULT_CODE)
    return full[: len(full) // 2]


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Done]:
    tmp = tmp_path_factory.mktemp("faulty")
    canary = f"ENTITY-CANARY-{uuid.uuid4().hex}"
    secret = tmp / "secret.txt"
    secret.write_text(canary)
    fenced = (
        "Sure! Here is the behavior you asked for:\n\n```xml\n"
        + scripted_reply("START_BEHAVIOR", FAULT_CODE)
        + "\n```\n\nLet me know if anything else is needed."
    )
    raw = f"<actions><add-text>Check that a < b & c.</add-text><add-code2run>{RAW_CODE}</add-code2run></actions>"
    doctype = (
        '<?xml version="1.0"?>\n'
        f'<!DOCTYPE stage_reflection [\n  <!ENTITY leak SYSTEM "{secret.as_uri()}">\n]>\n'
        + scripted_reply("COMPLETE_STAGE", FAULT_CODE).replace(
            "<reasoning>r</reasoning>", "<reasoning>&leak;</reasoning>"
        )
    )
    oversized = scripted_reply("START_STEP", FAULT_CODE) + "\n" + "x" * (MAX_REPLY_CHARS + 1)
    with FakeLLM(code=FAULT_CODE) as fake:
        fake.push(
            Reply(429, headers={"Retry-After": "0"}, when="START_WORKFLOW"),
            Reply(429, headers={"Retry-After": "0"}, when="START_WORKFLOW"),
            Reply(500, when="START_STEP"),
            Reply(content=oversized, when="START_STEP"),
            Reply(content=fenced, when="START_BEHAVIOR"),
            Reply(content=raw, when="COMPLETE_ACTION"),
            Reply(content=_truncated(), when="COMPLETE_STEP"),
            Reply(content=doctype, when="COMPLETE_STAGE"),
        )
        done = llm_run(fake, tmp, where="scripted")
        assert fake.replies == []  # every fault was served
    done.canary = canary
    yield done


def _by(done: Done, event: str) -> list[Request]:
    return [r for r in done.requests if r.transition == event]


def test_two_429s_are_retried_and_both_are_in_the_log(faulty: Done):
    assert_completed(faulty)
    assert len(_by(faulty, "START_WORKFLOW")) == 3
    log = responses(faulty.run, "0001_START_WORKFLOW.xml")
    assert [r.get("status") for r in log] == ["error", "error", "ok"]
    assert all("RateLimit" in (r.text or "") for r in log[:2])


def test_a_500_is_retried(faulty: Done):
    assert_completed(faulty)
    assert len(_by(faulty, "START_STEP")) == 3  # 500, oversized, repaired
    log = responses(faulty.run, "0002_START_STEP.xml")
    assert log[0].get("status") == "error" and "500" in (log[0].text or "")


def test_oversized_reply_is_refused_then_repaired(faulty: Done):
    assert_completed(faulty)
    assert statuses(faulty.run, "0002_START_STEP.xml") == ["error", "invalid", "ok"]
    repair = _by(faulty, "START_STEP")[2].last_user
    assert "more than the limit of 200000" in repair and "<steps>" in repair


def test_fenced_and_prose_wrapped_reply_is_accepted(faulty: Done):
    assert_completed(faulty)
    assert len(_by(faulty, "START_BEHAVIOR")) == 1
    assert statuses(faulty.run, "0003_START_BEHAVIOR.xml") == ["ok"]


def test_raw_lt_and_amp_in_code_are_accepted_by_hardening(faulty: Done):
    assert_completed(faulty)
    assert len(_by(faulty, "COMPLETE_ACTION")) == 1
    assert statuses(faulty.run, "0004_COMPLETE_ACTION.xml") == ["ok"]
    cell = code_cells(faulty.run)[2]
    assert cell.source == RAW_CODE
    assert "a<b && c" in "".join(o.get("text", "") for o in cell.outputs)


def test_truncated_reply_costs_one_repair_round_trip(faulty: Done):
    assert_completed(faulty)
    asked = _by(faulty, "COMPLETE_STEP")
    assert len(asked) == 2
    with pytest.raises(PayloadError) as err:
        parse_payload(_truncated(), "reflection")
    assert "line 1, column" in str(err.value)
    assert str(err.value) in asked[1].last_user and str(err.value) not in asked[0].last_user
    assert statuses(faulty.run, "0005_COMPLETE_STEP.xml") == ["invalid", "ok"]


def test_doctype_with_external_entity_is_refused_repaired_and_leaks_nothing(faulty: Done):
    assert_completed(faulty)
    assert len(_by(faulty, "COMPLETE_STAGE")) == 2
    assert statuses(faulty.run, "0006_COMPLETE_STAGE.xml") == ["invalid", "ok"]
    assert "DOCTYPE/ENTITY declarations are refused" in _by(faulty, "COMPLETE_STAGE")[1].last_user
    events = [json.loads(x) for x in (faulty.run / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events if e.get("type") == "security"] == ["COMPLETE_STAGE"]
    assert files_containing(faulty.run, faulty.canary) == []


# --- transport failures that end the run ------------------------------------------------------


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Done]:
    with FakeLLM() as fake:
        fake.push(*[Reply(delay=3.0) for _ in range(10)])
        done = llm_run(
            fake, tmp_path_factory.mktemp("slow"), "--llm-timeout", "1", where="scripted"
        )
    print(f"\n[timing] timeout exhaustion: bcc wall {done.seconds:.1f} s")
    yield done


def test_slow_replies_are_retried_then_exit_4(slow: Done):
    assert slow.proc.returncode == 4, slow.proc.stderr
    assert len(slow.requests) == 5  # the first call and 4 retries
    assert {r.transition for r in slow.requests} == {"START_WORKFLOW"}
    assert len(slow.lines) == 1 and "--llm-timeout" in slow.lines[0]
    assert fsm_state(slow.run) == "WORKFLOW_ABORTED"


def test_every_timed_out_attempt_is_in_the_log(slow: Done):
    tries = [
        r
        for r in responses(slow.run, "0001_START_WORKFLOW.attempts.xml")
        if r.get("status") == "error" and (r.text or "").startswith("Timeout")
    ]
    assert len(tries) == 5


def test_401_fails_at_once_with_the_key_variable(tmp_path: Path, fault_clock):
    with FakeLLM() as fake:
        fake.push(Reply(401))
        done = llm_run(fake, tmp_path)
        checks = list(fake.key_checks)
    assert done.proc.returncode == 4, done.proc.stderr
    # the key check, made while the kernel boots, answered: no model call was made
    assert [c.path for c in checks] == ["/v1/models"] and done.requests == []
    assert checks[0].headers["authorization"] == "Bearer sk-test"
    assert len(done.lines) == 1 and "OPENAI_API_KEY" in done.lines[0]
    assert "authentication failed" in done.lines[0]
    assert fsm_state(done.run) == "WORKFLOW_ABORTED"  # resumable, as after a refused call
    after = done.started + done.seconds - checks[0].at
    fault_clock(f"401 to exit 4 ({done.seconds:.2f} s for the whole bcc process)", after)
    assert kernels_in(done.run) == []  # the kernel launched at the start was killed


def test_401_from_the_first_call_where_the_key_check_learns_nothing(tmp_path: Path):
    """A server without ``GET /models``: the first call's 401 fails the run, as before."""
    with FakeLLM() as fake:
        fake.serves_models = False
        fake.push(Reply(401))
        done = llm_run(fake, tmp_path)
        checks = list(fake.key_checks)
    assert done.proc.returncode == 4, done.proc.stderr
    assert len(checks) == 1 and len(done.requests) == 1  # checked, then called once
    assert len(done.lines) == 1 and "OPENAI_API_KEY" in done.lines[0]
    assert fsm_state(done.run) == "WORKFLOW_ABORTED"
    assert kernels_in(done.run) == []


def test_an_unknown_provider_found_while_the_kernel_boots_leaves_no_run_and_no_kernel(
    tmp_path: Path,
):
    """The model's backend is built (litellm imported) while the kernel boots; when the model
    string turns out unusable, bcc ends that kernel and removes what it made of the run."""
    problem, data = inputs(tmp_path)
    run = tmp_path / "run"
    proc, _, _ = bcc("run", str(problem), str(data), "--model", "nosuchprovider/x",
                     "--out", str(run), "--no-verify", "--quiet")  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown model provider" in lines[0] and "(fix: " in lines[0]
    assert not run.exists()
    assert kernels_under(tmp_path) == []


def kernels_under(folder: Path) -> list[int]:
    """Pids of ipykernel processes working in ``folder`` or below (removed ones too)."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cwd = os.readlink(proc / "cwd")
            if b"ipykernel" in (proc / "cmdline").read_bytes() and cwd.startswith(str(folder)):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def kernels_in(run_dir: Path) -> list[int]:
    """Pids of ipykernel processes working in ``run_dir``."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"ipykernel" in (proc / "cmdline").read_bytes() and (
                (proc / "cwd").resolve() == run_dir.resolve()
            ):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def test_llm_call_budget_aborts_and_resume_completes(tmp_path: Path):
    with FakeLLM() as fake:
        done = llm_run(fake, tmp_path, "--max-llm-calls", "5", where="scripted")
        assert done.proc.returncode == 7, done.proc.stderr
        assert fsm_state(done.run) == "WORKFLOW_ABORTED"
        assert len(fake.requests) == 5
        proc, _, _ = bcc_scripted("resume", str(done.run), "--max-llm-calls", "100", "--quiet")
        assert proc.returncode == 0, proc.stderr
        assert fsm_state(done.run) == "WORKFLOW_COMPLETED"
        assert [r.transition for r in fake.requests] == AGENT_EVENTS


def test_unknown_provider_exits_4_before_any_run_dir(tmp_path: Path):
    problem, data = inputs(tmp_path)
    out = tmp_path / "never"
    proc, _, _ = bcc_scripted(
        "run", str(problem), str(data), "--model", "nosuchprovider/x", "--out", str(out)
    )
    assert proc.returncode == 4
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "nosuchprovider" in lines[0], proc.stderr
    assert not out.exists()


def test_without_litellm_a_model_run_exits_4_with_the_install_command(tmp_path: Path) -> None:
    problem, data = inputs(tmp_path)
    run = tmp_path / "run"
    code = (
        "import sys; sys.modules['litellm'] = None\n"  # as if it were not installed
        "from notebook_bcc.cli import main\n"
        f"sys.argv = ['bcc', 'run', {str(problem)!r}, {str(data)!r}, '--model', {MODEL!r},"
        f" '--out', {str(run)!r}]\n"
        "main()\n"
    )
    proc = subprocess.run(
        [BCC[0], "-c", code], capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=120
    )
    assert proc.returncode == 4, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: litellm cannot be imported (")
    assert "(fix: pip install litellm" in line
    assert not run.exists()
