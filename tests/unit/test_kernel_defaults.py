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


def test_an_ipykernel_spec_is_launched_through_bccs_launcher_whichever_module_it_names() -> None:
    """``-m ipykernel_launcher`` and the older ``-m ipykernel`` run the same app: both are
    swapped for the launcher that sizes IOPub's queue before it binds; another command is not."""
    from jupyter_client.kernelspec import KernelSpec

    from notebook_bcc.kernel import processes
    from notebook_bcc.kernel.local import _BoundedKernelManager

    km = _BoundedKernelManager()
    km.connection_file = "/tmp/k.json"
    for module in ("ipykernel_launcher", "ipykernel"):
        argv = ["python", "-m", module, "-f", "{connection_file}"]
        km._kernel_spec = KernelSpec(argv=argv, display_name="p", language="python")
        assert km.format_kernel_cmd()[1:] == ["-m", processes.KERNEL_LAUNCHER, "-f", "/tmp/k.json"]
    km._kernel_spec = KernelSpec(argv=["/opt/ipykernel", "-f", "{connection_file}"])
    assert km.format_kernel_cmd() == ["/opt/ipykernel", "-f", "/tmp/k.json"]
