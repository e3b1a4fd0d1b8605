"""Where a batch's runs go: threads of this process, or the workers of a Dask cluster.

Both run ``attempt.perform`` on a ``RunTask`` and hand back futures; the batch decides how
many are in flight. A Dask task is retried by the scheduler when its worker is lost, and the
retry resumes the run directory (``perform`` looks before it starts), so ``--runs-dir`` must
be a path every worker can write.
"""

from __future__ import annotations

import concurrent.futures
import uuid
from collections.abc import Collection
from typing import Any, Protocol

from notebook_bcc.batch.attempt import RunTask, perform
from notebook_bcc.errors import UsageError

__all__ = ["DaskExecutor", "Executor", "LocalExecutor", "make_executor"]

#: seconds to connect to a Dask scheduler before the batch gives up (exit 2)
CONNECT_TIMEOUT_S = 30


class Executor(Protocol):
    def submit(self, task: RunTask) -> Any: ...

    def wait_any(self, futures: Collection[Any], timeout: float) -> set[Any]:
        """The futures among ``futures`` that are done, waiting at most ``timeout`` seconds
        for the first."""
        ...

    def close(self) -> None: ...


class LocalExecutor:
    """Each run in a thread of this process (the thread only waits for its ``bcc``)."""

    def __init__(self, jobs: int) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(jobs, thread_name_prefix="bcc-batch")

    def submit(self, task: RunTask) -> concurrent.futures.Future[Any]:
        return self._pool.submit(perform, task)

    def wait_any(self, futures: Collection[Any], timeout: float) -> set[Any]:
        done, _ = concurrent.futures.wait(
            futures, timeout=timeout, return_when=concurrent.futures.FIRST_COMPLETED
        )
        return set(done)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class DaskExecutor:
    """Each run on a worker of the Dask cluster whose scheduler is at ``address``."""

    def __init__(self, address: str) -> None:
        try:
            import distributed
        except ImportError:
            raise UsageError(
                "--executor dask needs the `distributed` package",
                remedy="pip install 'notebook-bcc[dask]'",
            ) from None
        self._distributed = distributed
        try:
            self._client = distributed.Client(address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise UsageError(
                f"cannot reach the Dask scheduler at {address}: {type(exc).__name__}",
                remedy="start it (`dask scheduler`) or pass its tcp://HOST:PORT with --scheduler",
            ) from None

    def submit(self, task: RunTask) -> Any:
        key = f"bcc-{task.id}-{uuid.uuid4().hex[:8]}"
        return self._client.submit(perform, task, key=key, pure=False, retries=2)

    def wait_any(self, futures: Collection[Any], timeout: float) -> set[Any]:
        try:
            done, _ = self._distributed.wait(
                list(futures), timeout=timeout, return_when="FIRST_COMPLETED"
            )
        except TimeoutError:
            return set()
        return set(done)

    def close(self) -> None:
        self._client.close(timeout=10)


def make_executor(kind: str, jobs: int, scheduler: str | None) -> Executor:
    if kind == "dask":
        if not scheduler:
            raise UsageError(
                "--executor dask needs --scheduler", remedy="pass --scheduler tcp://HOST:8786"
            )
        return DaskExecutor(scheduler)
    return LocalExecutor(jobs)
