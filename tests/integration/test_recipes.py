"""The offline analyst's code recipes, executed in a real Jupyter kernel.

A shared table's defensive variant runs its whole behavior sequence in one fresh kernel
(nbclient), exactly as the notebook would: a parameters cell defining ``user_submit_files``,
then the recipe cells. The examples' recipes are read from the notebook of the examples' real
``bcc`` runs (``tests.conftest.example_run``, shared with test_end_to_end): the same cells,
run by the offline analyst in a real kernel. The real-world tables under ``../shared/datasets``
are skipped when that folder is absent.
"""

from __future__ import annotations

import ast
import csv
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from notebook_bcc.agents.offline import recipes as recipes_module
from notebook_bcc.agents.offline.plan import playbook
from notebook_bcc.agents.offline.recipes import (
    RECIPES,
    Cell,
    RecipeContext,
)
from notebook_bcc.agents.offline.templates.loader import template
from tests.conftest import FINAL_METRICS_KEYS, WHOLE_OUTPUT, example_run, output_text

REPO = Path(__file__).parents[2]
SHARED = REPO.parent / "shared" / "datasets"
EXAMPLES = REPO / "examples"

PRODUCED = {
    "load_data": ("raw_dataset", "data_profile"),
    "integrity_checks": ("integrity_report",),
    "clean_data": ("clean_dataset", "cleaning_log"),
    "univariate_eda": ("numeric_summary",),
    "relationship_eda": ("correlation_matrix",),
    "model_selection": ("feature_columns", "model_comparison", "best_model_name", "X_train"),
    "holdout_evaluation": ("final_model", "final_metrics"),
    "stability_check": ("stability_report",),
    "final_summary": ("analysis_summary",),
}

PROBE = """
import json as _json, os as _os
_names = {names!r}
print("BCC_PROBE " + _json.dumps({{
    "missing": [n for n in _names if n not in globals()],
    "final_metrics": globals().get("final_metrics"),
    "stability_report": globals().get("stability_report"),
    "integrity_report": integrity_report,
    "data_profile": data_profile,
    "clean_shape": list(clean_dataset.shape),
    "summary_len": len(analysis_summary),
    "outputs": sorted(_os.listdir("outputs")),
}}))
"""


def _clean_header(name: str) -> str:
    return re.sub(r"\s+", " ", name).strip()


def _manifest() -> list[dict[str, str]]:
    path = SHARED / "manifest.csv"
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _front_matter(problem: Path) -> dict:
    text = problem.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, f"{problem} has no YAML front matter"
    return yaml.safe_load(match.group(1))


def _notebook(data_name: str, ctx: RecipeContext) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells.append(nbformat.v4.new_code_cell(f"user_submit_files = {[f'assets/{data_name}']!r}"))
    names: list[str] = []
    for key in behavior_sequence(ctx.task):
        names.extend(PRODUCED[key])
        for cell in RECIPES[key](ctx):
            new = (
                nbformat.v4.new_markdown_cell if cell.kind == "text" else nbformat.v4.new_code_cell
            )
            nb.cells.append(new(cell.content, metadata={"bcc_recipe": key}))
    nb.cells.append(nbformat.v4.new_code_cell(PROBE.format(names=names)))
    return nb


def run_recipes(data_file: Path, ctx: RecipeContext, workdir: Path) -> dict:
    """Execute the full sequence for ``ctx.task`` on ``data_file``; return the probe values."""
    (workdir / "assets").mkdir(parents=True)
    shutil.copy(data_file, workdir / "assets" / data_file.name)
    nb = _notebook(data_file.name, ctx)
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
        **WHOLE_OUTPUT,
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors
    probe_text = "".join(
        o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream"
    )
    probe = json.loads(probe_text.split("BCC_PROBE ", 1)[1])
    probe["result_lines"] = result_lines(nb)
    return probe


