"""Opening a run: a new one (``create_run``) or an interrupted one (``resume_run``).

Both return a ``Runner`` ready to ``run()``. Creating checks the inputs and the model string
before anything is written; resuming takes the run lock, reloads the checkpoint, reaps the
kernels a killed ``bcc`` left behind and forgets what the last transition had not committed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from notebook_bcc.agents import make_agent
from notebook_bcc.config import RunConfig
from notebook_bcc.errors import InputError, UsageError
from notebook_bcc.inputs.check import check_inputs
from notebook_bcc.inputs.problem import read_problem
from notebook_bcc.kernel.gateway import Gateway
from notebook_bcc.kernel.processes import reap_kernels
from notebook_bcc.kernel.records import VariableInfo
from notebook_bcc.rundir.notebook import NotebookDocument
from notebook_bcc.rundir.state import WorkflowState
from notebook_bcc.rundir.store import RunStore, slugify
from notebook_bcc.workflow.host import gateway_of
from notebook_bcc.workflow.runner import EventHook, Runner

__all__ = ["create_run", "resume_run", "reap_orphan_kernels", "parameter_variables"]

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
) -> Runner:
    check_ranges(config)
    inputs = check_inputs(problem, data)
    spec = read_problem(inputs.problem_text)
    title = spec.title
    slug = slugify(title or inputs.problem.stem)
    root = RunStore.choose_dir(out, runs_dir, slug)
    agent = make_agent(
        config.model, api_base=config.api_base, run_id=root.name, timeout=config.llm_timeout
    )  # fails (exit 4) before anything is created when the model string is unusable
    store = RunStore.create(root, inputs.problem, inputs.data)
    files = [f"assets/{p.name}" for p in inputs.data]
    state = WorkflowState(run_id=root.name, problem_title=title)
    state.ledger.observe(parameter_variables(title, files, config.seed), "parameters")
    state.kernel_code = {"modules": PARAMETER_MODULES, "callables": []}
    doc = NotebookDocument.create(
        title, title, files, config.seed, store_writer(store), question=spec.text
    )
    store.write_json("config.json", {**config.to_json(), "files": files})
    doc.save()
    store.write_checkpoint(state.to_json())
    return Runner(
        config,
        store,
        state,
        doc,
        problem_text=inputs.problem_text,
        files=files,
        on_event=on_event,
        agent=agent,
    )


def resume_run(
    run_dir: Path,
    *,
    budgets: dict[str, Any] | None = None,
    on_event: EventHook | None = None,
) -> Runner:
    store = RunStore.open(run_dir)
    saved = store.read_json("config.json")
    files = saved.pop("files")
    config = RunConfig.from_json(saved).with_budgets(**(budgets or {}))
    check_ranges(config)
    store.lock()
    try:
        state = WorkflowState.from_json(store.read_json("state.json"))
    except ValueError as exc:
        store.unlock()
        raise InputError(
            f"{run_dir}/state.json cannot be resumed: {exc}",
            remedy="resume it with the bcc version that wrote it, or start a new `bcc run`",
        ) from None
    doc = NotebookDocument.load(
        (store.root / "notebook.ipynb").read_text(encoding="utf-8"), store_writer(store)
    )
    reap_orphan_kernels(store, gateway_of(config))
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
    problem_text = (store.root / "problem.md").read_text(encoding="utf-8")
    return Runner(
        config,
        store,
        state,
        doc,
        problem_text=problem_text,
        files=files,
        on_event=on_event,
        resumed=True,
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
    reaped = reap_kernels([(e["pid"], e.get("pgid") or 0) for e in events if e.get("pid")])
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
