"""Exceptions raised by notebook-bcc.

Every error a user can meet carries an ``exit_code`` (the CLI exits with it) and a one-line
``remedy`` (the CLI prints it after the cause). Errors subclass a builtin where one fits, so
library callers can catch them without importing this module.

The tree::

    BccError(Exception)                    exit 1   internal error / workflow failed
    ├── UsageError(BccError, ValueError)   exit 2   bad command-line usage
    ├── InputError(BccError, ValueError)   exit 3   unreadable problem or data file
    ├── LLMError(BccError, RuntimeError)   exit 4   model provider failure
    ├── KernelError(BccError, RuntimeError) exit 5  kernel could not start / died too often
    ├── PayloadError(BccError, ValueError) exit 6   agent reply invalid (after repairs)
    ├── BudgetExhausted(BccError)          exit 7   a budget ran out (run aborted, resumable)
    ├── StorageError(BccError, OSError)    exit 8   cannot write (or read) the run directory
    │   ├── DiskFull(StorageError)         exit 8   no space left (resumable once freed)
    │   └── RunLocked(StorageError)        exit 8   another bcc holds the run lock
    └── Interrupted(BccError)              exit 130  Ctrl-C (resumable)
        └── Terminated(Interrupted)        exit 143  SIGTERM (resumable)

A signal arrives as a ``BaseException``, never an ``Exception``: Ctrl-C as Python's
``KeyboardInterrupt``, SIGTERM as ``SigtermReceived(KeyboardInterrupt)`` (bcc's handler raises
it), so that no library's ``except Exception`` takes it for an error of its own and carries on
(a provider's client once retried a SIGTERM as a connection error, and the run completed).
``BccError.from_exception`` turns them into ``Interrupted`` and ``Terminated`` at the edge.

A run that completes raises nothing; its exit code says how complete it is (docs/cli.md, "Exit
codes"): 0 every step complete and the notebook verified (or not asked to be), 9 completed with
failed or skipped steps (``workflow.finish.COMPLETED_WITH_FAILED_STEPS``), 10 completed, but
the notebook does not re-run: verification failed (``workflow.finish.NOTEBOOK_DOES_NOT_RERUN``).
"""

from __future__ import annotations

__all__ = [
    "BccError",
    "UsageError",
    "InputError",
    "LLMError",
    "KernelError",
    "PayloadError",
    "BudgetExhausted",
    "StorageError",
    "DiskFull",
    "RunLocked",
    "Interrupted",
    "Terminated",
    "SigtermReceived",
]


class BccError(Exception):
    """Base class. ``str(err)`` is the cause; ``err.remedy`` says how to fix it."""

    exit_code: int = 1
    default_remedy: str = "re-run with --debug and report the traceback"

    def __init__(self, message: str, *, remedy: str | None = None) -> None:
        super().__init__(message)
        self.remedy = remedy or self.default_remedy

    @classmethod
    def from_exception(cls, caught: BaseException) -> BccError:
        """The error a run ends with: itself, Ctrl-C as ``Interrupted``, SIGTERM as
        ``Terminated``, or anything else (a
        bug) as an internal error (exit 1) that ``bcc resume`` may get past."""
        if isinstance(caught, BccError):
            return caught
        if isinstance(caught, SigtermReceived):
            return Terminated(f"{caught or 'terminated'} (SIGTERM)")
        if isinstance(caught, KeyboardInterrupt):
            return Interrupted("interrupted (Ctrl-C)")
        cause = " ".join(f"{type(caught).__name__}: {caught}".split())[:300]
        return BccError(
            f"internal error: {cause}",
            remedy="report it with the traceback in events.jsonl (internal_error); "
            "`bcc resume RUN_DIR` continues from the last checkpoint",
        )

    def one_line(self) -> str:
        """The message the CLI prints: cause and remedy on one line."""
        cause = " ".join(str(self).split())
        return f"error: {cause} (fix: {self.remedy})"


class UsageError(BccError, ValueError):
    exit_code = 2
    default_remedy = "see `bcc COMMAND --help`"


class InputError(BccError, ValueError):
    exit_code = 3
    default_remedy = "check the problem and data file paths and contents"


class LLMError(BccError, RuntimeError):
    """A provider call that failed; ``attempts`` are the transport retries before it, as
    (attempt, status, detail), for the transition log."""

    exit_code = 4
    default_remedy = "check --model, --api-base and the provider's API key variable"

    def __init__(
        self,
        message: str,
        *,
        remedy: str | None = None,
        attempts: tuple[tuple[int, str, str], ...] = (),
    ) -> None:
        super().__init__(message, remedy=remedy)
        self.attempts = attempts


class KernelError(BccError, RuntimeError):
    exit_code = 5
    default_remedy = "check that ipykernel is installed (`python -m ipykernel --version`)"


class PayloadError(BccError, ValueError):
    """An agent reply that is not a valid payload. Carries the position of the fault."""

    exit_code = 6
    default_remedy = "fix the XML at the given line and column"

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        kind: str | None = None,
        remedy: str | None = None,
        security: bool = False,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.kind = kind
        self.security = security  # a refused DOCTYPE/ENTITY: logged as a security event
        where = ""
        if line is not None:
            where = f"line {line}, column {column or 0}: "
        super().__init__(f"{where}{message}", remedy=remedy)

    @classmethod
    def from_lxml(cls, exc: Exception, *, kind: str | None = None) -> PayloadError:
        """Build from an lxml ``XMLSyntaxError`` (or any error with ``.position``/``.msg``)."""
        line, column = getattr(exc, "position", (None, None)) or (None, None)
        msg = getattr(exc, "msg", None) or str(exc)
        return cls(msg, line=line, column=column, kind=kind)


class BudgetExhausted(BccError):
    exit_code = 7
    default_remedy = "continue with `bcc resume RUN_DIR` and a larger budget option"


class StorageError(BccError, OSError):
    exit_code = 8
    default_remedy = (
        "free disk space or choose a writable --runs-dir / --out, then `bcc resume RUN_DIR`"
    )


class DiskFull(StorageError):
    """No space left on the device while writing the run directory."""


class RunLocked(StorageError):
    default_remedy = "wait for the other bcc process to finish, or stop it"


class Interrupted(BccError):
    exit_code = 130
    default_remedy = "continue with `bcc resume RUN_DIR`"


class Terminated(Interrupted):
    exit_code = 143


class SigtermReceived(KeyboardInterrupt):
    """What bcc's SIGTERM handlers raise (its text: what was terminated). A ``BaseException``
    like Ctrl-C's, so it passes through every ``except Exception``; ``from_exception`` makes it
    ``Terminated`` (exit 143)."""
