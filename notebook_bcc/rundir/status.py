"""Read-only views of a run directory for ``bcc status`` and ``bcc logs``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lxml import etree

from notebook_bcc.errors import InputError
from notebook_bcc.rundir.results import named_text, quoted_text, reading_lines
from notebook_bcc.rundir.store import RunStore, read_log
from notebook_bcc.rundir.summary import kernel_words

__all__ = ["status_json", "status_text", "log_list", "log_show"]


def status_json(run_dir: Path) -> dict[str, Any]:
    store = RunStore.open(run_dir)
    state = store.read_json("state.json")
    summary = store.read_json("summary.json") if (run_dir / "summary.json").exists() else None
    config = store.read_json("config.json") if (run_dir / "config.json").exists() else {}
    return {
        "run_dir": str(run_dir),
        "schema_version": state["schema_version"],
        "fsm_state": state["fsm_state"],
        "location": state["location"],
        "stages": [
            {
                "id": s["id"],
                "status": s["status"],
                "steps": {t["id"]: t["status"] for t in s["steps"]},
            }
            for s in state["stages"]
        ],
        "counters": state["counters"],
        "usage": state["usage"],
        "usage_by_location": state.get("usage_by_location", {}),
        "error": state.get("error") or None,
        "ledger": [
            {k: v[k] for k in ("name", "status", "kind", "bytes", "created_by")}
            for v in state["ledger"]
        ],
        "verification": summary["verification"] if summary else None,
        "outcome": summary.get("outcome") if summary else None,
        "kernel": {
            "where": config.get("kernel_gateway") or "local",
            "sandboxed": bool(config.get("sandbox")),
        },
        "answers": summary.get("answers", []) if summary else [],
        "follow_ups": summary.get("follow_ups", []) if summary else [],
        "key_results": summary.get("key_results") if summary else None,
    }


def status_text(run_dir: Path) -> str:
    st = status_json(run_dir)
    lines = [
        f"run       {st['run_dir']}",
        f"state     {st['fsm_state']}   at {st['location']['path'] or '-'}",
        f"counts    {json.dumps(st['counters'])}",
        f"usage     {json.dumps(st['usage'])}",
    ]
    spent = {
        k: v for k, v in st["usage_by_location"].items() if v["prompt_tokens"] and "/" not in k
    }
    for where, u in spent.items():
        lines.append(
            f"  cost    {where:<30} {u['prompt_tokens']}+{u['completion_tokens']} tokens "
            f"({u.get('cached_tokens', 0)} cached) ${u['cost_usd']:.4f}"
        )
    if st["outcome"]:
        lines.append(f"outcome   {st['outcome']}")
    lines.append(f"kernel    {kernel_words(st['kernel'])}")
    if st["error"]:
        lines.append(f"error     {st['error']}")
    if st["fsm_state"] == "WORKFLOW_ABORTED" or not RunStore(Path(run_dir)).summarised():
        lines.append(f"next      bcc resume {st['run_dir']}")
    if st["verification"]:
        lines.append(f"verify    {st['verification'].get('status')}")
    for i, a in enumerate(st["answers"], 1):
        shown = quoted_text(a["value"]) if a["answered"] else "not answered"
        lines.append(f"answer    {i}. {a['question']} -> {shown}")
        if a.get("values"):
            lines.append(f"          {named_text(a['values'], a.get('missing_values', ()))}")
        if a.get("shortened"):
            lines.append(f"          shortened: {'; '.join(a['shortened'])}")
        lines += [f"          {line}" for line in reading_lines(a)]
    for n, f in enumerate(st["follow_ups"], 1):
        lines.append(f"follow-up {n}. {' '.join(f['question'].split())}")
        for a in f["answers"]:
            shown = quoted_text(a["value"]) if a["answered"] else "not answered"
            lines.append(
                f"          -> {shown}"
                + (
                    f"  {named_text(a['values'], a.get('missing_values', ()))}"
                    if a.get("values")
                    else ""
                )
            )
    if st["key_results"]:
        lines.append(f"results   {json.dumps(st['key_results'])}")
    lines.append("plan")
    for s in st["stages"]:
        steps = ", ".join(f"{k}:{v}" for k, v in s["steps"].items())
        lines.append(f"  {s['id']:<32} {s['status']:<9} {steps}")
    lines.append("variables")
    for v in st["ledger"]:
        lines.append(
            f"  {v['name']:<24} {v['status']:<10} {v['kind']:<14} {v['bytes']:>12,} B  {v['created_by']}"
        )
    return "\n".join(lines)


def log_list(run_dir: Path) -> str:
    store = RunStore.open(run_dir)
    rows = []
    for t in store.logs():
        statuses = ",".join(r.get("status", "") for r in t.findall("response")) or "-"
        rows.append(
            f"{t.get('seq'):>4}  {t.get('event'):<15} {t.get('from'):>18} -> {t.get('to'):<18} "
            f"{t.get('agent'):<18} {int(t.get('duration_ms', 0)) / 1000:>6.1f}s "
            f"forced={t.get('forced')} {statuses}"
        )
    return "\n".join(rows) or "(no transitions yet)"


def log_show(run_dir: Path, seq: int) -> str:
    store = RunStore.open(run_dir)
    for path in store.log_files():
        if path.name.startswith(f"{seq:04d}_"):
            return etree.tostring(read_log(path), pretty_print=True, encoding="unicode")
    raise InputError(
        f"no transition {seq} in {run_dir}", remedy="list them with `bcc logs RUN_DIR`"
    )
