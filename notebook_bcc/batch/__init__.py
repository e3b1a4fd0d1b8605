"""Many runs at once: ``bcc batch`` over a manifest, on this machine or a Dask cluster."""
