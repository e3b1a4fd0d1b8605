"""What the in-kernel helper answers about the user namespace, as ``records.py`` types
(``KernelSession.inspect_namespace``, ``check`` and ``check_and_inspect`` ask it)."""

from __future__ import annotations

from typing import Any

from notebook_bcc.kernel.records import CheckReport, Namespace, VariableInfo

__all__ = ["FETCH_CHARS", "check_report_of", "namespace_of"]

FETCH_CHARS = 8_000  # JSON size up to which a variable's value is fetched (summary, results)


def namespace_of(data: dict[str, Any]) -> Namespace:
    code = data.get("code", {})
    return Namespace(
        tuple(
            VariableInfo(**{**v, "columns": tuple((c, t) for c, t in v["columns"])})
            for v in data["vars"]
        ),
        tuple((n, m) for n, m in code.get("modules", [])),
        tuple((n, m) for n, m in code.get("callables", [])),
    )


def check_report_of(data: dict[str, Any]) -> CheckReport:
    return CheckReport(
        artifacts=tuple((name, bool(ok)) for name, ok in data["artifacts"]),
        criteria=tuple((expr, verdict, detail) for expr, verdict, detail in data["criteria"]),
    )
