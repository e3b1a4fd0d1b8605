"""Looking into the user namespace: variable summaries, checks, deletions and small values.

Each is a call of the in-kernel helper (``KernelCalls._call_helper``); this module turns the
JSON it answers into the ``records.py`` types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from notebook_bcc.kernel.calls import KernelCalls
from notebook_bcc.kernel.records import CheckReport, Namespace, VariableInfo

__all__ = ["FETCH_CHARS", "NamespaceInspection"]

FETCH_CHARS = 8_000  # JSON size up to which a variable's value is fetched (summary, results)


class NamespaceInspection(KernelCalls):
    """What the user namespace holds, asked of the kernel without touching it (but ``delete``)."""

    def inspect(self, timeout: float = 30) -> tuple[VariableInfo, ...]:
        """Summaries of the user's data variables (no modules, callables, types or _names)."""
        return self.inspect_namespace(timeout).variables

    def inspect_namespace(self, timeout: float = 30) -> Namespace:
        """The user's data variables, and the modules and callables they can use, by name."""
        return _namespace(self._call_helper("inspect_ns", None, timeout))

    def check_and_inspect(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> tuple[CheckReport, Namespace]:
        """``check`` and ``inspect_namespace`` in one round trip."""
        payload = {"artifacts": list(artifacts), "criteria": list(criteria)}
        data = self._call_helpers(
            {"check": ("check_ns", payload), "inspect": ("inspect_ns", None)}, timeout
        )
        return _check_report(data["check"]), _namespace(data["inspect"])

    def check(
        self, artifacts: Sequence[str], criteria: Sequence[str], timeout: float = 30
    ) -> CheckReport:
        """Which artifact names exist, and how each criterion ``bool(expr)`` evaluates."""
        payload = {"artifacts": list(artifacts), "criteria": list(criteria)}
        return _check_report(self._call_helper("check_ns", payload, timeout))

    def score(self, expression: str, timeout: float = 30) -> tuple[float | None, str]:
        """A fork's choice ``expression`` evaluated in the user namespace: (a finite number,
        "") or (None, why not)."""
        number, why = self._call_helper("score_ns", expression, timeout)
        return number, why

    def delete(self, names: Sequence[str]) -> None:
        """Delete names (and IPython's hidden references to their values), then gc.collect()."""
        if names:
            self._call_helper("delete_ns", list(names), 30)

    def fetch_json(
        self,
        names: Sequence[str],
        max_chars: int = FETCH_CHARS,
        timeout: float = 30,
        whole: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        """Values of the named variables that are small and JSON-serialisable (others left
        out); a name in ``whole`` (name -> a part's limit) is never left out: a part over its
        limit, or not JSON, stands as a marker (``in_kernel_results.py``)."""
        payload = {"names": list(names), "max_chars": max_chars, "whole": dict(whole or {})}
        return self._call_helper("fetch_ns", payload, timeout)


def _namespace(data: dict[str, Any]) -> Namespace:
    code = data.get("code", {})
    return Namespace(
        tuple(
            VariableInfo(**{**v, "columns": tuple((c, t) for c, t in v["columns"])})
            for v in data["vars"]
        ),
        tuple((n, m) for n, m in code.get("modules", [])),
        tuple((n, m) for n, m in code.get("callables", [])),
    )


def _check_report(data: dict[str, Any]) -> CheckReport:
    return CheckReport(
        artifacts=tuple((name, bool(ok)) for name, ok in data["artifacts"]),
        criteria=tuple((expr, verdict, detail) for expr, verdict, detail in data["criteria"]),
    )
