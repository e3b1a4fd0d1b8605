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

from notebook_bcc.kernel import helper_source, in_kernel, in_kernel_figures, in_kernel_results


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
    modules = (in_kernel, in_kernel_figures, in_kernel_results)
    parts = [Path(m.__file__).read_text(encoding="utf-8") for m in modules]
    assert "\n\n".join(parts) == helper_source.SOURCE
    for text in parts:
        assert "notebook_bcc" not in text.split('"""', 2)[2]  # no package import


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


def test_a_tables_index_is_named_unless_it_is_0_to_n(shell: SimpleNamespace) -> None:
    """Relay trial B: a table indexed by band or city left the model to guess its index."""
    bands = pd.DataFrame({"n": [182, 428, 98]}, index=pd.Index(["below 3", "3-4", "above 4"]))
    bands.index.name = "band"
    days = pd.DataFrame({"t": range(30)}, index=pd.date_range("2020-01-01", periods=30))
    shell.user_ns.update(
        plain=pd.DataFrame({"a": [1, 2]}),
        bands=bands,
        days=days,
        kept=pd.DataFrame({"a": [1, 2, 3]}).iloc[[0, 2]],  # rows dropped: labels 0, 2
        pairs=pd.DataFrame({"v": [1, 2]}, index=pd.MultiIndex.from_tuples([(1, "a"), (1, "b")])),
    )
    by_name = {v["name"]: v for v in call(in_kernel.inspect_ns, {})["vars"]}
    assert by_name["plain"]["index"] == ""
    dtype = bands.index.dtype  # str under pandas 3, object before
    assert by_name["bands"]["index"] == f"band:{dtype} ['below 3', '3-4', 'above 4']"
    assert by_name["days"]["index"] == (
        f"(unnamed):{days.index.dtype} (30 labels, unique, 2020-01-01 00:00:00 to "
        "2020-01-30 00:00:00)"
    )
    assert by_name["kept"]["index"] == "(unnamed):int64 [0, 2]"
    assert by_name["pairs"]["index"] == "(unnamed), (unnamed) [(1, 'a'), (1, 'b')]"


def test_names_are_never_hidden_only_values_are_shortened(shell: SimpleNamespace) -> None:
    wide = pd.DataFrame({f"column_{i:03d}": [i] for i in range(320)})
    keyed = {f"key_{i:03d}": "v" * 500 for i in range(120)}
    keyed["key_000"] = pd.DataFrame({"a": [1, 2], "b": [3, 4]})  # a multi-line repr
    shell.user_ns.update(wide=wide, keyed=keyed)
    by_name = {v["name"]: v for v in call(in_kernel.inspect_ns, {})["vars"]}
    columns = [c for c, _ in by_name["wide"]["columns"]]
    assert columns == [f"column_{i:03d}" for i in range(300)]  # 300 whole, then counted
    text = by_name["keyed"]["repr"]
    assert "\n" not in text
    assert all(f"'key_{i:03d}': " in text for i in range(100))
    assert "'key_100'" not in text and text.endswith(", ... (+20 more keys)}")
    assert "v" * 40 not in text  # the values are what is shortened
    shell.user_ns["fits"] = {"ols": {"coefs": {"herbi": {"coef": 1.5, "p": 0.06}}}}
    by_name = {v["name"]: v for v in call(in_kernel.inspect_ns, {})["vars"]}
    assert by_name["fits"]["repr"] == "{'ols': {'coefs': {'herbi': {'coef': 1.5, 'p': 0.06}}}}"


def test_checks_report_artifacts_and_criteria(shell: SimpleNamespace) -> None:
    shell.user_ns["x"] = 3
    data = call(in_kernel.check_ns, {"artifacts": ["x", "y"], "criteria": ["x > 2", "x > 5", "y"]})
    assert data["artifacts"] == [["x", True], ["y", False]]
    assert [c[1] for c in data["criteria"]] == ["passed", "failed", "error"]
    assert data["criteria"][2][2] == "NameError: name 'y' is not defined"


