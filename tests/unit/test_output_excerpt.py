"""What an agent reads of a cell's outputs (``kernel/outputs.excerpt``)."""

from __future__ import annotations

from IPython.core.formatters import DisplayFormatter
from IPython.display import Markdown

from notebook_bcc.kernel.outputs import excerpt


def _displayed(obj: object) -> dict:
    """The display_data message IPython's ``display(obj)`` sends."""
    data, metadata = DisplayFormatter().format(obj)
    return {"output_type": "display_data", "data": data, "metadata": metadata}


def test_a_displayed_markdown_is_read_as_its_text_not_its_repr():
    summary = "## Findings\n- ozone rises with temperature (r = 0.70)"
    shown = excerpt([_displayed(Markdown(summary))], "ok", None, None, 4000)
    assert shown == summary + "\n"
    assert "object>" not in shown


def test_a_table_is_still_read_as_its_plain_text_and_a_figure_by_its_kind():
    import pandas as pd

    table = _displayed(pd.DataFrame({"a": [1, 2]}))
    assert "text/html" in table["data"]
    assert excerpt([table], "ok", None, None, 4000) == table["data"]["text/plain"] + "\n"
    figure = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "x"}}
    assert excerpt([figure], "ok", None, None, 4000) == "[image/png]\n"
