"""The ``bcc`` command line: a thin typer layer over the library.

Options become a RunConfig; errors become one line with a remedy and the exit code of
``errors.BccError`` (``--debug`` shows the traceback instead).
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from notebook_bcc import fsm
from notebook_bcc.batch.command import BATCH_SETTINGS, batch
from notebook_bcc.command_run import fail as _fail
from notebook_bcc.command_run import run_command as _run
from notebook_bcc.config import DEFAULTS
from notebook_bcc.errors import PayloadError, UsageError

# jsonschema (under nbformat) imports a checker for each string format whose library is
# installed (jupyter_server's dependencies bring them), for checks no notebook schema uses:
# rfc3987_syntax ("iri") builds ~35 parsers on import, about 1 s of every bcc start
# (python-jsonschema/jsonschema#1428); rfc3986_validator ("uri") compiles its regexes, 22 ms;
# isoduration ("duration") pulls in arrow, 11 ms. The CLI's process declines them (jsonschema
# then skips those formats); a program importing notebook_bcc as a library is left alone.
for _unused_format_checker in ("rfc3987_syntax", "rfc3986_validator", "isoduration"):
    sys.modules.setdefault(_unused_format_checker, None)  # type: ignore[arg-type]

app = typer.Typer(
    name="bcc",
    help="Turn a written analysis problem and data files into a finished Jupyter notebook.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts say "[default: …]" literally: no markup to strip it
)


class StepFailure(str, Enum):
    continue_ = "continue"
    abort = "abort"


DEFAULT_STEP_FAILURE = StepFailure(DEFAULTS.on_step_failure)
Rounds = Enum("Rounds", {r: r for r in ("compact", "full")}, type=str)  # type: ignore[misc]
DEFAULT_ROUNDS = Rounds(DEFAULTS.rounds)


#: ``bcc validate --kind``: the payload roots of the transition table
Kind = Enum("Kind", {t.root: t.root for t in fsm.TRANSITIONS if t.root}, type=str)  # type: ignore[misc]


Opt = Annotated
# the output flags every running command shares
Quiet = Opt[bool, typer.Option("--quiet", help="print only the final line")]
JsonEvents = Opt[bool, typer.Option("--json", help="one JSON event per line on stdout")]
Debug = Opt[bool, typer.Option("--debug", help="show tracebacks")]
KeepGatewayFiles = Opt[
    bool,
    typer.Option(
        "--keep-gateway-files", help="leave the kernels' working directories on the gateway"
    ),
]


@app.command()
def run(
    problem: Opt[Path, typer.Argument(help="problem.md: the question, optional YAML front matter")],
    data: Opt[
        list[Path],
        typer.Argument(
            help="data file(s): CSV, TSV, Excel, Parquet, Feather, JSON (Lines), gzipped text"
        ),
    ],
    model: Opt[
        str | None, typer.Option(help="offline | replay:RUN_DIR | litellm model [env BCC_MODEL]")
    ] = None,
    api_base: Opt[str | None, typer.Option(help="base URL of an OpenAI-compatible server")] = None,
    out: Opt[Path | None, typer.Option(help="run directory (new or empty)")] = None,
    runs_dir: Opt[Path, typer.Option(help="parent of timestamped run directories")] = Path("runs"),
    seed: Opt[int, typer.Option(help="seed for random/numpy and the analyst")] = DEFAULTS.seed,
    cell_timeout: Opt[
        float, typer.Option(help="seconds per cell before it is interrupted")
    ] = DEFAULTS.cell_timeout,
    max_behaviors_per_step: Opt[int, typer.Option(help="G3 cap")] = DEFAULTS.max_behaviors_per_step,
    max_steps_per_stage: Opt[int, typer.Option(help="G3 cap")] = DEFAULTS.max_steps_per_stage,
    max_stages: Opt[int, typer.Option(help="G3 cap")] = DEFAULTS.max_stages,
    max_alternatives: Opt[
        int, typer.Option(help="branches of a fork, each in its own kernel (1: no forks)")
    ] = DEFAULTS.max_alternatives,
    max_llm_calls: Opt[int | None, typer.Option(help="G6 budget: model calls")] = None,
    max_cost_usd: Opt[float | None, typer.Option(help="G6 budget: USD")] = None,
    max_wall_s: Opt[float | None, typer.Option(help="G6 budget: wall seconds")] = None,
    max_repairs: Opt[
        int, typer.Option(help="re-asks after an invalid reply")
    ] = DEFAULTS.max_repairs,
    max_kernel_restarts: Opt[
        int, typer.Option(help="kernel restarts (crash, hung cell) before exit 5")
    ] = DEFAULTS.max_kernel_restarts,
    llm_timeout: Opt[float, typer.Option(help="seconds per model call")] = DEFAULTS.llm_timeout,
    on_step_failure: Opt[
        StepFailure, typer.Option(help="continue | abort at a capped step")
    ] = DEFAULT_STEP_FAILURE,
    rounds: Opt[
        Rounds, typer.Option(help="compact: a reply may answer the next transitions | full")
    ] = DEFAULT_ROUNDS,
    keep_failed_cells: Opt[
        bool, typer.Option("--keep-failed-cells", help="keep failed code in the notebook")
    ] = DEFAULTS.keep_failed_cells,
    no_verify: Opt[bool, typer.Option("--no-verify", help="skip the final re-execution")] = False,
    free_deprecated: Opt[bool, typer.Option(help="delete safe deprecated variables")] = (
        DEFAULTS.free_deprecated
    ),
    sandbox: Opt[
        bool | None,
        typer.Option(
            "--sandbox/--no-sandbox",
            help="run the kernel in bubblewrap: nothing of the host, only outputs/ writable "
            "[default: on for models (required unless --no-sandbox), off for offline]",
            show_default=False,
        ),
    ] = None,
    sandbox_memory_mb: Opt[int | None, typer.Option(help="memory per process, MiB")] = None,
    sandbox_max_processes: Opt[int | None, typer.Option(help="processes (not root's)")] = None,
    sandbox_max_file_mb: Opt[int | None, typer.Option(help="largest file written, MiB")] = None,
    kernel_gateway: Opt[
        str | None,
        typer.Option(
            envvar="BCC_KERNEL_GATEWAY",
            help="start kernels on this Jupyter Kernel/Enterprise Gateway URL (token: "
            "$BCC_KERNEL_GATEWAY_TOKEN)",
        ),
    ] = None,
    kernel_data_dir: Opt[
        str | None,
        typer.Option(help="with a gateway: a directory its kernels can read holding the data"),
    ] = None,
    keep_gateway_files: KeepGatewayFiles = False,
    quiet: Quiet = False,
    as_json: JsonEvents = False,
    debug: Debug = False,
) -> None:
    """Run a new analysis: PROBLEM and DATA files -> a run directory with notebook.ipynb."""
    from notebook_bcc.config import RunConfig, default_model
    from notebook_bcc.kernel.gateway import check_upload
    from notebook_bcc.kernel.sandbox import UNSANDBOXED, choose
    from notebook_bcc.workflow import session

    def make(hook: Any) -> Any:
        chosen = model or default_model()
        if kernel_gateway:
            check_upload([p for p in data if p.is_file()], kernel_data_dir)
        sandboxed = choose(sandbox, chosen, remote=bool(kernel_gateway))
        if sandbox is None and not sandboxed and chosen != "offline" and not kernel_gateway:
            typer.echo(f"warning: {UNSANDBOXED}", err=True)
        config = RunConfig(
            model=chosen,
            api_base=api_base,
            seed=seed,
            cell_timeout=cell_timeout,
            max_behaviors_per_step=max_behaviors_per_step,
            max_steps_per_stage=max_steps_per_stage,
            max_stages=max_stages,
            max_alternatives=max_alternatives,
            max_llm_calls=max_llm_calls,
            max_cost_usd=max_cost_usd,
            max_wall_s=max_wall_s,
            max_repairs=max_repairs,
            max_kernel_restarts=max_kernel_restarts,
            llm_timeout=llm_timeout,
            on_step_failure=on_step_failure.value,
            rounds=rounds.value,
            keep_failed_cells=keep_failed_cells,
            verify=not no_verify,
            free_deprecated=free_deprecated,
            sandbox=sandboxed,
            kernel_gateway=kernel_gateway,
            kernel_data_dir=kernel_data_dir,
            keep_gateway_files=keep_gateway_files,
        ).with_budgets(
            sandbox_memory_mb=sandbox_memory_mb,
            sandbox_max_processes=sandbox_max_processes,
            sandbox_max_file_mb=sandbox_max_file_mb,
        )
        return session.create_run(config, problem, data, out=out, runs_dir=runs_dir, on_event=hook)

    _run(make, quiet, as_json, debug)


@app.command()
def resume(
    run_dir: Opt[Path, typer.Argument(help="a run directory")],
    max_llm_calls: Opt[int | None, typer.Option(help="new G6 budget: model calls")] = None,
    max_cost_usd: Opt[float | None, typer.Option(help="new G6 budget: USD")] = None,
    max_wall_s: Opt[float | None, typer.Option(help="new G6 budget: wall seconds")] = None,
    max_kernel_restarts: Opt[int | None, typer.Option(help="new kernel restart budget")] = None,
    keep_gateway_files: KeepGatewayFiles = False,
    quiet: Quiet = False,
    as_json: JsonEvents = False,
    debug: Debug = False,
) -> None:
    """Continue a run from its last checkpoint (fresh kernel, notebook replayed)."""
    from notebook_bcc.workflow import session

    budgets = {
        "max_llm_calls": max_llm_calls,
        "max_cost_usd": max_cost_usd,
        "max_wall_s": max_wall_s,
        "max_kernel_restarts": max_kernel_restarts,
        "keep_gateway_files": keep_gateway_files or None,  # None: as the run was started
    }
    _run(
        lambda hook: session.resume_run(run_dir, budgets=budgets, on_event=hook),
        quiet,
        as_json,
        debug,
    )


@app.command()
def ask(
    run_dir: Opt[Path, typer.Argument(help="a completed run directory")],
    question: Opt[str | None, typer.Argument(help="the follow-up question")] = None,
    file: Opt[Path | None, typer.Option(help="read a longer follow-up from this file")] = None,
    model: Opt[
        str | None, typer.Option(help="the model for the follow-up [default: the run's]")
    ] = None,
    api_base: Opt[
        str | None, typer.Option(help="base URL of an OpenAI-compatible server [the run's]")
    ] = None,
    max_llm_calls: Opt[int | None, typer.Option(help="new G6 budget: model calls")] = None,
    max_cost_usd: Opt[float | None, typer.Option(help="new G6 budget: USD")] = None,
    max_wall_s: Opt[float | None, typer.Option(help="new G6 budget: wall seconds")] = None,
    max_kernel_restarts: Opt[int | None, typer.Option(help="new kernel restart budget")] = None,
    quiet: Quiet = False,
    as_json: JsonEvents = False,
    debug: Debug = False,
) -> None:
    """Ask a completed run a follow-up question: new stages in the same notebook, built on
    its kernel's variables, answered next to the earlier answers."""
    from notebook_bcc.workflow import session

    def make(hook: Any) -> Any:
        if (question is None) == (file is None):
            raise UsageError(
                "give the follow-up either as QUESTION or with --file, not both or neither",
                remedy='`bcc ask RUN_DIR "Which island has the most penguins?"`',
            )
        try:
            text = question if file is None else file.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"cannot read {file}: {exc.strerror}", remedy="check the path"
            ) from None
        budgets = {
            "model": model,
            "api_base": api_base,
            "max_llm_calls": max_llm_calls,
            "max_cost_usd": max_cost_usd,
            "max_wall_s": max_wall_s,
            "max_kernel_restarts": max_kernel_restarts,
        }
        return session.ask_run(run_dir, text or "", budgets=budgets, on_event=hook)

    _run(make, quiet, as_json, debug)


