"""nbformat's exact file text for a notebook, re-encoding only the cells that changed.

``nbformat.writes`` deep-copies the whole notebook, splits its text into lines and encodes it
with json's pure-Python indenting encoder: ~8 ms for a 60-cell notebook with figures, paid after
every transition while the notebook only grows at its end. ``NotebookJson`` keys each cell by
its compact encoding (json's C encoder, ~20x faster) and keeps the indented text of the cells it
has seen, so a save re-encodes and re-validates only new or edited cells and the metadata. The
text is byte for byte what ``nbformat.writes`` produces (``tests/unit/test_notebook_json.py``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import nbformat
from nbformat.v4.nbjson import BytesEncoder
from nbformat.v4.rwbase import split_lines, strip_transient

__all__ = ["NotebookJson"]

_FORMAT: dict[str, Any] = {
    "cls": BytesEncoder,
    "indent": 1,
    "sort_keys": True,
    "separators": (",", ": "),
    "ensure_ascii": False,
}
_EMPTY_CELLS = '"cells": []'
_TRANSIENT = ("orig_nbformat", "orig_nbformat_minor", "signature")  # as strip_transient drops


class NotebookJson:
    """Call with a notebook node: its nbformat text. Raises ``nbformat.ValidationError`` if the
    notebook is invalid (its metadata, or a cell new since the last call)."""

    def __init__(self) -> None:
        self._cells: dict[str, str] = {}  # compact JSON of a cell -> its text in the file

    def __call__(self, nb: Any) -> str:
        known, texts, fresh = self._cells, [], []
        seen: dict[str, str] = {}
        for cell in nb.cells:
            key = json.dumps(cell, sort_keys=True, cls=BytesEncoder)
            text = seen.get(key) or known.get(key)
            if text is None:
                fresh.append(cell)
                text = _cell_text(cell)
            seen[key] = text
            texts.append(text)
        self._cells = seen
        head = _head(nb)
        _validate(head, fresh, nb.cells)
        top = json.dumps(head, **_FORMAT)
        if not texts:
            return top
        body = '"cells": [\n  ' + ",\n  ".join(texts) + "\n ]"
        return top.replace(_EMPTY_CELLS, body, 1)


def _head(nb: Any) -> dict[str, Any]:
    """The notebook without its cells and without what ``strip_transient`` drops, uncopied."""
    head = {k: v for k, v in nb.items() if k != "cells"}
    head["metadata"] = {k: v for k, v in nb.metadata.items() if k not in _TRANSIENT}
    head["cells"] = []
    return head


def _cell_text(cell: Any) -> str:
    """A cell as it reads inside ``"cells": [...]`` (two levels in: each line after the first
    indented by two more spaces)."""
    one = nbformat.from_dict({"metadata": {}, "cells": [copy.deepcopy(cell)]})
    split = strip_transient(split_lines(one)).cells[0]
    return json.dumps(split, **_FORMAT).replace("\n", "\n  ")


def _validate(head: dict[str, Any], fresh: list[Any], cells: list[Any]) -> None:
    """nbformat's validation of the notebook as written without its cells but the ``fresh``
    ones (the others passed before), and cell ids unique across all ``cells``."""
    ids = [c.get("id") for c in cells]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise nbformat.ValidationError(f"Non-unique cell id {dup!r} detected.")
    nbformat.validate({**head, "cells": fresh})
