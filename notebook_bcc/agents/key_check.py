"""A model's API key checked at the start of a run, without litellm (whose import takes
seconds): one ``GET <api base>/models`` with the key, for OpenAI and OpenAI-compatible
servers. A 401 or 403 is the provider refusing the key, so the run fails as soon as its first
agent is asked instead of after litellm's import; any other answer (a server without the
endpoint, no network) says nothing, and the run goes on as before."""

from __future__ import annotations

import os
import urllib.error
import urllib.request

from notebook_bcc.errors import LLMError

__all__ = ["refused_key"]

OPENAI_BASE = "https://api.openai.com/v1"
CHECK_TIMEOUT_S = 5.0


def refused_key(model: str, api_base: str | None) -> LLMError | None:
    """The error of a key the provider refuses, else None (accepted, or nothing learnt)."""
    if not model.startswith("openai/"):
        return None
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        return None  # litellm's own call reports a missing key
    request = urllib.request.Request(
        f"{(api_base or OPENAI_BASE).rstrip('/')}/models",
        headers={"Authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=CHECK_TIMEOUT_S):
            return None
    except urllib.error.HTTPError as exc:
        if exc.code not in (401, 403):
            return None
        return LLMError(
            f"{model}: authentication failed (the provider answered {exc.code} to the key "
            "in OPENAI_API_KEY)",
            remedy="set OPENAI_API_KEY to a valid key, then `bcc resume RUN_DIR`",
        )
    except (OSError, ValueError):
        return None
