"""A kernel session's defaults are RunConfig's (one source: they had drifted apart)."""

from __future__ import annotations

import inspect

from notebook_bcc.config import RunConfig
from notebook_bcc.kernel.session import KernelSession


def test_the_session_defaults_are_the_run_configs() -> None:
    params = inspect.signature(KernelSession).parameters
    assert params["excerpt_chars"].default == RunConfig().excerpt_chars == 4_000
    assert params["output_cap_chars"].default == RunConfig().output_cap_chars
    assert params["cell_timeout"].default == RunConfig().cell_timeout
    assert params["startup_timeout"].default == RunConfig().kernel_startup_timeout
