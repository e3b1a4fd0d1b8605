"""The variable ledger: every user variable in the kernel, from birth to deprecation (docs/architecture.md, "Modules").

The ledger is fed by the kernel's silent inspection after each cell (``record_namespace``) and by stage
reflections (``retain`` / ``deprecate``, the latter under guard G5). Prompts read a ranked view
of it (``prompt_view``) that names every variable still in the kernel.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

__all__ = ["DELETED", "VariableRecord", "VariableLedger", "LedgerView", "Decision"]

ALIVE, RETAINED, DEPRECATED, DELETED = "alive", "retained", "deprecated", "deleted"

#: kinds whose value the reflectors' list shows (a number or a flag)
_SCALAR_KINDS = frozenset(
    ["int", "float", "bool", "int64", "int32", "float64", "float32", "bool_", "complex"]
)


class _Info(Protocol):  # structural type of kernel.VariableInfo (no import: one-way graph)
    name: str
    kind: str
    shape: str | None
    length: int | None
    columns: tuple[tuple[str, str], ...]
    bytes: int
    repr: str
    index: str


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
    index: str = ""  # a table's index when it is not 0..n-1 (the kernel's description)
    next_use: str | None = None
    replacement: str | None = None
    deprecated_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = dict(vars(self))  # the fields: all plain values (asdict costs 10x as much)
        data["columns"] = [list(c) for c in self.columns]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VariableRecord:
        data = dict(data)
        data["columns"] = tuple(tuple(c) for c in data.get("columns", ()))
        return cls(**data)

    def describe(
        self,
        max_columns: int = 300,
        in_use: Container[str] | None = None,
        columns_of: str | None = None,
    ) -> str:
        """One line for a prompt: name, kind, size, status and a short repr or column list.

        ``in_use`` holds the steps and stages still to come: a ``retained`` note naming one
        that is done is not shown as if it still applied. ``columns_of`` names a variable
        with the same columns whose line lists them: they are not listed twice.
        """
        head = self.head(in_use)
        index = f"; index {self.index}" if self.index else ""
        if columns_of:
            return head + f" columns as {columns_of}" + index
        if self.columns:
            shown = self.columns[:max_columns]
            cols = ", ".join(f"{c}:{t}" for c, t in shown)
            counted = (self.shape or "").rpartition("x")[2]
            total = int(counted) if counted.isdigit() else len(self.columns)
            more = total - len(shown)  # the kernel lists up to 300 names; the shape counts all
            more_text = f" (+{more} more)" if more > 0 else ""
            return head + f" columns {cols}" + more_text + index
        return head + (f" = {self.repr}" if self.repr else "") + index

    def head(self, in_use: Container[str] | None = None) -> str:
        """The start of :meth:`describe`: name, kind, size and status, no details."""
        size = self.shape or (f"len {self.length}" if self.length is not None else "")
        head = f"- {self.name}: {self.kind}" + (f" [{size}]" if size else "")
        return head + self.status_note(in_use)

    def brief(self, in_use: Container[str] | None = None) -> str:
        """:meth:`head`, and the value of a number or a flag (``- total: float = 2081990.36``):
        the reflectors' list, where a scalar has no size to show and no other place."""
        scalar = self.kind in _SCALAR_KINDS and self.repr and len(self.repr) <= 40
        return self.head(in_use) + (f" = {self.repr}" if scalar else "")

    def status_note(self, in_use: Container[str] | None = None) -> str:
        """`` (retained for X)``, `` (DEPRECATED ...)`` or empty for a plain alive variable."""
        if self.status == RETAINED:
            current = self.next_use and (in_use is None or self.next_use in in_use)
            return f" (retained for {self.next_use})" if current else " (retained)"
        if self.status == DEPRECATED:
            instead = f"use {self.replacement} instead" if self.replacement else "no replacement"
            return f" (DEPRECATED by {self.deprecated_by}, still in the kernel; {instead})"
        return ""


