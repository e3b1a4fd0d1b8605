"""Reads a cell template of the offline analyst, exactly as it is in its file."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

__all__ = ["template"]


@cache
def template(name: str) -> str:
    """The text of ``templates/NAME`` (a Python file linted like the rest of the package)."""
    with files("notebook_bcc.agents.offline.templates").joinpath(name).open(
        encoding="utf-8", newline=""
    ) as handle:
        return handle.read()
