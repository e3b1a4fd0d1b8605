"""report.html: a whole run in one self-contained page (no script, no network).

Read from the run directory only (state.json, events.jsonl, logs/, summary.json,
notebook.ipynb): the plan as a tree with each node's status, behaviors, time, agent calls,
tokens and cost, guards and forced transitions marked; every transition as a ``<details>``
that opens to its prompts, replies, payload, cells, checks and guards, with links to the
notebook cells it added; the variable ledger; the answers, key results and verification; and
the notebook's cells with their outputs and figures. Long texts show an excerpt (and name the
spill file a cell's full output went to).
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from lxml import etree

from notebook_bcc.errors import InputError
from notebook_bcc.rundir.report_plan import Transition, plan_html
from notebook_bcc.rundir.report_reader import READER_STYLE, reader_html
from notebook_bcc.rundir.store import RunStore, read_log
from notebook_bcc.rundir.summary import per_transitions, verification_text

__all__ = ["render_report", "write_report"]

TEXT_CHARS = 20_000  # a prompt, reply or output longer than this shows its start and end
e = html.escape


def _short(text: str, limit: int = TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - limit:,} characters not shown] …\n{text[-half:]}"


#: the spill file a cut output names: ``logs/cells/`` (``outputs/`` in runs of bcc before it)
_SPILL = re.compile(r"full text in ((?:logs/cells|outputs)/cell-[\w.-]+\.txt)")


def _pre(text: str, cls: str = "") -> str:
    """A text block; a cell output cut by bcc links to the spill file holding all of it."""
    spilled = "".join(
        f'<div class="spill"><a href="{e(m)}">{e(m)}</a>: the full output</div>'
        for m in dict.fromkeys(_SPILL.findall(text))
    )
    return f'<pre class="{cls}">{e(_short(text))}</pre>{spilled}'


def _transitions(store: RunStore) -> list[Transition]:
    """The committed transitions, each with its guards and its parsed log."""
    events = list(store.events())
    guards: dict[int, list[tuple[str, str, str]]] = defaultdict(list)
    for ev in events:
        if ev.get("type") == "guard":
            guards[ev["seq"]].append((ev["guard"], ev["effect"], ev["reason"]))
    logs = {int(p.name[:4]): p for p in store.log_files()}
    return [
        Transition(
            ev["seq"],
            ev["event"],
            ev["from"],
            ev["to"],
            ev.get("agent") or "",
            ev.get("location") or "",
            int(ev.get("iteration") or 0),
            bool(ev.get("forced")),
            int(ev.get("duration_ms") or 0),
            tuple(guards[ev["seq"]]),
            read_log(logs[ev["seq"]]) if ev["seq"] in logs else None,
        )  # fmt: skip
        for ev in events
        if ev.get("type") == "transition"
    ]


def _payload_text(el: etree._Element | None) -> str:
    if el is None or len(el) == 0:
        return ""
    return "\n".join(etree.tostring(c, encoding="unicode", pretty_print=True) for c in el)


def _transition_html(tr: Transition, cells_by_seq: dict[int, list[int]]) -> str:
    head = (
        f"#{tr.seq} {e(tr.event)} {e(tr.source)} → {e(tr.target)}"
        f" <code>{e(tr.location or '-')}</code> {tr.duration_ms / 1000:.1f} s"
        + (' <span class="forced">forced</span>' if tr.forced else "")
        + "".join(f' <span class="guard">{e(g)}</span>' for g, _, _ in tr.guards)
    )
    body = [f"<p>agent: {e(tr.agent or 'none (bookkeeping)')}</p>"]
    if tr.log is not None:
        root = tr.log
        for req in root.findall("request"):
            body.append(f"<h4>Request, attempt {e(req.get('attempt', '1'))}</h4>")
            for prompt in req.findall("prompt"):
                body.append(f"<h5>Prompt ({e(prompt.get('role', ''))})</h5>")
                body.append(_pre(prompt.text or "", "prompt"))
        for resp in root.findall("response"):
            body.append(
                f"<h4>Reply {e(resp.get('attempt', ''))} ({e(resp.get('status', ''))})</h4>"
            )
            body.append(_pre(resp.text or "", "reply"))
        payload = _payload_text(root.find("payload"))
        if payload:
            body.append("<h4>Validated payload</h4>" + _pre(payload, "payload"))
        cells = root.findall("execution/cell")
        if cells:
            body.append("<h4>Cells run</h4>")
            for cell in cells:
                body.append(
                    f'<div class="cell {e(cell.get("status", ""))}">cell {e(cell.get("id", ""))}: '
                    f"{e(cell.get('status', ''))}, {e(cell.get('duration_ms', ''))} ms</div>"
                    + _pre(cell.text or "", "output")
                )
        checks = root.find("checks")
        if checks is not None and len(checks):
            rows = "".join(
                f"<tr><td>{e(c.tag)}</td><td>{e(c.get('name') or (c.text or ''))}</td>"
                f"<td>{e(c.get('status', ''))}</td></tr>"
                for c in checks
            )
            body.append(f"<h4>Checks</h4><table>{rows}</table>")
    if tr.guards:
        body.append(
            "<h4>Guards</h4><ul>"
            + "".join(f"<li>{e(g)} {e(eff)}: {e(why)}</li>" for g, eff, why in tr.guards)
            + "</ul>"
        )
    added = cells_by_seq.get(tr.seq, [])
    if added:
        links = " ".join(f'<a href="#nb-{i}">cell {i}</a>' for i in added)
        body.append(f"<p>Added to the notebook: {links}</p>")
    return (
        f'<details id="t-{tr.seq:04d}"><summary>{head}</summary>'
        f'<div class="body">{"".join(body)}</div></details>'
    )


def _notebook(root: Path) -> tuple[str, dict[int, list[int]]]:
    try:
        nb = RunStore(root).read_json("notebook.ipynb")
    except FileNotFoundError:
        return "<p>No notebook yet.</p>", {}
    by_seq: dict[int, list[int]] = defaultdict(list)
    parts = []
    for i, cell in enumerate(nb.get("cells", [])):
        meta = cell.get("metadata", {}).get("bcc", {})
        if isinstance(meta.get("seq"), int):
            by_seq[meta["seq"]].append(i)
        source = "".join(cell.get("source", ""))
        where = "/".join(str(meta.get(k)) for k in ("stage", "step", "behavior") if meta.get(k))
        label = f"cell {i} · {cell.get('cell_type')} · {meta.get('role', '')} {where}"
        seq = meta.get("seq")
        link = f' <a href="#t-{seq:04d}">transition #{seq}</a>' if isinstance(seq, int) else ""
        out = [f'<div class="nbcell" id="nb-{i}"><div class="label">{e(label)}{link}</div>']
        out.append(_pre(source, "code" if cell.get("cell_type") == "code" else "md"))
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if "image/png" in data:
                png = "".join(data["image/png"]).replace("\n", "")
                out.append(f'<img alt="figure of cell {i}" src="data:image/png;base64,{png}">')
            text = o.get("text") or data.get("text/plain") or o.get("evalue") or ""
            text = "".join(text) if isinstance(text, list) else str(text)
            if text:
                out.append(_pre(text, "output"))
        out.append("</div>")
        parts.append("".join(out))
    return "".join(parts), dict(by_seq)


def _ledger(state: dict[str, Any]) -> str:
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{e(str(v.get(k) or ''))}</td>"
            for k in ("name", "status", "kind", "created_by", "updated_by", "deprecated_by")
        )
        + "</tr>"
        for v in state.get("ledger", [])
    )
    head = "".join(
        f"<th>{h}</th>" for h in ("name", "status", "kind", "born", "last changed", "deprecated")
    )
    return f"<table><tr>{head}</tr>{rows}</table>"


def _results(summary: dict[str, Any] | None) -> str:
    """The outcome and the verification (the answers, findings and figures are the reader's
    section's, above)."""
    if not summary:
        return "<p>The run has not finished: no summary yet.</p>"
    out = [f"<p><b>Outcome:</b> {e(str(summary.get('outcome') or summary.get('final_state')))}</p>"]
    v = summary.get("verification") or {}
    out.append(
        f"<h3>Verification</h3><p>{e(verification_text(v))}"
        + (f", results {e(str(v['results']))}" if v.get("results") else "")
        + "</p>"
    )
    return "".join(out)


def _alternatives(state: dict[str, Any]) -> str:
    """Every fork: each branch with its task, score or why it was dropped, and its cells."""
    out = []
    for f in state.get("forks") or []:
        out.append(
            f"<h3>{e(f['step'])} (transitions {f['seq']}–{f['join_seq']})</h3><p>Chosen by "
            f"<code>{e(f['choose'])}</code>, {e(f['better'])} is better.</p>"
        )
        for b in f["branches"]:
            score = f"{b['score']:.4g}" if b.get("score") is not None else "no score"
            verdict = "kept" if b["kept"] else f"not kept: {b['dropped']}" if b["dropped"] else ""
            cells = "".join(
                f'<div class="nbcell"><span class="status {e(c["status"])}">{e(c["status"])}'
                f"</span>{_pre(c['code'])}{_pre(c['output'], 'facts')}</div>"
                for c in b.get("cells", [])
            )
            out.append(
                f"<details{' open' if b['kept'] else ''}><summary><code>{e(b['behavior'])}"
                f"</code> {e(score)} <b>{e(verdict)}</b></summary><p>{e(b['task'])}</p>"
                f"{cells}</details>"
            )
    return "".join(out)


STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;margin-top:1.6em}
pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:28em;white-space:pre-wrap}
code{background:#f0f0f0;padding:0 .2em}ul.tree,ul.tree ul{list-style:none;padding-left:1.2em}
.status{display:inline-block;min-width:5.5em;text-align:center;border-radius:3px;padding:0 .3em;
font-size:.85em;background:#ddd}.complete{background:#c8efc8}.failed,.error,.dead{background:#f5c2c2}
.skipped,.partial,.retried,.timeout{background:#f8e3b0}.facts{color:#666;font-size:.85em}
.note{color:#a05a00;font-size:.9em}.guard,.forced{background:#ffe08a;border-radius:3px;
padding:0 .3em;margin-left:.3em;font-size:.8em}details{border:1px solid #ddd;margin:.3em 0;
padding:.2em .5em}summary{cursor:pointer}table{border-collapse:collapse}
td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left}img{max-width:100%}
.nbcell{border-left:3px solid #ddd;margin:.6em 0;padding-left:.6em}.label{color:#666;font-size:.85em}
"""


def _spent(usage: dict[str, Any]) -> str:
    """The run's tokens (cached ones apart) and cost, when a model was called."""
    if not usage.get("prompt_tokens"):
        return ""
    return (
        f", {usage['prompt_tokens']} prompt tokens ({usage.get('cached_tokens', 0)} cached), "
        f"{usage.get('completion_tokens', 0)} completion tokens, "
        f"${float(usage.get('cost_usd', 0)):.4f}"
    )


def render_report(root: Path) -> str:
    """The HTML of the run directory ``root`` (any state: running, aborted, completed)."""
    root = Path(root)
    store = RunStore(root)  # its reads never follow a link; a damaged file says so
    state = store.read_json("state.json")
    summary = store.read_json("summary.json") if (root / "summary.json").is_file() else None
    transitions = _transitions(store)
    notebook, cells_by_seq = _notebook(root)
    try:
        nb = store.read_json("notebook.ipynb")
    except (FileNotFoundError, InputError):
        nb = {}
    reader = reader_html(summary, nb, store.read_text("problem.md", missing=""))
    title = state.get("project_title") or state.get("problem_title") or root.name
    tree = plan_html(state, transitions)
    timeline = "".join(_transition_html(t, cells_by_seq) for t in transitions)
    counters = state.get("counters", {})
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{e(title)} — bcc report</title><style>{STYLE}{READER_STYLE}</style></head><body>"
        f"<h1>{e(title)}</h1><p>Run <code>{e(root.name)}</code>: {e(state.get('fsm_state', ''))}; "
        f"{counters.get('transitions', 0)} transitions, {counters.get('cells', 0)} cells, "
        f"{counters.get('llm_calls', 0)} model calls{e(per_transitions(summary or {}))}"
        f"{_spent(state.get('usage') or {})}. "
        '<a href="notebook.ipynb">notebook.ipynb</a> · <a href="summary.md">summary.md</a></p>'
        f"{reader}"
        f'<section id="results"><h2>Outcome and verification</h2>{_results(summary)}</section>'
        f'<section id="plan"><h2>Plan</h2><ul class="tree">{tree}</ul></section>'
        + (
            f'<section id="alternatives"><h2>Alternatives</h2>{_alternatives(state)}</section>'
            if state.get("forks")
            else ""
        )
        + f'<section id="timeline"><h2>Transitions</h2>{timeline}</section>'
        f'<section id="ledger"><h2>Variables</h2>{_ledger(state)}</section>'
        f'<section id="notebook"><h2>Notebook cells</h2>{notebook}</section>'
        "</body></html>"
    )


def write_report(store: RunStore) -> Path:
    """Write ``report.html`` into the run directory (atomically); return its path."""
    store.write("report.html", render_report(store.root))
    return store.root / "report.html"
