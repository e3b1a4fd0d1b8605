"""The notebook reads like an analyst wrote it (issue 17): plain headings, the question on
top, helper cells tagged and collapsed, the offline analyst's code in short cells."""

from __future__ import annotations

import nbformat

from notebook_bcc.agents.offline.cells import MAX_LINES, reader_cells, result_cell
from notebook_bcc.rundir.notebook import (
    HELPER_TAG,
    CellTag,
    NotebookDocument,
    is_helper_source,
    reader_goal,
    reader_question,
)

TAG = CellTag("s", "t", "b", 1, 1)


def _doc(question: str = "") -> NotebookDocument:
    return NotebookDocument.create(
        "Penguins", "Penguins", ["assets/p.csv"], 42, lambda text: None, question=question
    )


def test_reader_goal_keeps_the_prose_and_files_the_contract() -> None:
    prose, contract = reader_goal(
        "Audit and clean the data. Artifacts: clean_dataset; Acceptance: no missing target."
    )
    assert prose == "Audit and clean the data."
    assert contract == {"artifacts": "clean_dataset", "acceptance": "no missing target"}
    assert reader_goal("Understand distributions.") == ("Understand distributions.", {})


def test_headings_carry_no_contract_text_and_keep_it_in_metadata() -> None:
    doc = _doc()
    stage = doc.add_stage_heading(
        "Data quality", "Audit the data. Artifacts: clean_dataset; Acceptance: it has rows.", TAG
    )
    step = doc.add_step_heading("Cleaning", TAG, "Fix what the audit found. Acceptance: ok.")
    cells = doc.nb.cells
    assert cells[stage].source == "## Data quality\n\nAudit the data."
    assert cells[stage].metadata["bcc"]["contract"]["artifacts"] == "clean_dataset"
    assert cells[step].source == "### Cleaning\n\nFix what the audit found."
    nbformat.validate(doc.nb)


def test_the_title_cell_states_the_question_and_keeps_it_when_retitled() -> None:
    body = "# Which species?\n\nPredict the species.\n\nData: `p.csv`."
    doc = _doc(reader_question(body))
    assert doc.nb.cells[0].source == (
        "# Penguins\n\n**Which species?**\n\nPredict the species.\n\nData: `p.csv`."
    )
    doc.set_title("Penguin species")
    assert doc.nb.cells[0].source.startswith("# Penguin species\n\n**Which species?**")
    assert reader_question("a" * 50 + "\n\n" + "b" * 50, limit=60) == "a" * 50


def test_a_cell_that_only_defines_is_a_collapsed_helper_cell() -> None:
    assert is_helper_source("import re\nLIMIT = 3\n\ndef f(x):\n    return x\n")
    assert not is_helper_source("import re\nimport pandas as pd\n")  # nothing defined
    assert not is_helper_source("def f(x):\n    return x\n\nf(1)\n")  # it also runs
    assert not is_helper_source("def f(:\n")
    doc = _doc()
    helper = doc.nb.cells[doc.add_code("def f(x):\n    return x\n", TAG)]
    plain = doc.nb.cells[doc.add_code("x = 1\n", TAG)]
    assert helper.metadata["tags"] == [HELPER_TAG]
    assert helper.metadata["jupyter"] == {"source_hidden": True}
    assert "tags" not in plain.metadata and "jupyter" not in plain.metadata
    nbformat.validate(doc.nb)


SCRIPT = """import math

def half(x):
    return x / 2

# first paragraph
a = 1
b = half(4)
c = a + b

# second paragraph, drawn
fig = plt.subplots()
d = c * 2

e = d + 1
plt.show()

# third
total = math.floor(a + b + c + d + e)
total
"""


def test_reader_cells_hoist_helpers_and_cut_at_paragraphs_not_in_a_figure() -> None:
    cells = reader_cells(SCRIPT)
    assert cells[0] == "import math\n\ndef half(x):\n    return x / 2\n"
    assert is_helper_source(cells[0])
    assert cells[1].startswith("# first paragraph\na = 1")
    drawn = next(c for c in cells if "plt.subplots()" in c)
    assert "plt.show()" in drawn  # not cut between the figure and its show
    assert cells[-1].endswith("total\n")  # the last value is still displayed
    namespace: dict[str, object] = {"plt": _Plt()}
    for cell in cells:
        exec(cell, namespace)
    assert namespace["total"] == 19  # 1 + 2 + 3 + 6 + 7


def test_reader_cells_keep_a_cells_size_bounded_and_quiet_values_before_the_end() -> None:
    long = "\n".join(f"v{i} = {i}" for i in range(50)) + "\nv0\nv1\n"
    cells = reader_cells(long)
    assert all(c.count("\n") <= MAX_LINES for c in cells)
    assert sum(c.count("\n") for c in cells) == 52
    script = "x = 1\ny = 2\nz = 3\n\n# then\nw = 4\nv = 5\nx\n\n# end\nb = 4\nprint(b)\n"
    middle = reader_cells(script)[1]
    assert middle == "# then\nw = 4\nv = 5\nx;\n"  # not displayed, as in the script
    quiet_calls = reader_cells("a = 1\nb = 2\nprint(a)\n\n# end\nc = 3\nd = 4\ne = 5\n")
    assert quiet_calls[0].endswith("print(a)\n")  # None anyway: no ';' needed


def test_result_cell_is_a_function_and_one_call() -> None:
    definition, call = result_cell("clean", "_x = rows * 2\nprint(f'Result: {_x}')\n")
    assert definition.startswith("def _bcc_clean_result():")
    assert call == "_bcc_clean_result()\n"
    namespace: dict[str, object] = {"rows": 3}
    exec(definition, namespace)
    exec(call, namespace)
    assert "_x" not in namespace  # its working names stay local


class _Plt:
    def subplots(self) -> tuple[None, None]:
        return None, None

    def show(self) -> None:
        return None


def test_result_preamble_moves_only_the_trailing_result_plumbing() -> None:
    from notebook_bcc.agents.offline.cells import result_preamble

    script = (
        "model = fit()\n_bcc_extra = []\nif _gap:\n    _bcc_extra.append('gap')\n"
        "_bcc_labels = {c: m for c, m in methods.items()}\n"
    )
    head, preamble = result_preamble(script)
    assert head == "model = fit()\n"
    assert preamble.startswith("_bcc_extra = []") and preamble.endswith("methods.items()}\n")
    assert result_preamble("x = 1\nscore = _bcc_score()\n") == ("x = 1\nscore = _bcc_score()\n", "")


def test_save_writes_only_after_an_edit_and_a_cells_save_is_throttled() -> None:
    writes: list[str] = []
    doc = NotebookDocument.create("T", "T", ["assets/p.csv"], 42, writes.append)
    doc.save()
    doc.save()  # nothing edited: not written again
    assert len(writes) == 1
    doc.add_code("x = 1\n", TAG)
    doc.save(unless_within=60)  # a cell's save right after the last one: skipped
    assert len(writes) == 1
    doc.save()  # the transition's save writes it
    assert len(writes) == 2 and '"x = 1\\n"' in writes[-1]