def test_a_criterion_sees_the_namespace_as_its_scope_and_writes_nothing(
    shell: SimpleNamespace,
) -> None:
    """The prompt says a criterion is evaluated in the kernel's user namespace: ``dir()`` and
    ``locals()`` list it (a player's ``"model" in dir()`` failed when they were empty)."""
    shell.user_ns["wind_model"] = 1
    criteria = ['"wind_model" in dir()', '"wind_model" in locals()', "(z := 2) == 2"]
    data = call(in_kernel.check_ns, {"artifacts": [], "criteria": criteria})
    assert [c[1] for c in data["criteria"]] == ["passed", "passed", "passed"]
    assert "z" not in shell.user_ns


def test_fetch_returns_small_json_values_nan_included(
    shell: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell.user_ns.update(
        final_answers={
            "q": {"value": np.float64(1.5), "values": {"n": np.int64(3), "d": math.nan}}
        },
        big=list(range(10_000)),
        frame=pd.DataFrame({"a": [1]}),
    )
    monkeypatch.setattr(in_kernel_results, "_results_ns", lambda: shell.user_ns)
    data = json.loads(
        in_kernel_results.fetch_ns(
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
    text = in_kernel_figures.describe_figure(fig)
    plt.close(fig)
    assert text.endswith(": axes 'Widths' x: width, y: ->")


def test_a_figure_note_says_what_is_drawn() -> None:
    """Per axes: a histogram's range and its tallest bins; a bar chart's largest bars by their
    labels; a line's points, range, first and last values; a scatter's points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (hist, bars, line, dots) = plt.subplots(1, 4)
    hist.hist([1, 2, 2, 3, 3, 3, 9], bins=[0, 2, 4, 6, 8, 10])
    bars.bar(["north", "south", "east"], [30, 90, 10])
    line.plot([0, 1, 2, 3], [5.0, 4.0, 7.5, 6.0], label="price")
    dots.scatter([1, 2, 3], [10, 20, 15])
    lines = in_kernel_figures.describe_figure(fig).splitlines()
    plt.close(fig)
    assert lines[0].startswith("<Figure size") and len(lines) == 5
    assert lines[1].startswith("  axes 1: histogram of 5 bars, x 0 to 10, y 0 to 5; largest:")
    assert "largest: [2, 4) 5, [0, 2) 1" in lines[1]  # 1 in [0, 2); 2, 2, 3, 3, 3 in [2, 4)
    assert "bar chart of 3 bars, x named, y 10 to 90; largest: 'south' 90, 'north' 30" in lines[2]
    assert "line 'price' of 4 points, x 0 to 3, y 4 to 7.5; first 5, last 6" in lines[3]
    assert "scatter of 3 points, x 1 to 3, y 10 to 20" in lines[4]


def test_a_box_plot_and_groups_are_named_by_their_labels() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.boxplot([[1, 2, 3, 4], [2, 3, 9, 4]])
    ax.set_xticks([1, 2], ["carni (n=19)", "herbi (n=32)"])
    for name, at in (("carni", 1), ("herbi", 2), ("omni", 3), ("insecti", 4)):
        ax.scatter([at] * 3, [1, 2, 3], label=name)
    ax.legend()
    text = in_kernel_figures.describe_figure(fig)
    plt.close(fig)
    assert "straight segments (box plot parts" in text and "line of 2 points" not in text
    assert text.count("scatter of 3 points") == 4
    assert "x ticks: carni (n=19), herbi (n=32)" in text
    assert "legend: carni, herbi, omni, insecti" in text


def test_dates_are_dates_and_a_long_line_shows_its_shape() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (line, dots, months) = plt.subplots(1, 3)
    days = pd.date_range("1958-03-29", periods=15, freq="D")
    line.plot(range(15), [0, 1, 2, 3, 4, 5, 6, 7, 6, 5, 4, 3, 2, 1, 0])
    dots.scatter(days, range(15))
    months.bar([str(m) for m in range(1, 13)], range(12))
    text = in_kernel_figures.describe_figure(fig)
    plt.close(fig)
    assert "at 8 evenly spaced points: 0, 2, 4, 6, 6, 4, 2, 0" in text  # up, then down
    assert "scatter of 15 points, x 1958-03-29 to 1958-04-12" in text
    assert "bar chart of 12 bars, x 1 to 12 (tick labels)" in text


def test_numbers_are_listed_with_every_digit_they_have(shell: SimpleNamespace) -> None:
    """Issue 39: six significant digits showed 2081990.36 as 2081990.0, a value the code never
    computed; a listing shows the shortest text that reads back as the same number."""
    shell.user_ns.update(
        total=2081990.36,
        big=np.float64(2443441.267),
        small=np.float32(0.1),
        pair={"a": 2081990.36, "b": 3.0},
    )
    by_name = {v["name"]: v for v in call(in_kernel.inspect_ns, {})["vars"]}
    assert by_name["total"]["repr"] == "2081990.36"
    assert by_name["big"]["repr"] == "2443441.267"
    assert by_name["small"]["repr"] == "0.1"
    assert by_name["pair"]["repr"] == "{'a': 2081990.36, 'b': 3.0}"


def test_a_result_too_large_to_report_is_shortened_and_the_rest_stands(
    shell: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39: one answer holding a 2 MB CSV string made the whole ``final_answers`` larger
    than the fetch limit, and every answer was reported as not answered."""
    monkeypatch.setattr(in_kernel_results, "_results_ns", lambda: shell.user_ns)
    table = "a,b\n" + "1,2\n" * 500_000
    answers = {str(i): {"value": i * 1.5, "text": f"answer {i}"} for i in range(1, 7)}
    answers["7"] = {"value": table, "text": "the cleaned table", "values": {"rows": 500_000}}
    answers["8"] = {"value": pd.DataFrame({"a": [1]})}
    shell.user_ns.update(final_answers=answers, final_summary="# Findings\n" + "x" * 20_000)
    request = {
        "names": ["final_answers", "final_summary"],
        "max_chars": 8_000,
        "whole": {"final_answers": 8_000, "final_summary": 200_000},
    }
    data = call(in_kernel_results.fetch_ns, request)
    got = data["final_answers"]
    assert [got[str(i)]["value"] for i in range(1, 7)] == [i * 1.5 for i in range(1, 7)]
    assert got["7"]["text"] == "the cleaned table" and got["7"]["values"] == {"rows": 500_000}
    shortened = got["7"]["value"]
    assert shortened["__shortened__"] is True and shortened["type"] == "str"
    assert shortened["size"] == len(table) and shortened["head"] == table[:200]
    assert got["8"]["value"]["type"] == "DataFrame"
    assert got["8"]["value"]["why"] == "not JSON-serialisable"
    assert data["final_summary"].startswith("# Findings") and len(data["final_summary"]) > 20_000


def test_a_long_figure_description_is_cut_between_lines_and_says_so() -> None:
    """Relay trial (Seattle weather): a note ended "axes 4: line of 5 points, x 0.75 to 1.25,
    y 2.2 to" with no sign that the rest was cut."""
    from notebook_bcc.kernel.figures import NOTE_CHARS, figures_in

    lines = [f"axes {i}: line of 5 points, x 0.75 to 1.25, y 2.2 to {i}.5" for i in range(60)]
    text = "\n".join(lines)
    clipped = in_kernel_figures._whole_lines(text, 1600)
    kept, marker = clipped.rsplit("\n", 1)
    assert all(line in lines for line in kept.splitlines())
    assert marker == f"  ... ({len(text) - len(kept)} more characters of this description)"
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    import base64

    out = {"output_type": "display_data", "data": {"image/png": base64.b64encode(png).decode(),
                                                   "text/plain": "<Figure>\n" + text}}  # fmt: skip
    (figure,) = figures_in([out])
    assert len(figure.note) < NOTE_CHARS + 200
    assert figure.note.rsplit("\n", 1)[1].startswith("  ... (") and "more characters" in figure.note
    assert not any(line.endswith(" to") for line in figure.note.splitlines())


def test_reference_lines_are_read_at_their_value_and_tick_labels_on_one_line() -> None:
    """A relay player read an ``axhline`` as "line of 2 points, x 0 to 1" (the axes' fraction,
    not the data's x), and a two-line tick label broke the description's line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot(range(20), [i * 2.0 for i in range(20)])
    ax.axhline(39.06, color="grey", label="baseline")
    ax.axvline(12)
    ax.set_xticks([0, 10], ["May\n(n=26)", "Jun\n(n=9)"])
    text = in_kernel_figures.describe_figure(fig)
    plt.close(fig)
    assert "horizontal line at y 39.06 'baseline'" in text
    assert "vertical line at x 12" in text
    assert "line of 20 points, x 0 to 19" in text and "line of 2 points" not in text
    assert "x ticks: May (n=26), Jun (n=9)" in text
