"""Each private upstream name bcc relies on (``notebook_bcc.upstream``) still exists, and the
distribution that owns it is bounded in pyproject.toml."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import tomllib

from notebook_bcc.upstream import UPSTREAM_INTERNALS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("distribution", "module", "name", "where"),
    UPSTREAM_INTERNALS,
    ids=[f"{m}.{n}" for _, m, n, _ in UPSTREAM_INTERNALS],
)
def test_the_private_name_still_exists(
    distribution: str, module: str, name: str, where: str
) -> None:
    target: object = importlib.import_module(module)
    for part in name.split("."):
        assert hasattr(target, part), f"{module}.{name} is gone from {distribution}: {where}"
        target = getattr(target, part)


def test_each_owner_has_an_upper_bound() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    specs = {
        re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower().replace("-", "_"): d
        for d in dependencies
    }
    for distribution in sorted({d for d, *_ in UPSTREAM_INTERNALS}):
        spec = specs.get(distribution)
        assert spec is not None, f"{distribution} is not a dependency in pyproject.toml"
        assert "<" in spec, f"{distribution} has no upper bound in pyproject.toml: {spec!r}"


def test_the_list_names_what_the_code_overrides() -> None:
    """The override in kernel/client.py is the one listed (a renamed override would leave a
    stale entry and an unwatched name)."""
    source = (ROOT / "notebook_bcc/kernel/client.py").read_text()
    assert "def _async_poll_output_msg(" in source