def result_lines(nb: nbformat.NotebookNode) -> dict[str, str]:
    """The last non-empty line each recipe's last code cell printed, by recipe key."""
    last_cells = {
        c.metadata["bcc_recipe"]: c
        for c in nb.cells
        if c.cell_type == "code" and "bcc_recipe" in c.metadata
    }
    lines = {}
    for key, cell in last_cells.items():
        text = output_text(cell.outputs)
        printed = [line for line in text.splitlines() if line.strip()]
        lines[key] = printed[-1] if printed else ""
    return lines


def check_result_lines(probe: dict, ctx: RecipeContext) -> None:
    """Each step ends with one plain ``Result: ...`` sentence for the behavior reflector."""
    lines = probe["result_lines"]
    assert set(lines) == set(behavior_sequence(ctx.task))
    for key, line in lines.items():
        assert line.startswith("Result: "), (key, line)
        assert len(line) <= 420 and "summary line failed" not in line, (key, line)
        assert re.search(r"\d", line), (key, line)  # states measured numbers


def check_probe(probe: dict, ctx: RecipeContext) -> None:
    assert probe["missing"] == [], f"variables not defined: {probe['missing']}"
    check_result_lines(probe, ctx)
    assert probe["data_profile"]["n_rows"] > 0 and probe["clean_shape"][0] > 0
    assert probe["summary_len"] > 50
    assert "distributions.png" in probe["outputs"]
    if ctx.target is None:
        return
    assert probe["integrity_report"]["target"] == ctx.target
    assert "target.png" in probe["outputs"]
    metrics = probe["final_metrics"]
    assert set(metrics) == FINAL_METRICS_KEYS | {
        "excluded"
    }  # the offline analyst says what it left out
    assert isinstance(metrics["excluded"], dict)
    assert metrics["task"] == ctx.task
    assert metrics["metric"] == ("accuracy" if ctx.task == "classification" else "r2")
    for key in ("cv_mean", "cv_std", "test_score", "baseline_score"):
        assert isinstance(metrics[key], float), (key, metrics[key])
    stability = probe["stability_report"]
    assert stability["bootstrap_resamples"] > 0 and len(stability["cv_mean_by_seed"]) == 3
    gap = abs(metrics["test_score"] - metrics["cv_mean"])
    flagged = "the split may have been" in " ".join(probe["result_lines"].values())
    assert flagged == (metrics["cv_std"] > 0 and gap > 2 * metrics["cv_std"]), metrics


@pytest.mark.parametrize(
    ("test_score", "said"),
    [(0.95, "0.050 above the CV mean, more than two CV standard deviations: the split may "
      "have been a lucky one"),
     (0.80, "0.100 below the CV mean, more than two CV standard deviations: the split may "
      "have been an unlucky one"),
     (0.91, None)],
)  # fmt: skip
def test_the_hold_out_result_says_when_the_split_looks_lucky(
    test_score: float, said: str | None
) -> None:
    said_lines: list[str] = []
    names = {
        "final_metrics": {"model": "forest", "metric": "accuracy", "test_score": test_score,
                          "cv_mean": 0.9, "cv_std": 0.01, "baseline_score": 0.4},
        "y_test": [0] * 50, "_bcc_extra": [],
        "_bcc_fmt": lambda x: f"{x:.3f}", "_bcc_result": said_lines.append,
    }  # fmt: skip
    exec(template("model_holdout_result.py"), names)
    assert said_lines[0].startswith("on the 50 hold-out rows forest scores accuracy")
    assert (said in said_lines[0]) if said else ("split may have been" not in said_lines[0])


# ----------------------------------------------------------------------------- static checks


@pytest.mark.parametrize("task", ["classification", "regression", "eda"])
@pytest.mark.parametrize("variant", [0, 1])
def test_recipe_cells_explain_before_code(task: str, variant: int) -> None:
    ctx = RecipeContext(target=None if task == "eda" else "y", task=task, variant=variant)
    for key in behavior_sequence(task):
        cells = RECIPES[key](ctx)
        assert cells and all(isinstance(c, Cell) for c in cells)
        assert cells[0].kind == "text", key  # the markdown says what the cells after it do
        for cell in cells:
            assert cell.kind in ("text", "code")
            if cell.kind == "code":
                ast.parse(cell.content)  # valid Python
                assert "__TARGET__" not in cell.content and "__SEED__" not in cell.content
                assert "__SHEET__" not in cell.content


