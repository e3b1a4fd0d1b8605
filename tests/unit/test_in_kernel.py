"""The in-kernel helper (``kernel/in_kernel.py``) imported as an ordinary module, outside a
kernel: its entry points run on a stand-in for IPython's shell (the attributes they read)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from notebook_bcc.kernel import helper_source, in_kernel


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    user_ns: dict = {"In": [], "Out": {}}
    hidden = {"In": user_ns["In"], "Out": user_ns["Out"]}
    fake = SimpleNamespace(
        user_ns=user_ns,
        user_ns_hidden=hidden,
        all_ns_refs=[user_ns, hidden],
        history_manager=SimpleNamespace(output_hist={}),
        last_execution_result=None,
        displayhook=SimpleNamespace(_=None, __=None, ___=None),
    )
    monkeypatch.setattr(in_kernel, "_shell", lambda: fake)
    return fake


def call(func, payload: object) -> object:
    return json.loads(func(json.dumps(payload)))


def test_the_source_sent_to_the_kernel_is_this_file() -> None:
    assert Path(in_kernel.__file__).read_text(encoding="utf-8") == helper_source.SOURCE
    assert "notebook_bcc" not in helper_source.SOURCE.split('"""', 2)[2]  # no package import


def test_inspection_summarises_data_and_names_code(shell: SimpleNamespace) -> None:
    shell.user_ns.update(
        frame=pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}),
        weights=pd.Series([0.5, 0.25], index=["p", "q"], name="w"),
        answers={"z": 1, "a": 2},
        _private=1,
        np=np,
        describe=lambda x: x,
    )
    data = call(in_kernel.inspect_ns, {})
    by_name = {v["name"]: v for v in data["vars"]}
    assert set(by_name) == {"frame", "weights", "answers"}
    assert by_name["frame"]["shape"] == "3x2"
    assert by_name["frame"]["columns"] == [
        ["a", "int64"],
        ["b", str(shell.user_ns["frame"]["b"].dtype)],
    ]
    assert by_name["weights"]["repr"] == "Series 2 float64 name='w' {'p': 0.5, 'q': 0.25}"
    assert by_name["answers"]["repr"] == "{'z': 1, 'a': 2}"  # in the order the code made it
    assert data["code"]["modules"] == [["np", "numpy"]]
    assert data["code"]["callables"][0][0] == "describe"


def test_checks_report_artifacts_and_criteria(shell: SimpleNamespace) -> None:
    shell.user_ns["x"] = 3
    data = call(in_kernel.check_ns, {"artifacts": ["x", "y"], "criteria": ["x > 2", "x > 5", "y"]})
    assert data["artifacts"] == [["x", True], ["y", False]]
    assert [c[1] for c in data["criteria"]] == ["passed", "failed", "error"]
    assert data["criteria"][2][2] == "NameError: name 'y' is not defined"


def test_fetch_returns_small_json_values_nan_included(shell: SimpleNamespace) -> None:
    shell.user_ns.update(
        final_answers={
            "q": {"value": np.float64(1.5), "values": {"n": np.int64(3), "d": math.nan}}
        },
        big=list(range(10_000)),
        frame=pd.DataFrame({"a": [1]}),
    )
    data = json.loads(
        in_kernel.fetch_ns(
            json.dumps({"names": ["final_answers", "big", "frame", "none"], "max_chars": 1000})
        )
    )
    assert list(data) == ["final_answers"]
    values = data["final_answers"]["q"]["values"]
    assert data["final_answers"]["q"]["value"] == 1.5 and values["n"] == 3
    assert math.isnan(values["d"])


def test_delete_frees_the_name_and_its_output_history(shell: SimpleNamespace) -> None:
    table = [1, 2, 3]
    shell.user_ns.update(table=table, kept=[4], alias=[5])
    shell.user_ns["same"] = shell.user_ns["alias"]
    shell.history_manager.output_hist[7] = table
    shell.displayhook._ = table
    assert call(in_kernel.delete_ns, ["table", "alias", "_hidden"]) == {"ok": True}
    assert "table" not in shell.user_ns and 7 not in shell.history_manager.output_hist
    assert shell.displayhook._ is None
    assert "alias" not in shell.user_ns and shell.user_ns["same"] == [5]  # still held by `same`
    assert sorted(shell.user_ns) == ["In", "Out", "kept", "same"]


def test_a_figure_is_described_by_its_titles_and_axis_labels() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_title("Widths")
    ax.set_xlabel("width")
    text = in_kernel._describe_figure(fig)
    plt.close(fig)
    assert text.endswith(": axes 'Widths' x: width, y: ->")
