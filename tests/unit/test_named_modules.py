"""The environment line names only real modules (issue 39): a name counts from code, or from
prose when it is a module or distribution known here; English words, parts of a hyphenated
name and data file names never."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from notebook_bcc.inputs.modules import is_known_module, named_modules
from notebook_bcc.inputs.problem import read_problem
from tests.conftest import ROOT, manifest, problem_text

DABENCH = ROOT.parent / "shared" / "dabench"


def _dabench_problems() -> list[str]:
    if not (DABENCH / "questions.jsonl").exists():
        return []
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import dabench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    asked = dabench.questions(DABENCH)
    tables = sorted({q["file_name"] for q in asked})
    return [dabench.problem_text(t, [q for q in asked if q["file_name"] == t]) for t in tables]


def _problems() -> list[tuple[str, str]]:
    out = [(p.parent.name, p.read_text()) for p in sorted((ROOT / "examples").glob("*/problem.md"))]
    out += [(row["file"], problem_text(row)) for row in manifest()]
    out += [(f"dabench-{i}", text) for i, text in enumerate(_dabench_problems())]
    return out


def test_every_shared_and_example_problem_names_only_real_modules() -> None:
    problems = _problems()
    assert len(problems) >= 3
    for name, text in problems:
        for module in read_problem(text).modules:
            assert is_known_module(module), f"{name}: {module!r} is not a module"


@pytest.mark.skipif(not (DABENCH / "questions.jsonl").exists(), reason="../shared is absent")
def test_the_dabench_problems_that_name_a_library_keep_it_and_drop_words() -> None:
    found = {m for text in _dabench_problems() for m in named_modules(text)}
    assert found, "some DABench questions name a library"
    for word in ("stats", "learn", "individual", "there", "library", "test"):
        assert word not in found


def test_prose_words_hyphen_parts_and_file_stems_are_not_modules() -> None:
    text = (
        "Use the scipy.stats library for the test. Fit it with scikit-learn's LinearRegression.\n"
        "For each individual library there is a test. Read `caschool.csv` and caschool's rows;\n"
        "the numpy package. Check `df.groupby` and `pd.read_csv`."
    )
    assert named_modules(text) == ("scipy.stats", "scikit-learn", "numpy")


def test_a_module_spelt_two_ways_is_named_once() -> None:
    text = "Use the Scikit-learn library to fit it, then the Scikit-Learn package to predict."
    assert named_modules(text) == ("Scikit-learn",)


def test_code_names_a_module_even_when_it_is_absent() -> None:
    text = "import pmdarima_is_not_here\nfrom scipy.stats import ttest_ind\n"
    assert named_modules(text) == ("pmdarima_is_not_here", "scipy.stats")


def test_the_data_file_stem_is_never_named(tmp_path: Path) -> None:
    text = "The caschool library of districts: `caschool.csv`. Use the caschool package."
    assert named_modules(text) == ()


def test_dotted_names_are_found_in_the_kernel_without_importing_the_parent() -> None:
    code = (
        "import json, sys\n"
        "from notebook_bcc.kernel import in_kernel\n"
        "assert 'wsgiref' not in sys.modules\n"
        "request = json.dumps({'packages': [], "
        "'modules': ['wsgiref.simple_server', 'wsgiref.nothere', 'xml']})\n"
        "named = json.loads(in_kernel.environment_ns(request))['named']\n"
        "print(json.dumps([named, 'wsgiref' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    named, imported = json.loads(done.stdout)
    assert named == {
        "wsgiref.simple_server": "installed",
        "wsgiref.nothere": None,
        "xml": "installed",
    }
    assert imported is False  # found in the package's folders, the package not imported


def test_scipy_stats_in_a_problem_is_reported_importable() -> None:
    from notebook_bcc.kernel import in_kernel

    assert named_modules("Use the scipy.stats library.") == ("scipy.stats",)
    request = json.dumps({"packages": [], "modules": ["scipy.stats"]})
    assert json.loads(in_kernel.environment_ns(request))["named"] == {"scipy.stats": "installed"}
