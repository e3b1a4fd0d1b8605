"""Cutting the offline analyst's code into cells a reader can follow.

A recipe's code is written as one script. ``reader_cells`` turns it into:

- one helper cell first (imports, functions and classes, hoisted in their order): the runner
  tags such a cell ``bcc-helpers`` and collapses it (``rundir.notebook.is_helper_source``);
- then the rest in short cells, cut where the script starts a new paragraph (a blank line or
  a comment before a statement) once a cell has a few lines, and before a cell grows past
  ``MAX_LINES``; never while a figure is being drawn (between ``plt.subplots``/``plt.figure``
  and ``plt.show``/``plt.close``), since the inline backend shows a figure when its cell ends.

A cell that is not the last keeps its value from being displayed (``;``), as in the script.
``result_cell`` turns a result template (the one-line ``Result:`` each step ends with) into a
function in a helper cell and one call.
"""

from __future__ import annotations

import ast
import re
import textwrap

from notebook_bcc.syntax import parse_module

__all__ = ["MAX_LINES", "reader_cells", "result_cell", "result_preamble", "split_script"]

MAX_LINES = 18  # a driver cell is cut before it grows past this many lines
MIN_LINES = 3  # ... and at a paragraph once it has this many

_DEFINES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_OPENS = re.compile(r"\bplt\.(subplots|figure|subplot_mosaic)\(")
_CLOSES = re.compile(r"\bplt\.(show|close)\(|\b_bcc_show\(")


def _units(source: str) -> list[tuple[str, ast.stmt, bool]]:
    """(text, statement, starts a paragraph) for each top-level statement, each with the
    comment lines written above it."""
    lines = source.splitlines()
    units = []
    previous_end = 0
    for node in parse_module(source).body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        gap = lines[previous_end : first - 1]
        paragraph = any(not line.strip() or line.lstrip().startswith("#") for line in gap)
        comments = [line for line in gap if line.strip()]
        text = "\n".join([*comments, *lines[first - 1 : node.end_lineno]])
        units.append((text, node, paragraph))
        previous_end = node.end_lineno or first
    return units


def _quiet(text: str, node: ast.stmt) -> str:
    """``text`` (ending with ``node``) with its last expression's value not displayed."""
    if not isinstance(node, ast.Expr) or _shows_nothing(node.value):
        return text
    lines = text.split("\n")
    last = lines[-1].encode()
    end = node.end_col_offset or len(last)
    lines[-1] = (last[:end] + b";" + last[end:]).decode()
    return "\n".join(lines)


def _shows_nothing(value: ast.expr) -> bool:
    """A call known to return None (``print``, ``display``, ``plt.show``...)."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name in {"print", "display", "show", "close", "savefig", "tight_layout", "_bcc_show"}


def reader_cells(source: str) -> list[str]:
    """The cells for one recipe script: a helper cell (if it defines anything), then short
    cells of the rest, in order."""
    helpers, rest = split_script(source)
    return ([helpers] if helpers else []) + rest


def split_script(source: str) -> tuple[str, list[str]]:
    """(the script's helper code, "" if it defines no function or class; the rest in short
    cells)."""
    try:
        units = _units(source)
    except SyntaxError:
        return "", [source]
    has_defs = any(isinstance(n, ast.FunctionDef | ast.ClassDef) for _, n, _ in units)
    helpers = [t for t, n, _ in units if has_defs and isinstance(n, _DEFINES)]
    rest = [(t, n, p) for t, n, p in units if not (has_defs and isinstance(n, _DEFINES))]
    chunks: list[list[tuple[str, ast.stmt]]] = []
    size, drawing = 0, False
    for text, node, paragraph in rest:
        n = text.count("\n") + 1
        cut = chunks and not drawing and ((paragraph and size >= MIN_LINES) or size + n > MAX_LINES)
        if not chunks or cut:
            chunks.append([])
            size = 0
        chunks[-1].append((text, node))
        size += n
        if _OPENS.search(text) and not _CLOSES.search(text):
            drawing = True
        elif _CLOSES.search(text):
            drawing = False
    cells = []
    for i, chunk in enumerate(chunks):
        texts = [t for t, _ in chunk]
        if i < len(chunks) - 1:
            texts[-1] = _quiet(texts[-1], chunk[-1][1])
        cells.append("\n".join(texts))
    helper = textwrap.dedent("\n\n".join(helpers)).strip()
    return (helper + "\n" if helper else ""), [
        textwrap.dedent(c).strip() + "\n" for c in cells if c.strip()
    ]


def result_cell(name: str, source: str, preamble: str = "") -> tuple[str, str]:
    """A result template as (helper cell defining ``_bcc_<name>_result()``, the call): its
    working names stay local to the function. ``preamble`` (see ``result_preamble``) runs
    first, inside it."""
    function = f"_bcc_{name}_result"
    code = (preamble.strip() + "\n" if preamble.strip() else "") + source.strip()
    body = textwrap.indent(code, "    ")
    doc = '    """Print the one-line Result: of this step (from the live variables)."""\n'
    return f"def {function}():\n{doc}{body}\n", f"{function}()\n"


def result_preamble(source: str) -> tuple[str, str]:
    """Split off the end of a script that only prepares its ``Result:`` line: the trailing
    top-level statements that use a ``_bcc_`` name and bind only ``_``-private names.
    Returns (the script without them, them)."""
    try:
        body = parse_module(source).body
    except SyntaxError:
        return source, ""
    lines = source.splitlines()
    cut = len(body)
    while cut > 0 and _prepares_result(body[cut - 1]):
        cut -= 1
    if cut == len(body) or cut == 0:
        return source, ""
    start = body[cut].lineno - 1
    return "\n".join(lines[:start]).rstrip() + "\n", "\n".join(lines[start:]).strip() + "\n"


def _prepares_result(node: ast.stmt) -> bool:
    if isinstance(node, _DEFINES):
        return False
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
    in_comprehensions = {
        id(n)
        for c in ast.walk(node)
        if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target)
    }  # a comprehension's own variables bind nothing outside it
    stored = [
        n.id for n in names if isinstance(n.ctx, ast.Store) and id(n) not in in_comprehensions
    ]
    uses_bcc = any(n.id.startswith("_bcc_") for n in names)
    return uses_bcc and all(name.startswith("_") for name in stored)
