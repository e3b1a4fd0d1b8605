"""What a kernel session reports: a cell's outcome, the namespace, the checks."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CellOutcome", "CheckReport", "KernelEnvironment", "Namespace", "VariableInfo"]


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
    index: str = ""  # a table's index when it is not 0..n-1: its name, dtype and labels


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


@dataclass(frozen=True)
class KernelEnvironment:
    """The kernel's own Python and analysis packages, as the kernel answered (a gateway's or a
    sandboxed kernel is described as it is, not as ``bcc``'s environment is)."""

    python: str
    packages: tuple[tuple[str, str | None], ...]  # (distribution, version; None: absent)
    named: tuple[tuple[str, str | None], ...] = ()  # modules the problem names, the same way

    @classmethod
    def from_json(cls, data: dict) -> KernelEnvironment:
        return cls(
            str(data["python"]),
            tuple((str(n), v) for n, v in data["packages"].items()),
            tuple((str(n), v) for n, v in data.get("named", {}).items()),
        )

    def text(self) -> str:
        """One line: "Python 3.11.7; installed: pandas 2.2.2, …; not installed: statsmodels"."""
        have = [f"{n} {v}" for n, v in self.packages if v]
        absent = [n for n, v in self.packages if not v]
        line = f"Python {self.python}; installed: {', '.join(have) or 'none of the usual'}"
        line += f"; not installed: {', '.join(absent)}" if absent else ""
        if self.named:
            said = [f"{n} {v}" if v else f"{n} NOT importable" for n, v in self.named]
            line += "; named in the problem: " + ", ".join(said)
        return line
