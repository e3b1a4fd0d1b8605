"""``bcc batch``: the command line of a batch (``cli`` registers ``batch``).

Any option of ``bcc run`` given after the manifest is every row's default; a manifest column
of the same name overrides it for its row. The option names are read from ``bcc run`` itself,
so the two never disagree.
"""

from __future__ import annotations

import signal
import traceback
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from notebook_bcc.errors import BccError, SigtermReceived, UsageError

__all__ = ["BATCH_SETTINGS", "batch"]

#: the batch takes ``bcc run``'s options as they come
BATCH_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True}
#: ``bcc run`` options the batch sets itself (or that mean nothing for one of its runs)
_OWN = {"out", "runs-dir", "quiet", "json", "debug", "max-cost-usd", "help"}


class ExecutorKind(str, Enum):
    local = "local"
    dask = "dask"


@dataclass(frozen=True)
class RunOption:
    flag: bool
    off: str | None = None  # a flag's negative form (``--no-sandbox``), if it has one


Opt = Annotated


def batch(
    ctx: typer.Context,
    manifest: Opt[
        Path, typer.Argument(help="CSV or JSON Lines: problem, data, optional id and run options")
    ],
    jobs: Opt[int, typer.Option(help="runs at once (local) or in flight (dask)")] = 2,
    out: Opt[
        Path | None,
        typer.Option(
            help="batch directory: results.jsonl, results.csv, index.html "
            "(default: runs/MANIFEST_NAME-batch)"
        ),
    ] = None,
    runs_dir: Opt[
        Path | None,
        typer.Option(
            help="where each row's run directory (named by its id) goes (default: "
            "OUT/runs); with dask, a path every worker can write"
        ),
    ] = None,
    executor: Opt[ExecutorKind, typer.Option(help="local | dask")] = ExecutorKind.local,
    scheduler: Opt[str | None, typer.Option(help="the Dask scheduler, tcp://HOST:8786")] = None,
    max_cost_usd: Opt[float | None, typer.Option(help="USD bound for the whole batch")] = None,
    retry_failed: Opt[
        bool, typer.Option("--retry-failed", help="run failed rows again (kept as ID.old-N)")
    ] = False,
    quiet: Opt[bool, typer.Option("--quiet", help="print only the final line")] = False,
    as_json: Opt[bool, typer.Option("--json", help="one JSON record per finished run")] = False,
    debug: Opt[bool, typer.Option("--debug", help="show tracebacks")] = False,
) -> None:
    """Run every row of MANIFEST as its own `bcc run`; skip completed runs, resume aborted.

    Options of `bcc run` after MANIFEST are defaults; a manifest column overrides its row.
    """
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        outcome = _batch(ctx, manifest, jobs, out, runs_dir, executor.value, scheduler,
                         max_cost_usd, retry_failed, quiet, as_json)  # fmt: skip
    except (typer.Exit, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - translated at the edge
        if debug:
            traceback.print_exception(exc)
        if isinstance(exc, SigtermReceived):
            exc = BccError.from_exception(exc)
        elif isinstance(exc, KeyboardInterrupt):
            exc = BccError("batch interrupted (Ctrl-C)")
            exc.exit_code = 130
        if not isinstance(exc, BccError):
            cause = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            exc = BccError(f"internal error: {cause}")
        typer.echo(exc.one_line(), err=True)
        raise typer.Exit(exc.exit_code) from None
    typer.echo(outcome.message, err=outcome.exit_code != 0 and not quiet)
    raise typer.Exit(outcome.exit_code)


def _batch(ctx: typer.Context, manifest: Path, jobs: int, out: Path | None,
           runs_dir: Path | None, kind: str, scheduler: str | None, max_cost_usd: float | None,
           retry_failed: bool, quiet: bool, as_json: bool) -> Any:  # fmt: skip
    from notebook_bcc.batch.attempt import RunTask
    from notebook_bcc.batch.driver import Batch
    from notebook_bcc.batch.executors import make_executor
    from notebook_bcc.batch.manifest import read_manifest
    from notebook_bcc.batch.progress import BatchProgress

    if jobs < 1:
        raise UsageError(f"--jobs {jobs} is below 1", remedy="pass --jobs 1 or more")
    if max_cost_usd is not None and max_cost_usd < 0:
        raise UsageError("--max-cost-usd is negative", remedy="pass a bound of 0 or more")
    run_cmd, resume_cmd = (ctx.parent.command.get_command(ctx, n) for n in ("run", "resume"))  # type: ignore[union-attr]
    options = _options_of(run_cmd)
    resumable = set(_options_of(resume_cmd))
    defaults = _parse(list(ctx.args), options)
    rows = read_manifest(manifest, {name: o.flag for name, o in options.items()})
    out = out or Path("runs") / f"{manifest.stem}-batch"
    runs_dir = (runs_dir or out / "runs").resolve()
    runs_dir.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    tasks = []
    for row in rows:
        chosen = {**defaults, **dict(row.options)}
        tasks.append(
            RunTask(
                id=row.id,
                run_dir=runs_dir / row.id,
                run_args=(str(row.problem), *map(str, row.data), *_argv(chosen, options)),
                resume_args=tuple(
                    _argv({k: v for k, v in chosen.items() if k in resumable}, options)
                ),
                retry_failed=retry_failed,
                log=(out / "logs" / f"{row.id}.txt").resolve(),
            )
        )
    with BatchProgress(len(tasks), quiet=quiet, as_json=as_json) as progress:
        return Batch(
            tasks,
            make_executor(kind, jobs, scheduler),
            out,
            jobs=jobs,
            max_cost_usd=max_cost_usd,
            on_record=progress,
        ).run()


def _options_of(command: Any) -> dict[str, RunOption]:
    """A command's options by long name (no dashes in front), apart from the batch's own."""
    found = {}
    for param in command.params:
        long = [o for o in param.opts if o.startswith("--")]
        if not long or param.param_type_name != "option":
            continue
        name = long[0][2:]
        if name not in _OWN:
            off = next((o for o in param.secondary_opts if o.startswith("--")), None)
            found[name] = RunOption(bool(param.is_flag), off)
    return found


def _parse(args: list[str], options: dict[str, RunOption]) -> dict[str, str]:
    """``--name value`` / ``--name=value`` / ``--flag`` / ``--no-flag`` into name -> text."""
    offs = {o.off[2:]: name for name, o in options.items() if o.off}
    chosen: dict[str, str] = {}
    while args:
        token = args.pop(0)
        word, eq, value = token[2:].partition("=")
        if not token.startswith("--") or (word not in options and word not in offs):
            raise UsageError(
                f"'{token}' is not an option of `bcc batch` or `bcc run`",
                remedy="see `bcc batch --help` and `bcc run --help`",
            )
        if word in offs:
            chosen[offs[word]] = "false"
        elif options[word].flag:
            chosen[word] = "true"
        elif eq:
            chosen[word] = value
        elif args:
            chosen[word] = args.pop(0)
        else:
            raise UsageError(f"{token} needs a value", remedy=f"pass {token} VALUE")
    return chosen


def _argv(chosen: dict[str, str], options: dict[str, RunOption]) -> list[str]:
    argv = []
    for name, value in chosen.items():
        option = options[name]
        if not option.flag:
            argv += [f"--{name}", value]
        elif value == "true":
            argv.append(f"--{name}")
        elif option.off:
            argv.append(option.off)
    return argv


def _on_sigterm(signum: int, frame: Any) -> None:
    raise SigtermReceived("batch terminated")
