"""Code recipes for the offline analyst: pure text generation, no data access.

Each recipe takes a :class:`RecipeContext` and returns notebook cells (markdown explaining
what follows, then the code). The code runs in the run's Jupyter kernel, where the parameters
cell has defined ``user_submit_files``. Recipes build on the variables of earlier recipes in the
playbook's order (``plan.py``). ``variant >= 1`` yields a simpler, more defensive version of
the same step (same output variables) for use after a failed attempt.

Integrity and cleaning live in :mod:`recipes_data`, EDA and the summary in :mod:`recipes_eda`,
modelling in :mod:`recipes_model`; they return (markdown, code template) pairs wrapped here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from notebook_bcc.agents.offline import recipes_data, recipes_eda, recipes_model
from notebook_bcc.agents.offline.cells import result_cell, result_preamble, split_script
from notebook_bcc.agents.offline.context import Cell, RecipeContext
from notebook_bcc.agents.offline.recipes_data import HELPERS, RESULT_HELPERS
from notebook_bcc.agents.offline.templates.loader import template


def fill(template: str, ctx: RecipeContext) -> str:
    """Substitute the context placeholders of a code template (values as Python literals)."""
    return (
        template.replace("__TARGET__", repr(ctx.target))
        .replace("__TASK__", repr(ctx.task))
        .replace("__SEED__", str(int(ctx.seed)))
        .replace("__QUESTIONS__", repr([(q.text, list(q.names)) for q in ctx.questions]))
        .replace("__DROP__", repr(list(ctx.drop)))
        .replace("__KEEP__", repr(list(ctx.keep)))
        .replace("__JOIN_ON__", repr(ctx.join_on))
        .replace("__JOIN__", repr(ctx.join))
        .replace("__SHEET__", repr(ctx.sheet))
        .strip()
        + "\n"
    )


def recipe_cells(pairs: Sequence[tuple[str, str]], ctx: RecipeContext) -> tuple[Cell, ...]:
    """A step's cells from its (markdown, code template) pairs, in cells a reader can follow
    (``cells.split_script``): the first markdown; every helper function of the step in one
    cell (collapsed in the notebook); then each markdown with its own code in short cells,
    the last ending with the call that prints the step's ``Result:`` line."""
    parts = [
        (text.strip(), *split_script(fill(_result_as_function(code), ctx))) for text, code in pairs
    ]
    helpers = "\n\n".join(helper.strip() for _, helper, _ in parts if helper)
    cells: list[Cell] = []
    for i, (text, _, drivers) in enumerate(parts):
        cells.append(Cell("text", text))
        if i == 0 and helpers:
            cells.append(Cell("code", helpers + "\n"))
        cells += [Cell("code", source) for source in drivers]
    return tuple(cells)


def _result_as_function(code: str) -> str:
    """``code`` with its result template (if it ends with one) made a function and a call."""
    for name, result in RESULTS.items():
        if code.rstrip().endswith(result.strip()):
            head, preamble = result_preamble(code.rstrip()[: -len(result.strip())])
            definition, call = result_cell(name, result, preamble)
            # the call ends the step's last cell (no blank line: not a paragraph of its own)
            return head.rstrip() + "\n" + call + "\n\n" + definition
    return code


#: the templates of the one-line ``Result:`` that ends each step, by step
RESULTS = {
    name.removesuffix("_result.py").rsplit("_", 1)[-1]: template(name)
    for name in (
        "setup_load_result.py",
        "data_integrity_result.py",
        "data_clean_result.py",
        "eda_univariate_result.py",
        "eda_relationship_result.py",
        "eda_summary_result.py",
        "model_compare_result.py",
        "model_holdout_result.py",
        "model_stability_result.py",
    )
}


def _wrap(
    build: Callable[[RecipeContext], Sequence[tuple[str, str]]],
) -> Callable[[RecipeContext], tuple[Cell, ...]]:
    """Turn a (markdown, code template) builder from a helper module into a recipe."""

    def recipe(ctx: RecipeContext) -> tuple[Cell, ...]:
        return recipe_cells(build(ctx), ctx)

    recipe.__name__ = build.__name__
    recipe.__doc__ = build.__doc__
    return recipe


# --------------------------------------------------------------------------- load_data


# Imports, display options and the helper functions that every later step uses: defined once
# here (both variants), since each later step runs after loading. TARGET/TASK/SEED are set by
# the integrity checks, the first step that knows the target.
SETUP = template("setup_setup.py") + HELPERS + RESULT_HELPERS

SETUP_TEXT = (
    "Set up the analysis: imports, display options and the small helper functions the later "
    "steps share (text-to-number and date parsing, column groups, and the one-line `Result:` "
    "summary each step ends with)."
)

LOAD_RESULT = template("setup_load_result.py")


