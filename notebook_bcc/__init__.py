"""notebook-bcc: a written analysis problem and its data into a finished Jupyter notebook.

The library (``notebook_bcc.api``): ``run(problem, data, **options)`` runs an analysis as
``bcc run`` does and returns a ``Run``; ``open_run(path)`` opens one. They are imported on
first use, so ``bcc --help`` does not pay for them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Run", "open_run", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from notebook_bcc import api

        return getattr(api, name)
    raise AttributeError(f"module 'notebook_bcc' has no attribute {name!r}")
