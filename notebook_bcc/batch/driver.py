"""``Batch``: a manifest's runs, at most ``jobs`` at once, under one cost bound.

Rows whose run directory holds a completed run (or a failed one, unless ``retry_failed``) are
read, not run again; the others go to the executor, which runs, resumes or re-runs each
(``attempt.perform``). ``max_cost_usd`` bounds what the whole batch spends, earlier
invocations' runs included: each run is started with an allowance (an equal share of what is
left among the runs not yet started), gets back what it did not spend when it ends, and a run
that finds nothing left is not started (``not_run``; a later batch with a larger bound starts
it). The results are rewritten after each finished run. Ctrl-C or SIGTERM is passed on to the
runs, which checkpoint and stop (resumable), and the batch exits 130 or 143 once they have.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from notebook_bcc.batch import attempt
from notebook_bcc.batch.attempt import RunRecord, RunTask
from notebook_bcc.batch.executors import Executor
from notebook_bcc.batch.results import write_results
from notebook_bcc.errors import BccError, Interrupted, SigtermReceived

__all__ = ["Batch", "BatchOutcome"]

#: how long an interrupted batch waits for its runs to checkpoint and stop
STOP_WAIT_S = 60.0
_POLL_S = 0.5


@dataclass(frozen=True)
class BatchOutcome:
    records: tuple[RunRecord, ...]
    exit_code: int  # 0 all completed; 9 some with failed steps; 1 any failed, aborted or not run
    message: str


class Batch:
    def __init__(
        self,
        tasks: Sequence[RunTask],
        executor: Executor,
        out: Path,
        *,
        jobs: int,
        max_cost_usd: float | None = None,
        on_record: Callable[[RunRecord, int, int], None] | None = None,
    ) -> None:
        self.tasks = tuple(tasks)
        self.executor = executor
        self.out = out  # BATCH_DIR: results.jsonl, results.csv, index.html
        self.jobs = jobs
        self.max_cost_usd = max_cost_usd
        self.on_record = on_record or (lambda record, done, total: None)
        self._records: dict[str, RunRecord] = {}
        self._left = 0.0  # USD not yet given to any run (with max_cost_usd)

    def run(self) -> BatchOutcome:
        waiting, before = [], _previous(self.out)
        for task in self.tasks:
            earlier = before.get(task.id)
            if attempt.finished(task.run_dir, task.retry_failed):
                self._done(attempt.read_record(task.id, task.run_dir, None, "skipped", ""))
            elif earlier and earlier.status == "failed" and not task.run_dir.exists():
                if task.retry_failed:  # failed before making a run (bad input, say)
                    waiting.append(task)
                else:
                    self._done(replace(earlier, action="skipped"))
            else:
                waiting.append(task)
        if self.max_cost_usd is not None:
            spent = sum(attempt.spent(t.run_dir) for t in self.tasks)
            self._left = max(0.0, self.max_cost_usd - spent)
        in_flight: dict[Any, tuple[RunTask, float]] = {}
        try:
            while waiting or in_flight:
                while waiting and len(in_flight) < self.jobs:
                    task = waiting.pop(0)
                    allowance = self._allowance(len(waiting) + 1)
                    if allowance is not None and allowance <= 1e-9:
                        self._done(_not_run(task))
                        continue
                    sent = replace(task, cost_allowance=allowance)
                    in_flight[self.executor.submit(sent)] = (sent, attempt.spent(task.run_dir))
                for future in self.executor.wait_any(list(in_flight), _POLL_S):
                    self._finish(future, *in_flight.pop(future))
        except KeyboardInterrupt as caught:  # Ctrl-C, or SIGTERM as SigtermReceived
            sigterm = isinstance(caught, SigtermReceived)
            self._stop(in_flight, signal.SIGTERM if sigterm else None)
            raise (
                BccError.from_exception(caught)
                if sigterm
                else Interrupted("batch interrupted (Ctrl-C)")
            ) from None
        finally:
            self.executor.close()
        return self._outcome()

    # -- runs ----------------------------------------------------------------------------------
    def _allowance(self, not_started: int) -> float | None:
        if self.max_cost_usd is None:
            return None
        share = self._left / max(1, not_started)
        self._left -= share
        return share

    def _finish(self, future: Any, task: RunTask, spent_before: float) -> None:
        try:
            record = future.result()
        except Exception as exc:  # noqa: BLE001 - a worker's failure is this run's result
            cause = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            record = attempt.read_record(task.id, task.run_dir, 1, "run", f"error: {cause}")
        if task.cost_allowance is not None:
            self._left += max(0.0, task.cost_allowance - (record.cost_usd - spent_before))
        self._done(record)

    def _done(self, record: RunRecord) -> None:
        self._records[record.id] = record
        ordered = [self._records[t.id] for t in self.tasks if t.id in self._records]
        write_results(self.out, ordered)
        self.on_record(record, len(self._records), len(self.tasks))

    def _stop(self, in_flight: dict[Any, tuple[RunTask, float]], signum: int | None) -> None:
        """Pass the interrupt on to this process's runs; record them as they stop."""
        attempt.stop_all(signum or signal.SIGINT)
        deadline = time.monotonic() + STOP_WAIT_S
        while in_flight and time.monotonic() < deadline:
            try:
                done = self.executor.wait_any(list(in_flight), _POLL_S)
            except KeyboardInterrupt:  # a second Ctrl-C: do not wait for them
                attempt.stop_all(signal.SIGINT)
                break
            for future in done:
                self._finish(future, *in_flight.pop(future))
        for task, _ in in_flight.values():
            self._done(attempt.read_record(task.id, task.run_dir, 130, "run", "interrupted"))

    def _outcome(self) -> BatchOutcome:
        records = tuple(self._records[t.id] for t in self.tasks)
        counts: dict[str, int] = {}
        for r in records:
            counts[r.status] = counts.get(r.status, 0) + 1
        bad = sum(
            n for s, n in counts.items() if s not in ("completed", "completed_with_failed_steps")
        )
        code = 1 if bad else 9 if counts.get("completed_with_failed_steps") else 0
        said = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items())
        message = f"batch: {len(records)} runs: {said} (results: {self.out / 'results.csv'})"
        return BatchOutcome(records, code, message)


def _previous(out: Path) -> dict[str, RunRecord]:
    """The records of the batch's last invocation (a failure without a run is only there)."""
    try:
        lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
        return {r.id: r for r in (RunRecord.from_json(json.loads(x)) for x in lines)}
    except (OSError, ValueError, TypeError):
        return {}


def _not_run(task: RunTask) -> RunRecord:
    record = attempt.read_record(task.id, task.run_dir, 7, "not_run", "")
    return replace(
        record,
        status="not_run",
        message="not started: the batch's --max-cost-usd is spent (a larger bound starts it)",
    )
