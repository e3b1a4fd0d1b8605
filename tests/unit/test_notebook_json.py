"""NotebookJson: nbformat's exact text, with only new or edited cells re-encoded and validated."""

from __future__ import annotations

import base64

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from notebook_bcc.rundir.notebook_json import NotebookJson

PNG = base64.b64encode(bytes(range(256)) * 40).decode()


def rich_notebook() -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["bcc"] = {"title": 'Été "quoted" ünïcode', "variables": [{"name": "df"}]}
    nb.metadata["orig_nbformat"] = 3  # transient: nbformat drops it from the file
    nb.cells.append(new_markdown_cell("# Title\n\nline two\n", metadata={"bcc": {"role": "t"}}))
    code = new_code_cell("x = 1\nprint(x)\n\n", metadata={"trusted": True, "tags": ["a"]})
    code.outputs = [
        new_output("stream", name="stdout", text="1\n2\nno newline"),
        new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>\nsize"}),
        new_output(
            "execute_result",
            data={"text/html": "<b>x</b>\n<i>y</i>", "application/json": {"a": [1, 2]}},
            execution_count=3,
        ),
        new_output("error", ename="E", evalue="v", traceback=["line 1", "line\n2"]),
    ]
    code.execution_count = 3
    nb.cells.append(code)
    nb.cells.append(new_code_cell(""))
    return nb


def test_text_is_nbformat_writes_byte_for_byte_across_edits() -> None:
    nb = rich_notebook()
    encode = NotebookJson()
    assert encode(nb) == nbformat.writes(nb)
    nb.cells[1].outputs[0]["text"] = "changed\n"  # edited in place: its cached text is stale
    nb.cells.append(new_markdown_cell("after"))
    nb.metadata["bcc"]["variables"].append({"name": "model"})
    assert encode(nb) == nbformat.writes(nb)
    del nb.cells[0]
    assert encode(nb) == nbformat.writes(nb)
    nb.cells.clear()
    assert encode(nb) == nbformat.writes(nb)


def test_a_new_or_edited_invalid_cell_is_refused() -> None:
    nb = rich_notebook()
    encode = NotebookJson()
    encode(nb)
    nb.cells[1]["execution_count"] = "three"
    with pytest.raises(nbformat.ValidationError):
        encode(nb)
    nb.cells[1]["execution_count"] = 3
    nb.cells.append(new_code_cell("y = 2"))
    nb.cells[-1]["id"] = nb.cells[0]["id"]
    with pytest.raises(nbformat.ValidationError, match="Non-unique cell id"):
        encode(nb)
