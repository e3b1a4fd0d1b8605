"""The helper that ``session.py`` runs inside the kernel: the text of ``in_kernel.py``, then
of ``in_kernel_figures.py`` and ``in_kernel_results.py`` (three files, each of one concern,
one module in the kernel).

The code is sent as a string in a user expression (``call_expression``) that, the first time,
``exec``-s it into a module kept in ``sys.modules`` under a name holding the source's hash, so
nothing is added to the user namespace and later calls skip compiling it (~2 ms each). Every
entry point takes a JSON string and returns a JSON string; it catches user errors itself so
IPython never records a traceback (``sys.last_value`` stays put).
Work per variable is bounded: shallow memory figures, capped column lists, ``reprlib`` reprs.
"""

from __future__ import annotations

import hashlib
import json
from importlib.resources import files

__all__ = ["PARTS", "SOURCE", "call_expression"]

#: the helper's files as they are in the package (Python files linted like the rest, and
#: imported by the unit tests), read once
PARTS = ("in_kernel.py", "in_kernel_figures.py", "in_kernel_results.py")
SOURCE = "\n\n".join(
    files("notebook_bcc.kernel").joinpath(name).read_text(encoding="utf-8") for name in PARTS
)

_MODULE = "_bcc_helper_" + hashlib.sha1(SOURCE.encode()).hexdigest()[:12]


def call_expression(func: str, payload: object) -> str:
    """A user expression that evaluates to ``func(json.dumps(payload))`` of the helper."""
    module = (
        f"(lambda s: s.modules.get({_MODULE!r}) or s.modules.setdefault({_MODULE!r}, "
        f"(lambda m: (exec({SOURCE!r}, m.__dict__), m)[1])(type(s)({_MODULE!r}))))"
        "(__import__('sys'))"
    )
    return f"{module}.{func}({json.dumps(payload)!r})"
