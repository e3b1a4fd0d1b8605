"""The private names of other distributions that bcc relies on, in one place.

Each is overridden, called or imported by bcc although its owner may rename or drop it in
any release. ``tests/unit/test_upstream.py`` fails when one disappears, and pyproject.toml
bounds each owner below its next major version. Imports nothing: a list to check against.
"""

from __future__ import annotations

__all__ = ["UPSTREAM_INTERNALS"]

#: (distribution, module, dotted name in the module, where bcc relies on it)
UPSTREAM_INTERNALS: tuple[tuple[str, str, str, str], ...] = (
    (
        "nbclient",
        "nbclient.client",
        "NotebookClient._async_poll_output_msg",
        "kernel/client.py overrides it: the shielded output poll",
    ),
    (
        "jupyter_client",
        "jupyter_client.client",
        "KernelClient._async_is_alive",
        "kernel/ready.py calls it while waiting for a kernel",
    ),
    (
        "jupyter_client",
        "jupyter_client.client",
        "KernelClient._handle_kernel_info_reply",
        "kernel/ready.py calls it once the kernel answered",
    ),
    (
        "jupyter_client",
        "jupyter_client.manager",
        "KernelManager._async_is_alive",
        "kernel/gateway.py answers it for a gateway kernel (the client asks its manager)",
    ),
    (
        "jupyter_server",
        "jupyter_server.gateway.managers",
        "GatewayKernelClient._route_responses",
        "kernel/gateway.py wraps it to acknowledge each websocket message",
    ),
    (
        "ipykernel",
        "ipykernel.iostream",
        "OutStream._is_master_process",
        "kernel/stream.py calls it before flushing",
    ),
    (
        "ipykernel",
        "ipykernel.kernelapp",
        "IPKernelApp.init_iopub",
        "kernel/stream.py overrides it: public, but bcc relies on its making the IOPub socket "
        "from the context it is given (test_a_stopped_client_loses_no_output checks the effect)",
    ),
    (
        "nbformat",
        "nbformat.v4.nbjson",
        "BytesEncoder",
        "rundir/notebook_json.py encodes with it",
    ),
    (
        "nbformat",
        "nbformat.v4.rwbase",
        "split_lines",
        "rundir/notebook_json.py splits a cell's text as nbformat writes it",
    ),
    (
        "nbformat",
        "nbformat.v4.rwbase",
        "strip_transient",
        "rundir/notebook_json.py drops what nbformat does not write",
    ),
)
