"""Phrases the runner puts into prompts, read from ``prompts/PHRASES.md``: one section per
``<!-- name -->`` mark, a paragraph whose lines are joined with single spaces, ``$name``
placeholders filled in by the caller (:class:`string.Template`)."""

from __future__ import annotations

import functools
import re
from string import Template

from notebook_bcc.contract.reply import resource_dir

__all__ = ["phrase"]


@functools.cache
def _phrases() -> dict[str, Template]:
    text = (resource_dir() / "PHRASES.md").read_text(encoding="utf-8")
    parts = re.split(r"^<!-- (\w+) -->\n", text, flags=re.MULTILINE)[1:]
    names, bodies = parts[0::2], parts[1::2]
    return {
        name: Template(" ".join(body.strip().split("\n")))
        for name, body in zip(names, bodies, strict=True)
    }


def phrase(name: str, **values: object) -> str:
    """The phrase ``name`` with its ``$placeholders`` filled from ``values``."""
    return _phrases()[name].substitute(values)
