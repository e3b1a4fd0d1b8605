"""The clean notebook: nbformat 4.5 document, parameters cell, headings, cell metadata.

``notebook.ipynb`` holds only the cells that ran without error, in order, plus the prose around
them. Saving is delegated to a writer callable (the run store's atomic write).
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from notebook_bcc.rundir.notebook_json import NotebookJson
from notebook_bcc.syntax import parse_module

__all__ = ["CellTag", "NotebookDocument", "parameters_source"]

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


@dataclass(frozen=True)
class CellTag:
    """``metadata.bcc`` of a generated cell."""

    stage: str
    step: str
    behavior: str
    iteration: int
    seq: int

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "step": self.step,
            "behavior": self.behavior,
            "iteration": self.iteration,
            "seq": self.seq,
        }


def parameters_source(problem_title: str, files: Sequence[str], seed: int) -> str:
    """The papermill-compatible parameters cell."""
    return (
        "# Parameters (papermill: -p user_submit_files '[\"other.csv\"]')\n"
        f"user_problem = {json.dumps(problem_title)}\n"
        f"user_submit_files = {json.dumps(list(files))}\n"
        f"seed = {int(seed)}\n"
        "\n"
        "import random\n"
        "import numpy as np\n"
        "random.seed(seed)\n"
        "np.random.seed(seed)\n"
    )


INPUTS_SOURCE = (
    "# papermill -p passes strings: accept a JSON list or a single path as well as a list\n"
    "if isinstance(user_submit_files, str):\n"
    "    import json\n"
    "    _text = user_submit_files.strip()\n"
    '    user_submit_files = json.loads(_text) if _text.startswith("[") else [_text]\n'
    "user_submit_files = [str(path) for path in user_submit_files]\n"
)


#: the tag of code cells that only define (imports, functions, classes, constants): set-up
#: collapsed in Jupyter; ``nbconvert --TagRemovePreprocessor.remove_input_tags bcc-helpers``
#: hides them in exports
HELPER_TAG = "bcc-helpers"

_CONTRACT = re.compile(r"\s*\b(Artifacts|Acceptance)\s*:\s*", re.IGNORECASE)


def reader_goal(goal: str) -> tuple[str, dict[str, str]]:
    """A goal as a reader wants it: the prose before any "Artifacts:" or "Acceptance:"
    clause, and those clauses by name (for ``metadata.bcc.contract``)."""
    parts = _CONTRACT.split(goal.strip())
    prose = parts[0].strip().rstrip(";").strip()
    contract: dict[str, str] = {}
    for name, text in zip(parts[1::2], parts[2::2], strict=True):
        contract[name.lower()] = text.strip().rstrip(";.").strip()
    return prose, contract


def reader_question(body: str, limit: int = 1200) -> str:
    """The problem's text for the top of the notebook: without a leading ``#`` heading
    (the title is above it), whole paragraphs up to ``limit`` characters."""
    lines = body.strip().splitlines()
    if lines and lines[0].startswith("#"):
        heading = lines.pop(0).lstrip("#").strip()
        lines = [f"**{heading}**", "", *lines] if heading else lines
    paragraphs = [p.strip() for p in "\n".join(lines).split("\n\n") if p.strip()]
    kept: list[str] = []
    for paragraph in paragraphs:
        if kept and sum(len(p) for p in kept) + len(paragraph) > limit:
            break
        kept.append(paragraph)
    return "\n\n".join(kept)


def _title_source(title: str, question: str) -> str:
    return f"# {title}" + (f"\n\n{question}" if question else "")


def is_helper_source(source: str) -> bool:
    """True for code that only defines: imports, ``def``/``class`` (at least one) and
    assignments of constants; it shows nothing and a reader can skip it."""
    try:
        body = parse_module(source).body
    except SyntaxError:
        return False
    defines = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    if not any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for node in body
    ):
        return False
    for node in body:
        if isinstance(node, defines):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, ast.Assign | ast.AnnAssign) and _is_constant(node.value):
            continue
        return False
    return True


def _is_constant(node: ast.expr | None) -> bool:
    if node is None:
        return True
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


class NotebookDocument:
    """An nbformat notebook plus the operations the runner needs; ``save`` after each change."""

    def __init__(self, nb: nbformat.NotebookNode, writer: Callable[[str], None]) -> None:
        self.nb = nb
        self._writer = writer
        self._edits = 1  # edits so far (a new or loaded notebook counts as one: not saved)
        self._saved_edits = 0  # ... as of the last save
        self._saved_at = float("-inf")  # time.monotonic() of the last save
        self._json = NotebookJson()  # re-encodes only the cells changed since the last save

    @classmethod
    def create(
        cls,
        title: str,
        problem_title: str,
        files: Sequence[str],
        seed: int,
        writer: Callable[[str], None],
        question: str = "",
    ) -> NotebookDocument:
        """A new notebook: the title with the problem's question under it (the first screen
        says what the analysis is about), then the parameters and inputs cells."""
        nb = new_notebook()
        nb.nbformat, nb.nbformat_minor = 4, 5
        nb.metadata["kernelspec"] = dict(KERNELSPEC)
        nb.metadata["language_info"] = {"name": "python"}
        question = reader_question(question)
        if question.rstrip(".?! ").casefold() == title.rstrip(".?! ").casefold():
            question = ""  # the title already says it
        nb.metadata["bcc"] = {"title": title, "variables": [], "verification": None}
        if question:
            nb.metadata["bcc"]["question"] = question
        nb.cells.append(
            new_markdown_cell(_title_source(title, question), metadata={"bcc": {"role": "title"}})
        )
        params = new_code_cell(
            parameters_source(problem_title, files, seed),
            metadata={"tags": ["parameters"], "bcc": {"role": "parameters"}},
        )
        nb.cells.append(params)
        nb.cells.append(new_code_cell(INPUTS_SOURCE, metadata={"bcc": {"role": "inputs"}}))
        return cls(nb, writer)

    @classmethod
    def load(cls, text: str, writer: Callable[[str], None]) -> NotebookDocument:
        return cls(nbformat.reads(text, as_version=4), writer)

    # -- edits ----------------------------------------------------------------------------
    def set_title(self, title: str) -> None:
        self.edited()
        self.nb.metadata["bcc"]["title"] = title
        self.nb.cells[0].source = _title_source(title, self.nb.metadata["bcc"].get("question", ""))

    def add_markdown(self, text: str, tag: CellTag | None = None, role: str = "text") -> int:
        meta = {"bcc": {**(tag.to_json() if tag else {}), "role": role}}
        self.edited()
        self.nb.cells.append(new_markdown_cell(text, metadata=meta))
        return len(self.nb.cells) - 1

    def add_stage_heading(self, title: str, goal: str, tag: CellTag) -> int:
        """Entering a stage: its title as a heading, then its goal in plain words (the
        artifacts and acceptance clauses go to ``metadata.bcc.contract``, not the prose)."""
        return self._heading("##", title, goal, tag, "stage")

    def add_step_heading(self, title: str, tag: CellTag, goal: str = "") -> int:
        return self._heading("###", title, goal, tag, "step")

    def _heading(self, level: str, title: str, goal: str, tag: CellTag, role: str) -> int:
        prose, contract = reader_goal(goal)
        index = self.add_markdown(f"{level} {title}" + (f"\n\n{prose}" if prose else ""), tag, role)
        if contract:
            self.nb.cells[index].metadata["bcc"]["contract"] = contract
        return index

    def add_failure_note(self, step_title: str, reason: str, feedback: str, tag: CellTag) -> int:
        """A step given up at its cap (G3): why, and the reviewer's last words."""
        text = f"> **Step not completed.** {step_title}: {reason}. Last feedback: {feedback}"
        return self.add_markdown(text, tag, role="failure")

    def add_skip_note(self, title: str, reason: str, tag: CellTag) -> int:
        """A stage or step skipped before it started (G8): what it needed and why it is not there."""
        return self.add_markdown(f"> **Skipped.** {title}: {reason}.", tag, role="skipped")

    def add_code(
        self,
        source: str,
        tag: CellTag,
        outputs: Sequence[dict[str, Any]] = (),
        execution_count: int | None = None,
        failed: bool = False,
    ) -> int:
        meta: dict[str, Any] = {"bcc": {**tag.to_json(), "role": "code"}}
        if failed:
            meta["bcc"]["failed"] = True
            meta["tags"] = ["raises-exception"]
        if is_helper_source(source):  # set-up a reader need not read: tagged and collapsed
            meta["tags"] = [*meta.get("tags", []), HELPER_TAG]
            meta["jupyter"] = {"source_hidden": True}
        cell = new_code_cell(source, metadata=meta, execution_count=execution_count)
        cell.outputs = [nbformat.from_dict(o) for o in outputs]
        self.edited()
        self.nb.cells.append(cell)
        return len(self.nb.cells) - 1

    def remove(self, index: int) -> None:
        self.edited()
        del self.nb.cells[index]

    def cells_after(self, seq: int) -> list[int]:
        """Indexes of cells added by transitions later than ``seq`` (not yet committed)."""
        return [
            i
            for i, cell in enumerate(self.nb.cells)
            if cell.metadata.get("bcc", {}).get("seq", 0) > seq
        ]

    def setup_cells(self) -> list[nbformat.NotebookNode]:
        """The parameters cell and the inputs cell that follows it."""
        return [
            c
            for c in self.nb.cells[:3]
            if c.metadata.get("bcc", {}).get("role") in ("parameters", "inputs")
        ]

    def set_outputs(
        self, cell: nbformat.NotebookNode, outputs: Sequence[dict[str, Any]], count: int | None
    ) -> None:
        self.edited()
        cell.outputs = [nbformat.from_dict(o) for o in outputs]
        cell.execution_count = count

    def set_variables(self, variables: list[dict[str, Any]]) -> None:
        self.edited()
        self.nb.metadata["bcc"]["variables"] = variables

    def set_verification(self, verification: dict[str, Any]) -> None:
        self.edited()
        self.nb.metadata["bcc"]["verification"] = verification

    # -- reading --------------------------------------------------------------------------
    def code_sources(self, include_failed: bool = False) -> list[str]:
        """Sources of code cells in order (the parameters cell first)."""
        return [
            c.source
            for c in self.nb.cells
            if c.cell_type == "code"
            and (include_failed or not c.metadata.get("bcc", {}).get("failed"))
        ]

    def to_text(self) -> str:
        """The notebook as ``nbformat.writes`` writes it; raises ``ValidationError`` if it is
        invalid (see ``NotebookJson``: cells are validated once, when new or edited)."""
        return self._json(self.nb)

    def edited(self) -> None:
        """Note a change made to ``nb`` (the edit methods call it; code that changes ``nb``
        directly must too, or ``save`` may skip it)."""
        self._edits += 1

    def save(self, *, unless_within: float = 0.0) -> None:
        """Write the notebook, unless nothing was edited since the last save, or
        (``unless_within`` seconds) the last write is that recent: a save inside a transition
        only keeps a live reader's view fresh (resume drops a transition's uncommitted cells
        anyway), and the transition's own save follows."""
        if self._edits == self._saved_edits:
            return
        if unless_within and time.monotonic() - self._saved_at < unless_within:
            return
        edits = self._edits
        self._writer(self.to_text())
        self._saved_edits, self._saved_at = edits, time.monotonic()
