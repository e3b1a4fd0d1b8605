"""The library: run an analysis from Python, open a run, read what it found as Python values.

```python
import notebook_bcc

run = notebook_bcc.run("examples/penguins/problem.md", ["examples/penguins/penguins.csv"])
run.state                     # 'WORKFLOW_COMPLETED'
run.answers[0].value          # an answer's headline, as the kernel held it
run.answers[0].named          # its named values: {'mean_body_mass_g': 4201.75, ...}
follow = notebook_bcc.open_run(run.path).ask("Which island has the most penguins?")
follow.answers[-1].value      # 'Biscoe'
```

``run`` does what ``bcc run`` does (the same options, as keyword arguments named like
``RunConfig``'s fields) and returns a :class:`Run` whatever the outcome: a run that stopped
(a budget, a failed verification) is a ``Run`` too, with its ``exit_code`` and ``message``.
Bad input and failures that leave no run raise the ``BccError`` the CLI would print
(``UsageError`` is a ``ValueError``, ``InputError`` a ``ValueError``, ...). A run that
starts and then stops (a budget, the provider, Ctrl-C) returns its ``Run``, aborted and
resumable (``run.resume()``), with the exit code ``bcc`` would give (7, 4, 130). The
library installs no signal handler.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notebook_bcc.rundir.results import Answer, readings_of, value_text

__all__ = ["Run", "open_run", "run"]


def _answer(data: dict[str, Any]) -> Answer:
    values = data.get("values") or {}
    return Answer(
        question=str(data.get("question", "")),
        value=data.get("value"),
        text=str(data.get("text") or ""),
        answered=bool(data.get("answered")),
        values=tuple(values.items()),
        missing=tuple(data.get("missing_values") or ()),
        added=bool(data.get("added")),
        shortened=tuple(data.get("shortened") or ()),
        readings=readings_of(data),
    )


@dataclass(frozen=True)
class Run:
    """A run directory, read as it is now (``open_run``) or as a command left it (``run``,
    ``ask``, ``resume``: then ``exit_code`` and ``message`` say how that command ended)."""

    path: Path
    #: how the command that made this view ended (``bcc``'s exit code); None when opened
    exit_code: int | None = None
    message: str = ""
    _status: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    # -- what the run found ----------------------------------------------------------------
    @property
    def state(self) -> str:
        """The workflow's state: ``WORKFLOW_COMPLETED``, ``WORKFLOW_ABORTED``, ..."""
        return str(self._status["fsm_state"])

    @property
    def outcome(self) -> str | None:
        """summary.json's ``outcome`` (None before a run has ended)."""
        return self._status.get("outcome")

    @property
    def answers(self) -> tuple[Answer, ...]:
        """One answer per question of the problem, then each follow-up's, in order; values
        as the kernel held them (``Answer.named`` for the named values as a dict)."""
        found = [_answer(a) for a in self._status.get("answers", [])]
        for follow_up in self._status.get("follow_ups", []):
            found += [_answer(a) for a in follow_up.get("answers", [])]
        return tuple(found)

    @property
    def findings(self) -> str | None:
        """The closing findings in markdown (``final_summary``), when the run wrote them."""
        findings = self._summary().get("findings")
        return findings.get("text") if isinstance(findings, dict) else None

    @property
    def key_results(self) -> dict[str, Any] | None:
        """``final_metrics`` as the kernel held it (a model's scores), or None."""
        return self._status.get("key_results")

    @property
    def verification(self) -> dict[str, Any] | None:
        """The re-execution's verdict (``status``: passed, failed or skipped)."""
        return self._status.get("verification")

    @property
    def usage(self) -> dict[str, Any]:
        """Tokens and cost of the model calls so far."""
        return dict(self._status.get("usage", {}))

    # -- where its files are -------------------------------------------------------------
    @property
    def notebook(self) -> Path:
        return self.path / "notebook.ipynb"

    @property
    def summary_path(self) -> Path:
        return self.path / "summary.json"

    @property
    def report_path(self) -> Path:
        return self.path / "report.html"

    def _summary(self) -> dict[str, Any]:
        try:
            return json.loads(self.summary_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    # -- what can be done with it ----------------------------------------------------------
    def ask(self, question: str, **options: Any) -> Run:
        """A follow-up question on this completed run (``bcc ask``): new stages in the same
        notebook; ``options`` as ``bcc ask``'s (``model``, ``api_base``, budgets)."""
        from notebook_bcc.workflow import session

        return _finish(session.ask_run(self.path, question, budgets=options))

    def resume(self, **budgets: Any) -> Run:
        """Continue an interrupted or aborted run from its last checkpoint (``bcc resume``)."""
        from notebook_bcc.workflow import session

        return _finish(session.resume_run(self.path, budgets=budgets))

    def report(self) -> Path:
        """Write report.html anew and return its path."""
        from notebook_bcc.rundir.report import write_report
        from notebook_bcc.rundir.store import RunStore

        return write_report(RunStore.open(self.path))

    def _repr_html_(self) -> str:
        """In Jupyter: the outcome, the answers with their named values, the verification,
        and a link to the notebook."""
        e = html.escape
        rows = []
        for a in self.answers:
            shown = value_text(a.value) if a.answered else "not answered"
            named = ", ".join(f"{n} = {value_text(v)}" for n, v in a.values)
            rows.append(
                f"<tr><td>{e(a.question)}</td><td><b>{e(shown)}</b></td><td>{e(named)}</td></tr>"
            )
        verdict = (self.verification or {}).get("status", "not verified")
        table = (
            "<table><tr><th>question</th><th>answer</th><th>named values</th></tr>"
            + "".join(rows)
            + "</table>"
            if rows
            else "<p>(no questions)</p>"
        )
        return (
            f"<div><p><b>{e(self.outcome or self.state)}</b> · verification: {e(str(verdict))}"
            f" · <a href='{e(self.notebook.as_uri())}'>notebook.ipynb</a></p>{table}</div>"
        )


def open_run(path: str | Path) -> Run:
    """The run in ``path`` as it is now. Raises InputError (exit 3's) for a directory that
    is not a run, or whose checkpoint is damaged."""
    from notebook_bcc.rundir.status import status_json

    root = Path(path)
    return Run(root, _status=status_json(root))


def run(
    problem: str | Path,
    data: str | Path | Sequence[str | Path],
    *,
    out: str | Path | None = None,
    runs_dir: str | Path = "runs",
    sandbox: bool | None = None,
    **options: Any,
) -> Run:
    """Run a new analysis as ``bcc run PROBLEM DATA...`` does. ``options`` are ``RunConfig``'s
    fields (``model``, ``api_base``, ``seed``, ``cell_timeout``, ``max_llm_calls``, ...);
    ``model`` defaults to ``$BCC_MODEL``, else the offline analyst; ``sandbox`` as
    ``--sandbox``/``--no-sandbox`` (None: the default for the model)."""
    from notebook_bcc.config import RunConfig, default_model
    from notebook_bcc.kernel.sandbox import choose
    from notebook_bcc.workflow import session

    files = [Path(data)] if isinstance(data, str | Path) else [Path(d) for d in data]
    model = options.pop("model", None) or default_model()
    remote = bool(options.get("kernel_gateway"))
    config = RunConfig(model=model, sandbox=choose(sandbox, model, remote=remote), **options)
    runner = session.create_run(
        config, Path(problem), files, out=Path(out) if out else None, runs_dir=Path(runs_dir)
    )
    return _finish(runner)


def _finish(runner: Any) -> Run:
    result = runner.run()
    opened = open_run(result.run_dir)
    return Run(opened.path, result.exit_code, result.message, opened._status)
