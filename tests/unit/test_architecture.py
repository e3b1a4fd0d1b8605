"""The package's import graph: no cycle among modules, and packages import only downwards.

Import-time edges only: imports at module level, outside ``if TYPE_CHECKING:``. (A function
may import lazily, as ``agents.make_agent`` does, to keep ``bcc --help`` and offline runs
free of litellm.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "notebook_bcc"
#: lower layers never import higher ones; modules of one layer may import each other only
#: inside one subpackage
LAYERS = {
    "errors": 0,
    "fsm": 0,
    "config": 0,
    "failpoints": 0,
    "progress": 0,
    "syntax": 0,
    "redaction": 0,
    "own_files": 0,
    "upstream": 0,
    "inputs": 1,
    "kernel": 1,
    "rundir": 1,
    "contract": 2,
    "agents": 3,
    "workflow": 4,
    "batch": 5,
    "command_run": 5,
    "api": 5,
    "cli": 6,
    "__main__": 7,
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules this file imports at import time. ``from pkg import sub`` depends
    on ``sub`` (the package itself is being imported already, as every parent is)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:  # module level only
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("notebook_bcc"):
                subs = {f"{node.module}.{a.name}" for a in node.names} & modules
                found |= subs if len(subs) == len(node.names) else {node.module, *subs}
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("notebook_bcc"))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    return {
        name: {m for m in _imports(path, set(modules)) if m in modules and m != name}
        for name, path in modules.items()
    }


def test_no_relative_imports() -> None:
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level], path


def test_the_module_graph_has_no_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, "import cycle: " + " -> ".join([*trail, node, nxt])
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def _layer(module: str) -> tuple[int, str]:
    top = module.split(".")[1] if "." in module else "__init__"
    return LAYERS.get(top, -1), top


def test_packages_import_only_downwards() -> None:
    wrong = []
    for module, targets in _graph().items():
        if module == "notebook_bcc":
            continue
        layer, top = _layer(module)
        assert layer >= 0, f"{module}: its package is missing from LAYERS"
        for target in targets:
            t_layer, t_top = _layer(target)
            if t_top != top and t_layer >= layer:
                wrong.append(f"{module} -> {target}")
    assert not wrong, wrong


def test_the_cli_process_declines_the_slow_iri_checker() -> None:
    """jsonschema's rfc3987_syntax costs ~1 s per bcc start (cli.py says why)."""
    import subprocess
    import sys

    code = (
        "import sys, notebook_bcc.cli, nbformat\n"
        "print([sys.modules.get(m) for m in ('rfc3987_syntax', 'rfc3986_validator', "
        "'isoduration', 'arrow')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[None, None, None, None]"


MAX_MODULE_LINES = 400
MAX_CODE_STRING_LINES = 15


def test_every_module_can_be_read_in_one_sitting() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def _is_python(text: str) -> bool:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    return any(not isinstance(n, ast.Expr) for n in tree.body)  # prose parses to nothing else


def test_no_code_hides_in_a_string() -> None:
    """Code belongs in a Python file of the package (linted, highlighted), read with
    importlib.resources as the offline templates and the in-kernel helper are."""
    hidden = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            lines = [ln for ln in node.value.splitlines() if ln.strip()]
            if len(lines) > MAX_CODE_STRING_LINES and _is_python(node.value):
                hidden.append(f"{path.relative_to(PACKAGE)}:{node.lineno} ({len(lines)} lines)")
    assert not hidden, hidden


def test_the_architecture_doc_draws_the_layers_this_test_enforces() -> None:
    """docs/architecture.md's layer table names every top-level module once, at its layer."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn: dict[str, int] = {}
    for row in re.findall(r"^\| (\d+) \| ([^|]+) \|", doc, re.MULTILINE):
        for name in re.findall(r"`([^`]+)`", row[1]):
            top = name.removesuffix("/").removesuffix(".py")
            assert top not in drawn, f"docs/architecture.md draws {name} twice"
            drawn[top] = int(row[0])
    assert drawn == LAYERS