def behavior_sequence(task: str) -> tuple[str, ...]:
    """The recipes in the order the offline analyst's playbook runs them for ``task``."""
    plays = playbook(task in ("classification", "regression"))
    return tuple(step.recipe for stage in plays for step in stage.steps)


def test_the_playbook_runs_every_recipe() -> None:
    full = behavior_sequence("classification")
    assert full == behavior_sequence("regression")
    assert full[0] == "load_data" and full[-1] == "final_summary"
    # the follow-ups' recipes run in tests/integration/test_follow_up.py
    assert set(full) | {"follow_up_answers", "follow_up_model"} == set(RECIPES)
    assert behavior_sequence("eda") == tuple(
        k for k in full if k not in ("model_selection", "holdout_evaluation", "stability_check")
    )


def test_variants_differ_and_seed_is_used() -> None:
    for task, target in (("classification", "y"), ("eda", None)):
        for key in behavior_sequence(task):
            normal = RECIPES[key](RecipeContext(target, task))
            defensive = RECIPES[key](RecipeContext(target, task, variant=1))
            assert normal != defensive, key
    code = "".join(
        c.content for c in RECIPES["integrity_checks"](RecipeContext("y", "regression", seed=7))
    )
    assert "SEED = 7" in code and "TARGET = 'y'" in code


def test_recipe_modules_do_not_import_data_libraries() -> None:
    folder = Path(recipes_module.__file__).parent
    for path in folder.glob("recipes*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                module = getattr(node, "module", None) or node.names[0].name
                assert module.split(".")[0] not in {"pandas", "numpy", "sklearn", "matplotlib"}, (
                    path
                )


# ------------------------------------------------------------------------------ real kernel

MESSY = (
    '\ufeffName ;"Price\n(EUR)";Share %;Joined;Unused;\r'
    "Anna;€1.234,50;12,5%;2021-03-01;;\r"
    "Ben;€99,00;7,0%;2021-04-15;;\r"
    "Cleo;€15,25;;2021-05-30;;\r"
    "Cleo;€15,25;;2021-05-30;;\r"
)


def test_load_and_clean_messy_semicolon_file(tmp_path: Path) -> None:
    """BOM, CR-only line ends, semicolons, newline in a header, decimal commas, currency."""
    data = tmp_path / "src" / "messy.csv"
    data.parent.mkdir()
    data.write_bytes(MESSY.encode("utf-8"))
    ctx = RecipeContext(target=None, task="eda")
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("user_submit_files = ['assets/messy.csv']"))
    for key in ("load_data", "integrity_checks", "clean_data"):
        nb.cells.extend(
            nbformat.v4.new_code_cell(c.content) for c in RECIPES[key](ctx) if c.kind == "code"
        )
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "print('BCC_PROBE ' + json.dumps({'cols': list(raw_dataset.columns), "
            "'price': clean_dataset['Price (EUR)'].tolist(), 'rows': len(clean_dataset), "
            "'dtype': str(clean_dataset['Joined'].dtype), 'report': integrity_report, "
            "'log': cleaning_log}))"
        )
    )
    (tmp_path / "run" / "assets").mkdir(parents=True)
    shutil.copy(data, tmp_path / "run" / "assets" / "messy.csv")
    NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path / "run")}},
        **WHOLE_OUTPUT,
    ).execute()
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    probe = json.loads(text.split("BCC_PROBE ", 1)[1])
    assert probe["cols"] == ["Name", "Price (EUR)", "Share %", "Joined", "Unused"]
    # one exact duplicate in four rows, and no ID column to show it is the same record: kept
    assert probe["price"] == [1234.5, 99.0, 15.25, 15.25]
    assert probe["rows"] == 4
    assert (
        "kept 1 exact duplicate rows: no ID column shows they are the same records" in probe["log"]
    )
    assert probe["dtype"].startswith("datetime64")
    assert "Price (EUR)" in probe["report"]["numeric_text_columns"]


