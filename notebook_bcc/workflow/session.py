"""Opening a run: a new one (``create_run``), an interrupted one (``resume_run``), or a
completed one asked a follow-up question (``ask_run``).

Each returns a ``Runner`` ready to ``run()``. Creating checks the inputs and the model string
before anything is written; resuming and asking take the run lock, reload the checkpoint, reap
the kernels a killed ``bcc`` left behind and forget what the last transition had not committed.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from notebook_bcc.agents import AgentBeingBuilt, AgentSettings
from notebook_bcc.config import RunConfig
from notebook_bcc.errors import InputError, RunLocked, StorageError, UsageError
from notebook_bcc.inputs.check import check_inputs
from notebook_bcc.inputs.problem import read_problem
from notebook_bcc.kernel.gateway import Gateway
from notebook_bcc.kernel.processes import reap_kernels
from notebook_bcc.kernel.records import VariableInfo
from notebook_bcc.kernel.sandbox import require_for_resume
from notebook_bcc.rundir.notebook import NotebookDocument
from notebook_bcc.rundir.state import FollowUp, WorkflowState
from notebook_bcc.rundir.store import RunStore, slugify
from notebook_bcc.workflow.kernels import KernelFactory, gateway_of
from notebook_bcc.workflow.runner import EventHook, Runner

__all__ = ["ask_run", "create_run", "resume_run", "reap_orphan_kernels", "parameter_variables"]

#: the modules the parameters cell imports (known before the kernel starts)
PARAMETER_MODULES = [["np", "numpy"], ["random", "random"]]


def create_run(
    config: RunConfig,
    problem: Path,
    data: Sequence[Path],
    *,
    out: Path | None = None,
    runs_dir: Path = Path("runs"),
    on_event: EventHook | None = None,
    follow_ups: Sequence[str] = (),
    kernels: KernelFactory | None = None,
) -> Runner:
    """``follow_ups``: questions asked once the run completes, in order (a replay's);
    ``kernels``: where its kernels come from (a test's own, ``workflow/kernels.py``)."""
    check_ranges(config)
    inputs = check_inputs(problem, data)
    spec = read_problem(inputs.problem_text)
    title = spec.title
    slug = slugify(title or inputs.problem.stem)
    root = RunStore.choose_dir(out, runs_dir, slug)
    # its key checked on a thread while the run directory is made and the kernel spawned
    agent = AgentBeingBuilt(
        AgentSettings(config.model, config.api_base, root.name, config.llm_timeout)
    )
    files = [f"assets/{p.name}" for p in inputs.data]
    state = WorkflowState(run_id=root.name, problem_title=title)
    state.ledger.record_namespace(parameter_variables(title, files, config.seed), "parameters")
    state.kernel_code = {"modules": PARAMETER_MODULES, "callables": []}
    with _all_or_nothing(root):
        store = RunStore.create(root, inputs.problem, inputs.data)
        doc = NotebookDocument.create(
            title, title, files, config.seed, store_writer(store), question=spec.text
        )
        store.write_json("config.json", {**config.to_json(), "files": files})
        for text in follow_ups:
            _keep_follow_up(store, state, text)
        doc.save()
        store.write_checkpoint(state.to_json())
        runner = Runner(
            config,
            store,
            state,
            doc,
            problem_text=inputs.problem_text,
            files=files,
            on_event=on_event,
            agent=agent,
            kernels=kernels,
        )
        local = config.is_offline or config.model.startswith("replay:")  # built at once
        if not local and agent.refusal() is None:  # litellm's import (below): while it boots
            runner.host.launch()
        try:
            runner.agent = agent.settled()  # an unusable model string (exit 4): nothing kept
        except BaseException:
            runner.host.shutdown(now=True)
            raise
    return runner  # the run exists from here on


def replay_run(
    run_dir: Path,
    out: Path,
    on_event: EventHook | None = None,
    kernels: KernelFactory | None = None,
) -> Runner:
    """A new run at ``out`` that answers every transition with the reply recorded in
    ``run_dir`` (no model): the recorded run's options, data files and planned follow-ups."""
    try:
        saved = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = None
    if not isinstance(saved, dict):
        raise UsageError(
            f"{run_dir} is not a bcc run directory", remedy="pass a directory made by `bcc run`"
        )
    files = saved.pop("files", None)  # in the order the run was given them
    config = RunConfig.from_json(saved).with_budgets(model=f"replay:{run_dir}")
    data = [run_dir / f for f in files] if files else sorted((run_dir / "assets").iterdir())
    try:  # a damaged checkpoint: the recorded replies are in logs/, without follow-ups
        recorded = json.loads((run_dir / "state.json").read_text()).get("follow_ups", [])
    except (OSError, ValueError):
        recorded = []
    return create_run(
        config,
        run_dir / "problem.md",
        data,
        out=out,
        on_event=on_event,
        follow_ups=[f["text"] for f in recorded if f.get("seq")],  # those that were planned
        kernels=kernels,
    )


@contextlib.contextmanager
def _all_or_nothing(root: Path) -> Iterator[None]:
    """Creating the run directory ``root``: on any failure (a full disk) what was made of it
    is removed (an empty ``--out`` stays, empty), so the same command works once it is fixed;
    a StorageError then says to run again, as there is nothing to resume."""
    existed = root.exists()
    try:
        yield
    except BaseException as exc:
        made = list(root.iterdir()) if existed and root.is_dir() else [root]
        for path in made:  # the lock file too (its descriptor closes with the process)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()
        if isinstance(exc, StorageError):
            exc.remedy = "free disk space or choose a writable --out, then run the command again "
            exc.remedy += "(nothing of the run was kept)"
        raise


def resume_run(
    run_dir: Path,
    *,
    budgets: dict[str, Any] | None = None,
    on_event: EventHook | None = None,
    kernels: KernelFactory | None = None,
) -> Runner:
    store, config, state, doc, files = _reopen(run_dir, budgets or {})
    return _runner(store, config, state, doc, files, on_event, kernels)


def ask_run(
    run_dir: Path,
    question: str,
    *,
    budgets: dict[str, Any] | None = None,
    on_event: EventHook | None = None,
    kernels: KernelFactory | None = None,
) -> Runner:
    """A completed run, asked ``question``: its text is kept in ``follow_ups/<n>.md`` and the
    checkpoint records it, so a follow-up killed before its stages were planned resumes."""
    if not question.strip():
        raise UsageError(
            "the follow-up question is empty",
            remedy='give it as `bcc ask RUN_DIR "QUESTION"` or with `--file follow_up.md`',
        )
    store, config, state, doc, files = _reopen(run_dir, budgets or {}, asking=True)
    try:
        n = _keep_follow_up(store, state, question)
        store.write_checkpoint(state.to_json())
        store.append_event({"type": "follow_up", "n": n, "seq": state.seq})
    except BaseException:
        store.unlock()
        raise
    return _runner(store, config, state, doc, files, on_event, kernels)


def _keep_follow_up(store: RunStore, state: WorkflowState, text: str) -> int:
    """Record a follow-up in ``follow_ups/<n>.md`` and the state; its number."""
    n = len(state.follow_ups) + 1
    (store.root / "follow_ups").mkdir(exist_ok=True)
    store.write(f"follow_ups/{n}.md", text.strip() + "\n")
    state.follow_ups.append(FollowUp(text.strip()))
    return n


def _reopen(
    run_dir: Path, budgets: dict[str, Any], *, asking: bool = False
) -> tuple[RunStore, RunConfig, WorkflowState, NotebookDocument, list[str]]:
    """Lock the run, load its checkpoint and notebook, reap its orphan kernels and forget
    what the last transition had not committed. ``asking``: only a completed run."""
    store = RunStore.open(run_dir)
    saved = store.read_json("config.json")
    files = saved.pop("files")
    config = RunConfig.from_json(saved).with_budgets(**budgets)
    check_ranges(config)
    require_for_resume(config.sandbox)  # a sandboxed run never goes on unconfined
    try:
        store.lock()
    except RunLocked as exc:
        if not asking:
            raise
        raise UsageError(
            f"{run_dir} is still running ({exc})", remedy="ask once it has completed"
        ) from None
    try:
        state = WorkflowState.from_json(store.read_json("state.json"))
        if asking:
            _check_askable(run_dir, state)
    except (UsageError, InputError):  # (ValueErrors too) a damaged state.json says so itself
        store.unlock()
        raise
    except ValueError as exc:
        store.unlock()
        raise InputError(
            f"{run_dir}/state.json cannot be resumed: {exc}",
            remedy="resume it with the bcc version that wrote it, or start a new `bcc run`",
        ) from None
    doc = NotebookDocument.load(store.read_text("notebook.ipynb"), store_writer(store))
    reap_orphan_kernels(store, gateway_of(config))
    store.redact_file("kernel.log")  # a killed bcc's kernels wrote it last
    # an ABORT (or FAIL) adds no cells and takes the seq its unfinished transition would
    # have had: cells with that seq are the unfinished transition's, kept on disk when the
    # abort's own notebook write failed (disk still full)
    ended = state.fsm_state in ("WORKFLOW_ABORTED", "WORKFLOW_FAILED")
    uncommitted = doc.cells_after(state.seq - 1 if ended else state.seq)
    for i in reversed(uncommitted):  # cells of a transition the crash left unfinished
        doc.remove(i)
    undone = store.recover(state.seq)
    store.append_event(
        {
            "type": "resume",
            "seq": state.seq,
            "dropped_cells": len(uncommitted),
            "abandoned_logs": list(undone.abandoned_logs),
            "dropped_events": undone.dropped_events,
        }
    )
    return store, config, state, doc, files


def _check_askable(run_dir: Path, state: WorkflowState) -> None:
    """Only a completed run takes a follow-up (UsageError, exit 2, says what to do)."""
    if state.asked is not None:
        raise UsageError(
            f"{run_dir} has a follow-up not yet answered ({state.asked.title!r})",
            remedy=f"`bcc resume {run_dir}` answers it first",
        )
    if state.fsm_state == "WORKFLOW_COMPLETED":
        return
    why = {
        "WORKFLOW_ABORTED": "was interrupted",
        "WORKFLOW_FAILED": "failed",
    }.get(state.fsm_state, f"stopped mid-way ({state.fsm_state.value})")
    remedy = (
        "start a new `bcc run`: a failed run takes no follow-up"
        if state.fsm_state == "WORKFLOW_FAILED"
        else f"`bcc resume {run_dir}` completes it first"
    )
    raise UsageError(f"{run_dir} {why}: only a completed run takes a follow-up", remedy=remedy)


def _runner(
    store: RunStore,
    config: RunConfig,
    state: WorkflowState,
    doc: NotebookDocument,
    files: list[str],
    on_event: EventHook | None,
    kernels: KernelFactory | None,
) -> Runner:
    problem_text = store.read_text("problem.md")
    return Runner(
        config,
        store,
        state,
        doc,
        problem_text=problem_text,
        files=files,
        on_event=on_event,
        resumed=True,
        kernels=kernels,
    )


def check_ranges(config: RunConfig) -> None:
    """Refuse (exit 2) a setting out of its range before anything is written."""
    wrong = config.out_of_range()
    if wrong:
        raise UsageError("; ".join(wrong), remedy="see `bcc run --help` for each option")


def store_writer(store: RunStore) -> Callable[[str], None]:
    return lambda text: store.write("notebook.ipynb", text)


def reap_orphan_kernels(store: RunStore, gateway: Gateway | None = None) -> list[int]:
    """Kill the kernels an earlier, killed bcc left behind for this run (on the gateway too);
    return the local pids.

    Called with the run lock held, so no live bcc owns them.
    """
    events = [e for e in store.events() if e.get("type") == "kernel"]
    # a line without ``started`` (written by an older bcc, or forged) names nothing to kill
    reaped = reap_kernels([(e.get("pid"), e.get("started")) for e in events])
    if reaped:
        store.append_event({"type": "orphans_reaped", "pids": reaped})
    remote = [e["gateway_kernel"] for e in events if e.get("gateway_kernel")]
    if gateway is not None and remote:
        removed = gateway.shut_down(remote)
        if removed:
            store.append_event({"type": "orphans_reaped", "gateway_kernels": removed})
    return reaped


def parameter_variables(title: str, files: Sequence[str], seed: int) -> list[VariableInfo]:
    """The parameters cell's variables, known before the kernel starts (it starts lazily), so
    the first planners see ``user_submit_files`` in the ledger."""
    values: list[tuple[str, Any]] = [
        ("user_problem", title),
        ("user_submit_files", list(files)),
        ("seed", seed),
    ]
    return [
        VariableInfo(
            name,
            type(v).__name__,
            None,
            len(v) if isinstance(v, list | str) else None,
            (),
            0,
            repr(v),
        )
        for name, v in values
    ]
