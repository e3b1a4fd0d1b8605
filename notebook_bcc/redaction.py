"""Secrets never leave (docs/sandbox.md, "Secrets"): the value of every secret-looking variable in bcc's
environment is replaced by ``[redacted]`` in what bcc writes or sends to a model.

One redactor, applied where everything passes: the outputs captured from the kernel
(``kernel/session.py``, and the spill file while it is written), the rendered prompt
(``contract/prompts.py``) and, as a last line, the run store's write helpers
(``rundir/store.py``). The secrets are read from ``os.environ`` at each call (a name matched by
``SECRET_PATTERNS``, any case, and a value of at least ``MIN_SECRET_CHARS``), so a shorter value
(``OPENAI_ORGANIZATION=1``) never rewrites ordinary text.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "SECRET_PATTERNS",
    "StreamRedactor",
    "is_secret_name",
    "redact",
    "redact_bytes",
    "redact_tree",
    "secret_values",
]

SECRET_PATTERNS: tuple[str, ...] = (
    "*_API_KEY", "*_APIKEY", "*_TOKEN", "*_SECRET", "*_SECRET_KEY", "*_PASSWORD", "*_PASSWD",
    "*_ACCESS_KEY", "*_PRIVATE_KEY", "*_CREDENTIALS", "*_KEY_ID", "AWS_*", "OPENAI_*",
    "ANTHROPIC_*", "AZURE_OPENAI_*", "GEMINI_*", "GOOGLE_API_*", "GROQ_*", "MISTRAL_*",
    "COHERE_*", "TOGETHER_*", "HF_*", "HUGGINGFACE_*", "LITELLM_*", "OPENROUTER_*",
    "DEEPSEEK_*", "XAI_*",
)  # fmt: skip

REDACTED = "[redacted]"
#: a shorter value is not taken for a secret (it would rewrite ordinary words and numbers)
MIN_SECRET_CHARS = 8

_SECRET_NAME = re.compile(
    "|".join(fnmatch.translate(p) for p in SECRET_PATTERNS), flags=re.IGNORECASE
)


#: names ``SECRET_PATTERNS`` matches that hold settings, not secrets (``OPENAI_API_BASE``,
#: ``AWS_REGION``, ``HF_HOME``): their values (a URL, a region, a path) stay in the outputs and
#: in ``config.json``, where a ``[redacted]`` would break a resume
_SETTING_NAME = re.compile(
    r".*_(BASE|URL|ENDPOINT|HOST|PORT|REGION|HOME|DIR|PATH|VERSION|MODEL|TYPE)",
    flags=re.IGNORECASE,
)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name looks like a secret's (``SECRET_PATTERNS``, and
    not a setting's)."""
    return _SECRET_NAME.match(name) is not None and _SETTING_NAME.fullmatch(name) is None


def secret_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The secrets of ``env`` (default ``os.environ``), longest first."""
    env = os.environ if env is None else env
    found = {v for k, v in env.items() if len(v) >= MIN_SECRET_CHARS and is_secret_name(k)}
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


def _replace(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:  # longest first; str.replace is ~30 times faster than a regex
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[redacted]``."""
    return _replace(text, secret_values()) if text else text


def redact_bytes(data: bytes) -> bytes:
    """``redact`` of UTF-8 bytes (a file's content as it is written)."""
    for secret in secret_values() if data else ():
        raw = secret.encode("utf-8", "surrogateescape")
        if raw in data:
            data = data.replace(raw, REDACTED.encode())
    return data


def redact_tree(value: Any) -> Any:
    """``redact`` of every string in nested dicts, lists and tuples (a cell's outputs), keys
    included; other values are returned as they are. A dict keeps its class (NotebookNode)."""
    secrets = secret_values()
    return _redact_tree(value, secrets) if secrets else value


def _redact_tree(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _replace(value, secrets)
    if isinstance(value, dict):
        return type(value)(
            (_redact_tree(k, secrets), _redact_tree(v, secrets)) for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return type(value)(_redact_tree(v, secrets) for v in value)
    return value


class StreamRedactor:
    """``redact`` over text that arrives in pieces: a secret split between two pieces is still
    found, because the last ``len(longest secret) - 1`` chars wait for the next piece (or
    ``flush``)."""

    def __init__(self) -> None:
        self._secrets = secret_values()
        self._held = ""

    def feed(self, text: str) -> str:
        """What of ``text`` (after what was held) can be written now, redacted."""
        if not self._secrets:
            return text
        text = _replace(self._held + text, self._secrets)
        cut = max(0, len(text) - (len(self._secrets[0]) - 1))
        self._held = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        """The text still held, redacted."""
        held, self._held = self._held, ""
        return _replace(held, self._secrets)
