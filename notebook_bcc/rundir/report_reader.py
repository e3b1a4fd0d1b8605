"""The reader's part of report.html, first on the page: what the problem asked and its answers
(named values rounded, the exact value on hover), the findings rendered from markdown, the
run's figures inline (each a click away from the cell that drew it), the verification and the
cost. The process (plan, transitions, variables, cells) follows it (``report.py``).

Markdown is rendered by markdown-it-py (CommonMark) with raw HTML off: a ``<script>`` or an
``<img onerror>`` the model wrote is shown as text, never run; links keep markdown-it's own
check (no ``javascript:``).
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

from markdown_it import MarkdownIt

from notebook_bcc.rundir.results import (
    READING_DIFFERS,
    is_shortened,
    named_text,
    reading_lines,
    value_text,
)

__all__ = ["READER_STYLE", "markdown_html", "reader_html", "rounded_html"]

e = html.escape

#: significant digits a number is shown with (the exact value is its tooltip)
DIGITS = 4

READER_STYLE = """
#reader{font-size:15px}#reader .answers li{margin:.5em 0}#reader .named{color:#444}
#reader .md h1,#reader .md h2,#reader .md h3,#reader .md h4{margin:.8em 0 .3em;border:none}
#reader .md h1,#reader .md h2{font-size:1.2em}#reader .md h3,#reader .md h4{font-size:1.05em}
#reader figure{display:inline-block;margin:.5em 1em .5em 0;vertical-align:top}
#reader figure img{max-width:520px;width:100%;border:1px solid #ddd}#reader pre,#reader table{max-width:100%;overflow-x:auto}
#reader figcaption{font-size:.85em;color:#555}span.num{border-bottom:1px dotted #999}
.differ{color:#a40}
@media print{section#plan,section#alternatives,section#timeline,section#ledger,
section#notebook{display:none}#reader figure img{max-width:100%}#reader figure{break-inside:avoid}
a{color:inherit;text-decoration:none}}
"""


def markdown_html(text: str, inline: bool = False) -> str:
    """CommonMark to HTML, raw HTML escaped (shown as text), tables on; ``inline``: one line
    (a question's text), no paragraph around it."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    return md.renderInline(text or "") if inline else md.render(text or "")


def _round(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return repr(value)
    if abs(value) >= 10**DIGITS and float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.{DIGITS}g}"


def rounded_html(value: Any) -> str:
    """A value for the reader: a number to ``DIGITS`` significant digits with its exact value
    on hover; a list or dict item by item; anything else as Python writes it."""
    if isinstance(value, bool) or value is None:
        return e(repr(value))
    if isinstance(value, int | float):
        shown = _round(float(value)) if isinstance(value, float) else f"{value:,}"
        exact = repr(value)
        if shown == exact:
            return e(shown)
        return f'<span class="num" title="{e(exact)}">{e(shown)}</span>'
    if is_shortened(value):
        return e(value_text(value))
    if isinstance(value, list | tuple):
        return ", ".join(rounded_html(v) for v in value)
    if isinstance(value, dict):
        items = ", ".join(f"{e(str(k))}: {rounded_html(v)}" for k, v in value.items())
        return "{" + items + "}"
    return e(str(value))


def _answer(a: dict[str, Any]) -> str:
    value = rounded_html(a["value"]) if a.get("answered") else "<i>not answered</i>"
    text = str(a.get("text") or "").removeprefix("not answered: ")
    named = a.get("values") or {}
    missing = set(a.get("missing_values") or ())
    values = ", ".join(
        f"{e(n)} = {'<i>not given</i>' if n in missing else rounded_html(v)}"
        for n, v in named.items()
    )
    readings = "".join(
        f'<br><span class="{"differ" if line.endswith(READING_DIFFERS) else ""}">{e(line)}</span>'
        for line in reading_lines(a)
    )
    return (
        f"<li><b>{markdown_html(a['question'], inline=True)}</b><br>{value}"
        + (f" — {e(text)}" if text else "")
        + (f'<br><span class="named">{values}</span>' if values else "")
        + (f"<br><i>shortened: {e('; '.join(a['shortened']))}</i>" if a.get("shortened") else "")
        + readings
        + f'<br><code class="named">{e(named_text(named, tuple(missing)))}</code>' * bool(named)
        + "</li>"
    )


def _figures(nb: dict[str, Any]) -> str:
    out = []
    for i, cell in enumerate(nb.get("cells", [])):
        for o in cell.get("outputs", []):
            png = (o.get("data") or {}).get("image/png")
            if not png:
                continue
            data = "".join(png).replace("\n", "") if isinstance(png, list) else str(png)
            out.append(
                f'<figure><img alt="figure drawn by cell {i}" src="data:image/png;base64,'
                f'{e(data)}"><figcaption><a href="#nb-{i}">drawn by cell {i}</a></figcaption>'
                "</figure>"
            )
    return "".join(out)


def reader_html(summary: dict[str, Any] | None, nb: dict[str, Any], problem: str) -> str:
    """The reader's section: problem, answers, key results, findings, figures, verification."""
    out = ['<section id="reader"><h2>What was asked</h2>']
    body = re.sub(r"\A---\s*\n.*?\n---\s*\n", "", problem, count=1, flags=re.S)  # front matter
    out.append(f'<div class="md problem">{markdown_html(body)}</div>')
    if summary:
        answers = summary.get("answers") or []
        if answers:
            out.append('<h2>Answers</h2><ol class="answers">')
            out += [_answer(a) for a in answers]
            out.append("</ol>")
        for n, f in enumerate(summary.get("follow_ups") or [], 1):
            out.append(f'<h3>Follow-up {n}: {e(f["question"])}</h3><ol class="answers">')
            out += [_answer(a) for a in f.get("answers") or []]
            out.append("</ol>")
        key = summary.get("key_results")
        if isinstance(key, dict) and key:
            rows = "".join(
                f"<tr><td>{e(str(k))}</td><td>{rounded_html(v)}</td></tr>" for k, v in key.items()
            )
            out.append(f'<h2>Key results</h2><table class="key">{rows}</table>')
        found = summary.get("findings")
        if isinstance(found, dict) and found.get("text"):
            out.append(f'<h2>Findings</h2><div class="md findings">{markdown_html(found["text"])}')
            out.append(f"<p><i>From {e(str(found.get('source')))}.</i></p></div>")
    figures = _figures(nb)
    if figures:
        out.append(f'<h2>Figures</h2><div class="figures">{figures}</div>')
    out.append("</section>")
    return "".join(out)