@dataclass(frozen=True)
class LedgerView:
    """What prompts show of the ledger: ``lines`` as (name with status, description), ranked,
    and ``deleted``: the names no longer in the kernel, each with why."""

    lines: tuple[tuple[str, str], ...]
    deleted: tuple[str, ...] = ()
    born: tuple[int, ...] = ()  # per line, its variable's birth order (prompts list by it)
    heads: tuple[str, ...] = ()  # per line, its start: name, kind, size, status (no details)


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

    def record_namespace(self, infos: Iterable[_Info], location: str) -> None:
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
                index=info.index,
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

    def in_kernel(self) -> list[VariableRecord]:
        """Every variable still in the kernel: alive, retained and deprecated-but-kept."""
        return [r for r in self.records.values() if r.status != DELETED]

    def prompt_view(
        self, priority: Sequence[str] = (), in_use: Container[str] | None = None
    ) -> LedgerView:
        """Every variable in the kernel as one line each, ranked (``priority`` names first,
        then retained, then the most recently born), and the deleted ones by name.

        Nothing is cut here: the prompt renderer drops whole lines from the end of ``lines``
        when the prompt is over its budget, and lists the names it dropped.
        """
        rank = {name: i for i, name in enumerate(priority)}
        order = {name: i for i, name in enumerate(self.records)}  # birth order

        def key(r: VariableRecord) -> tuple[int, int, int]:
            return (
                rank.get(r.name, len(rank)),
                {RETAINED: 0, ALIVE: 1}.get(r.status, 2),
                -order[r.name],
            )

        ranked = sorted(self.in_kernel(), key=key)
        same = _same_columns(ranked)
        for name, ref in same.items():  # prompts list variables as they were born
            same[name] = ref + " (listed below)" * (order[ref] > order[name])
        lines = tuple(
            (r.name + r.status_note(in_use), r.describe(in_use=in_use, columns_of=same.get(r.name)))
            for r in ranked
        )
        gone = []
        for r in self.records.values():
            if r.status != DELETED:
                continue
            if r.deprecated_by:
                why = f"deprecated by {r.deprecated_by}; " + (
                    f"use {r.replacement} instead" if r.replacement else "no replacement"
                )
                after = self.records.get(r.replacement or "")
                if after is not None and after.status == DELETED:  # a chain gone stale
                    why += f" (itself deleted since: {self._current(after.name)})"
            else:
                why = f"no longer in the kernel after {r.updated_by}"
            gone.append(f"{r.name} ({why})")
        born = tuple(order[r.name] for r in ranked)
        return LedgerView(lines, tuple(gone), born, tuple(r.brief(in_use) for r in ranked))

    def _current(self, name: str) -> str:
        """Where a chain of replacements ends: the first name still in the kernel, or none."""
        seen = {name}
        record = self.records.get(name)
        while record is not None and record.status == DELETED and record.replacement:
            if record.replacement in seen:
                break
            seen.add(record.replacement)
            record = self.records.get(record.replacement)
        if record is not None and record.status != DELETED:
            return f"use {record.name}"
        return "no replacement in the kernel"

    def get(self, name: str) -> VariableRecord | None:
        return self.records.get(name)

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.records.values()]

    @classmethod
    def from_json(cls, data: list[dict[str, Any]]) -> VariableLedger:
        return cls({d["name"]: VariableRecord.from_json(d) for d in data})


SAME_COLUMNS_MIN = 3  # shorter column lists cost less than the reference


def _same_columns(ranked: list[VariableRecord]) -> dict[str, str]:
    """name -> a table that ranks before it with the very same columns, for tables whose
    column list a prompt would otherwise repeat (``X_train``, ``X_test``). The one named ranks
    first, so a prompt over its budget, which drops the lowest ranked details first, never
    keeps a reference to details it dropped."""
    first: dict[tuple[object, ...], str] = {}
    same = {}
    for r in ranked:
        if len(r.columns) < SAME_COLUMNS_MIN:
            continue
        key = (r.columns, (r.shape or "").rpartition("x")[2])  # the kernel lists up to 300
        if key in first:
            same[r.name] = first[key]
        else:
            first[key] = r.name
    return same
