"""Python source parsed into ``ast`` trees, one parse at a time across threads.

CPython 3.11 can fail a parse made while another thread parses with ``SystemError: AST
constructor recursion depth mismatch`` (python/cpython#106905: the recursion depth of the AST
constructor is shared state). A fork's branches parse on threads of their own (the offline
analyst cuts its scripts into cells, the notebook recognises helper cells, the kernel's
replies are read as literals), so every parse of the package goes through this lock.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

__all__ = ["parse_module", "literal"]

_PARSING = threading.Lock()


def parse_module(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``; raises SyntaxError as it does."""
    with _PARSING:
        return ast.parse(source, filename=filename)


def literal(text: str) -> Any:
    """``ast.literal_eval(text)``; raises what it raises."""
    with _PARSING:
        return ast.literal_eval(text)