@pytest.mark.parametrize(
    "name",
    ["dabench_titanic.csv", "rd_airquality.csv", "dacode_world-data-2023.csv"],
)
@pytest.mark.shared
def test_shared_dataset_defensive_variant(name: str, tmp_path: Path) -> None:
    row = next((r for r in _manifest() if r["file"] == name), None)
    if row is None or not (SHARED / name).exists():
        pytest.skip("../shared/datasets is not available")
    target = row["target"] or None
    ctx = RecipeContext(target=target, task=row["task"], seed=42, variant=1)
    probe = run_recipes(SHARED / name, ctx, tmp_path)
    check_probe(probe, ctx)


def probe_of_run(run: Path, ctx: RecipeContext) -> dict:
    """What ``PROBE`` reads from a kernel, read from a finished ``bcc`` run instead: the
    results its summary keeps, the names its ledger saw, the files its cells wrote, and the
    result line each step's last code cell printed (the playbook says which recipe served
    which step)."""
    summary = json.loads((run / "summary.json").read_text())
    artifacts = summary["artifacts"]
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    seen = {v["name"] for v in nb.metadata["bcc"]["variables"]}
    names = [n for key in behavior_sequence(ctx.task) for n in PRODUCED[key]]
    recipe_of = {
        step.id: step.recipe
        for stage in playbook(ctx.task in ("classification", "regression"))
        for step in stage.steps
    }
    for cell in nb.cells:
        step = cell.metadata.get("bcc", {}).get("step")
        if cell.cell_type == "code" and step in recipe_of:
            cell.metadata["bcc_recipe"] = recipe_of[step]
    clean = next(v for v in nb.metadata["bcc"]["variables"] if v["name"] == "clean_dataset")
    return {
        "missing": [n for n in names if n not in seen],
        "final_metrics": artifacts.get("final_metrics"),
        "stability_report": artifacts.get("stability_report"),
        "integrity_report": artifacts["integrity_report"],
        "data_profile": artifacts["data_profile"],
        "clean_shape": [int(n) for n in clean["shape"].split("x")],  # the ledger's "1461x6"
        "summary_len": len(artifacts["analysis_summary"]),
        "outputs": sorted(p.name for p in (run / "outputs").iterdir()),
        "result_lines": result_lines(nb),
    }


@pytest.mark.parametrize("example", ["penguins", "wine", "diabetes"])
def test_examples_end_each_step_with_a_result_line(
    example: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> None:
    """The recipes as the offline analyst ran them on the example in a real kernel, in the
    notebook of test_end_to_end's run of it (one run serves both)."""
    folder = EXAMPLES / example
    meta = _front_matter(folder / "problem.md")
    ctx = RecipeContext(target=meta.get("target"), task=meta["task"], seed=42)
    run, proc = example_run(tmp_path_factory, worker_id, example)
    assert proc.returncode == 0, proc.stderr[-3000:]
    probe = probe_of_run(run, ctx)
    check_probe(probe, ctx)
    lines = probe["result_lines"]
    rows = probe["data_profile"]["n_rows"]
    assert lines["load_data"].startswith(f"Result: read {rows} rows and ")
    if ctx.target is None:
        assert "the target" not in lines["integrity_checks"]
        return
    metric = "accuracy" if ctx.task == "classification" else "R²"
    metrics = probe["final_metrics"]
    assert f"best 5-fold {metric}" in lines["model_selection"]
    assert f"{metric} {metrics['test_score']:.3f}" in lines["holdout_evaluation"]
    assert f"{metrics['baseline_score']:.3f} for the baseline" in lines["holdout_evaluation"]
    assert lines["stability_check"].startswith("Result: over 20 bootstrap resamples")
