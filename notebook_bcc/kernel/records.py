"""What a kernel session reports: a cell's outcome, the namespace, the checks."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CellOutcome", "CheckReport", "Namespace", "VariableInfo"]


@dataclass(frozen=True)
class CellOutcome:
    status: str  # "ok" | "error" | "timeout" | "dead"
    outputs: tuple[dict, ...]
    execution_count: int | None
    duration_ms: int
    excerpt: str
    error_name: str | None = None
    error_value: str | None = None
    spilled: str | None = None  # the file with the full stream text, when the outputs were cut


@dataclass(frozen=True)
class VariableInfo:
    name: str
    kind: str
    shape: str | None
    length: int | None
    columns: tuple[tuple[str, str], ...]
    bytes: int
    repr: str


@dataclass(frozen=True)
class Namespace:
    """One inspection of the user namespace."""

    variables: tuple[VariableInfo, ...]
    modules: tuple[tuple[str, str], ...] = ()  # (name, module), e.g. ("pd", "pandas")
    callables: tuple[tuple[str, str], ...] = ()  # (name, defining module; "" for the notebook's)


@dataclass(frozen=True)
class CheckReport:
    artifacts: tuple[tuple[str, bool], ...]
    criteria: tuple[tuple[str, str, str], ...]