@cache
def bcc_reader() -> str:
    """The table reader of notebook_bcc.inputs.tables (the planners' preview reads with it
    too), its functions named _bcc_read_table and so on: both variants define it, since the
    cells of a failed first attempt are not in the notebook. Read on first use: importing
    ``tables`` imports pandas, which a run does while its kernel boots."""
    from notebook_bcc.inputs.tables import reader_source

    return reader_source("_bcc_")


def read_v0() -> str:
    return (
        "data_path = str(user_submit_files[0])\n"
        'load_info = {"path": data_path, "encoding": None, "separator": None}\n\n\n'
        + bcc_reader()
        + template("setup_read_v0.py")
    )


HEADERS = template("setup_headers.py")

PROFILE_V0 = HEADERS + template("setup_profile_v0.py") + LOAD_RESULT


# Several files: each is read into ``tables``; shared columns are checked as join keys and the
# lookups joined (``join_report``); ``raw_dataset`` is the table analysed.
def read_all() -> str:
    return bcc_reader() + "\n" + HEADERS + template("setup_read_all.py")


JOIN = template("setup_join.py")


def load_v1() -> str:
    return bcc_reader() + "\n" + template("setup_load_v1.py") + LOAD_RESULT


def load_data(ctx: RecipeContext) -> tuple[Cell, ...]:
    """Set up, read the submitted file into ``raw_dataset`` and profile it; with several
    files, read each and join the lookups."""
    if ctx.files > 1:
        return load_several(ctx)
    if ctx.variant:
        return recipe_cells(
            [
                (SETUP_TEXT, SETUP.replace("__WARNINGS__", '"ignore"')),
                (
                    "Load the data file defensively: for a text table the Python parser sniffs the "
                    "delimiter, decodes as latin-1 (which never fails), and skips malformed lines; "
                    "other formats (Excel, Parquet, Feather, JSON) are read by their own readers. "
                    "Header names are cleaned.",
                    load_v1(),
                ),
            ],
            ctx,
        )
    return recipe_cells(
        [
            (SETUP_TEXT, SETUP.replace("__WARNINGS__", '"ignore", FutureWarning')),
            (
                "Read the data file into `raw_dataset`. The reader (in the helper cell above) "
                "picks the format from the extension; for a text table it tries UTF-8, then "
                "Latin-1, and the delimiter that yields the most columns; for a workbook, the "
                "sheet the problem names, else the first with data.",
                read_v0(),
            ),
            (
                "Clean the header names (whitespace and line breaks, duplicates, empty `Unnamed` "
                "columns) and look at the first rows. `data_profile` keeps a small summary of the "
                "shape and column types.",
                PROFILE_V0,
            ),
        ],
        ctx,
    )


def load_several(ctx: RecipeContext) -> tuple[Cell, ...]:
    asked = (
        f"The problem asks to join the files{f' on `{ctx.join_on}`' if ctx.join_on else ''}, "
        "so a lookup table (its key unique) is joined onto the other whatever the match rate"
        if ctx.join
        else "A table is joined onto another only when it is clearly a lookup of it: the key "
        "is unique in it and at least 90% of the other table's rows find a match"
    )
    warnings = '"ignore"' if ctx.variant else '"ignore", FutureWarning'
    return recipe_cells(
        [
            (SETUP_TEXT, SETUP.replace("__WARNINGS__", warnings)),
            (
                f"Read each of the {ctx.files} submitted files with the same reader (the format "
                "from the extension; for text tables the encoding and delimiter are sniffed) and "
                "clean their header names. `tables` holds them by file name.",
                read_all(),
            ),
            (
                "Check every column two tables share as a join key: is it unique in one of them "
                f"(a lookup), and what share of each table's rows find a match? {asked}; the "
                "printout says how many rows matched. The first file is analysed when nothing "
                "joins, and every file left aside is named with the reason. `raw_dataset` is the "
                "table analysed from here on; `join_report` keeps the checks.",
                JOIN,
            ),
        ],
        ctx,
    )


RECIPES: dict[str, Callable[[RecipeContext], tuple[Cell, ...]]] = {
    "load_data": load_data,
    "integrity_checks": _wrap(recipes_data.integrity_checks),
    "clean_data": _wrap(recipes_data.clean_data),
    "univariate_eda": _wrap(recipes_eda.univariate_eda),
    "relationship_eda": _wrap(recipes_eda.relationship_eda),
    "model_selection": _wrap(recipes_model.model_selection),
    "holdout_evaluation": _wrap(recipes_model.holdout_evaluation),
    "stability_check": _wrap(recipes_model.stability_check),
    "final_summary": _wrap(recipes_eda.final_summary),
    "follow_up_answers": _wrap(recipes_eda.follow_up_answers),
    "follow_up_model": _wrap(recipes_eda.follow_up_model),
}
