"""The variable ledger: every user variable in the kernel, from birth to deprecation (DESIGN §8).

The ledger is fed by the kernel's silent inspection after each cell (``observe``) and by stage
reflections (``retain`` / ``deprecate``, the latter under guard G5). Prompts read a bounded,
ranked slice of it (``prompt_slice``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

__all__ = ["VariableRecord", "VariableLedger", "Decision"]

ALIVE, RETAINED, DEPRECATED, DELETED = "alive", "retained", "deprecated", "deleted"


class _Info(Protocol):  # structural type of kernel.VariableInfo (no import: one-way graph)
    name: str
    kind: str
    shape: str | None
    length: int | None
    columns: tuple[tuple[str, str], ...]
    bytes: int
    repr: str


@dataclass(frozen=True)
class VariableRecord:
    name: str
    status: str
    kind: str
    bytes: int
    created_by: str
    updated_by: str
    shape: str | None = None
    length: int | None = None
    columns: tuple[tuple[str, str], ...] = ()
    repr: str = ""
    next_use: str | None = None
    replacement: str | None = None
    deprecated_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["columns"] = [list(c) for c in self.columns]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VariableRecord:
        data = dict(data)
        data["columns"] = tuple(tuple(c) for c in data.get("columns", ()))
        return cls(**data)

    def describe(self, max_columns: int = 12) -> str:
        """One line for a prompt: name, kind, size and a short repr or column list."""
        size = self.shape or (f"len {self.length}" if self.length is not None else "")
        head = f"- {self.name}: {self.kind}" + (f" [{size}]" if size else "")
        if self.status == RETAINED and self.next_use:
            head += f" (retained for {self.next_use})"
        if self.columns:
            cols = ", ".join(f"{c}:{t}" for c, t in self.columns[:max_columns])
            more = len(self.columns) - max_columns
            return head + f" columns {cols}" + (f" (+{more} more)" if more > 0 else "")
        return head + (f" = {self.repr}" if self.repr else "")


@dataclass(frozen=True)
class Decision:
    """Outcome of a retain/deprecate request: applied or refused (with the G5 reason)."""

    name: str
    action: str
    applied: bool
    reason: str = ""


@dataclass
class VariableLedger:
    records: dict[str, VariableRecord] = field(default_factory=dict)

    def observe(self, infos: Iterable[_Info], location: str) -> None:
        """Merge one inspection: new names are born, changed ones updated, vanished ones deleted."""
        seen = set()
        for info in infos:
            seen.add(info.name)
            old = self.records.get(info.name)
            fields = dict(
                kind=info.kind,
                bytes=int(info.bytes),
                shape=info.shape,
                length=info.length,
                columns=tuple(info.columns),
                repr=info.repr,
            )
            if old is None or old.status == DELETED:
                self.records[info.name] = VariableRecord(
                    name=info.name, status=ALIVE, created_by=location, updated_by=location, **fields
                )
            elif any(getattr(old, k) != v for k, v in fields.items()):
                self.records[info.name] = replace(old, updated_by=location, **fields)
        for name, rec in list(self.records.items()):
            if name not in seen and rec.status != DELETED:
                self.records[name] = replace(rec, status=DELETED, updated_by=location)

    def retain(self, name: str, next_use: str | None) -> Decision:
        rec = self.records.get(name)
        if rec is None or rec.status == DELETED:
            return Decision(name, "retain", False, "not in the kernel")
        self.records[name] = replace(rec, status=RETAINED, next_use=next_use)
        return Decision(name, "retain", True)

    def deprecate(
        self, name: str, replacement: str | None, by: str, protected: dict[str, str]
    ) -> Decision:
        """Deprecate unless ``protected`` (name -> reason) names it (guard G5)."""
        rec = self.records.get(name)
        if rec is None or rec.status == DELETED:
            return Decision(name, "deprecate", False, "not in the kernel")
        if name in protected:
            return Decision(name, "deprecate", False, protected[name])
        self.records[name] = replace(
            rec, status=DEPRECATED, replacement=replacement, deprecated_by=by
        )
        return Decision(name, "deprecate", True)

    def mark_deleted(self, names: Sequence[str], location: str) -> None:
        for name in names:
            if name in self.records:
                self.records[name] = replace(
                    self.records[name], status=DELETED, updated_by=location
                )

    def live(self) -> list[VariableRecord]:
        return [r for r in self.records.values() if r.status in (ALIVE, RETAINED)]

    def prompt_slice(self, priority: Sequence[str] = (), budget_chars: int = 3_000) -> str:
        """Alive and retained variables, ranked, within ``budget_chars``; deprecated as name → x."""
        rank = {name: i for i, name in enumerate(priority)}
        order = list(self.records)  # insertion order ~ birth order

        def key(r: VariableRecord) -> tuple[int, int, int]:
            return (
                rank.get(r.name, len(rank)),
                0 if r.status == RETAINED else 1,
                -order.index(r.name),
            )

        lines, used, left_out = [], 0, 0
        for rec in sorted(self.live(), key=key):
            line = rec.describe()[:400]
            if used + len(line) + 1 > budget_chars:
                left_out += 1
                continue
            lines.append(line)
            used += len(line) + 1
        if left_out:
            lines.append(f"({left_out} more variables not shown)")
        gone = [
            r
            for r in self.records.values()
            if r.status == DEPRECATED or (r.status == DELETED and r.deprecated_by)
        ]
        if gone:
            lines.append(
                "deprecated: "
                + ", ".join(f"{r.name} → {r.replacement or 'none'}" for r in gone[:20])
            )
        return "\n".join(lines) if lines else "(no variables yet)"

    def get(self, name: str) -> VariableRecord | None:
        return self.records.get(name)

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.records.values()]

    @classmethod
    def from_json(cls, data: list[dict[str, Any]]) -> VariableLedger:
        return cls({d["name"]: VariableRecord.from_json(d) for d in data})