app.command(context_settings=BATCH_SETTINGS)(batch)


@app.command()
def replay(
    run_dir: Opt[Path, typer.Argument(help="a recorded run directory")],
    out: Opt[Path, typer.Option(help="the new run directory")],
    quiet: Quiet = False,
    as_json: JsonEvents = False,
    debug: Debug = False,
) -> None:
    """Re-run a recorded run with its recorded replies (no model)."""
    from notebook_bcc.workflow import session

    _run(lambda hook: session.replay_run(run_dir, out, on_event=hook), quiet, as_json, debug)


@app.command()
def status(
    run_dir: Opt[Path, typer.Argument(help="a run directory")],
    as_json: Opt[bool, typer.Option("--json", help="the status as one JSON object")] = False,
) -> None:
    """State, location, plan progress, ledger and costs of a run."""
    from notebook_bcc.rundir.status import status_json, status_text

    try:
        typer.echo(json.dumps(status_json(run_dir), indent=2) if as_json else status_text(run_dir))
    except BaseException as exc:  # noqa: BLE001 - translated at the edge
        _fail(exc, False)


@app.command()
def report(run_dir: Opt[Path, typer.Argument(help="a run directory")]) -> None:
    """Write RUN_DIR/report.html: the whole run in one self-contained page."""
    from notebook_bcc.rundir.report import write_report
    from notebook_bcc.rundir.store import RunStore

    try:
        typer.echo(str(write_report(RunStore.open(run_dir))))
    except BaseException as exc:  # noqa: BLE001 - translated at the edge
        _fail(exc, False)


@app.command()
def logs(
    run_dir: Opt[Path, typer.Argument(help="a run directory")],
    seq: Opt[int | None, typer.Argument(help="show this transition")] = None,
) -> None:
    """List the transitions of a run, or show one."""
    from notebook_bcc.rundir.status import log_list, log_show

    try:
        typer.echo(log_list(run_dir) if seq is None else log_show(run_dir, seq))
    except BaseException as exc:  # noqa: BLE001 - translated at the edge
        _fail(exc, False)


@app.command()
def validate(
    file: Opt[Path, typer.Argument(help="an XML payload file")],
    kind: Opt[Kind | None, typer.Option(help="expected root (default: inferred)")] = None,
    debug: Debug = False,
) -> None:
    """Check an agent payload against the XML contract (exit 0 valid, 6 invalid)."""
    from notebook_bcc.contract.payloads import parse_payload

    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        _fail(UsageError(f"cannot read {file}: {exc.strerror}", remedy="check the path"), debug)
    try:
        parsed = parse_payload(text, kind.value if kind else None)
    except PayloadError as exc:
        _fail(exc, debug)
    note = " (after hardening)" if parsed.hardened else ""
    typer.echo(f"valid <{parsed.kind}>{note}")


def _usage_error(exc: Any) -> int:
    """A usage error as one line (``bcc`` or a command alone shows its help); its exit code."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        exc.show()
        return int(exc.exit_code)
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "bcc"
    cause = " ".join(exc.format_message().split())
    typer.echo(f"error: {cause} (fix: see `{command} --help`)", err=True)
    return int(exc.exit_code)


def invoke(args: list[str] | None = None) -> int:
    """Run one ``bcc`` command in this process; its exit code (``main`` without the exit)."""
    try:
        returned = app(args=args, prog_name="bcc", standalone_mode=False)
        return returned if isinstance(returned, int) else 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except typer.Abort:
        typer.echo("error: aborted", err=True)
        return 1
    except typer.TyperException as exc:  # click's usage errors (typer vendors click)
        return _usage_error(exc)


def main() -> None:
    """The ``bcc`` entry point: ``invoke`` plus a fast exit.

    Every file is written and closed and every kernel shut down by the time ``app`` returns;
    the interpreter's teardown of the modules a run loads (pandas, litellm) would only add
    0.2-0.5 s to each exit, errors included. So the exit handlers run (logging flushes, a
    library-level kernel shuts down), the streams are flushed and the process ends with
    ``os._exit``.
    """
    code = invoke()
    from notebook_bcc.kernel.processes import kill_live_kernels

    atexit._run_exitfuncs()
    kill_live_kernels()  # none are left on any normal path; this makes sure
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
