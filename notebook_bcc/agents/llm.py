"""LLMAgent: any litellm model. The only module that imports litellm (lazily).

One retry layer (tenacity, jittered exponential backoff honouring ``Retry-After``) for rate
limits, timeouts, connection errors and 5xx; litellm's own retries are off. Authentication,
unknown-model and bad-request errors fail at once with a remedy.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from notebook_bcc.agents import AgentReply, AgentSettings
from notebook_bcc.config import DEFAULTS
from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.prompts import RenderedPrompt
from notebook_bcc.contract.reply import without_lone_surrogates
from notebook_bcc.errors import LLMError
from notebook_bcc.kernel.figures import MAX_FIGURES, downscaled_png

__all__ = ["LLMAgent", "cache_tokens", "key_variable"]

RETRIES = 4  # attempts after the first
#: providers whose prompt cache works only where the request sets ``cache_control``
CACHE_MARK_PROVIDERS = ("anthropic", "bedrock", "vertex_ai", "vertex_ai_beta")
MAX_RETRY_AFTER_S = 30.0
_PROVIDER_KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "azure": "AZURE_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
}


def cache_tokens(usage: Any) -> tuple[int, int]:
    """(read from, written to) the provider's prompt cache, as litellm's usage reports them:
    OpenAI's ``prompt_tokens_details.cached_tokens``, Anthropic's ``cache_read_input_tokens``
    and ``cache_creation_input_tokens``. Both are part of ``prompt_tokens``."""
    details = getattr(usage, "prompt_tokens_details", None)
    read = getattr(details, "cached_tokens", None) or getattr(usage, "cache_read_input_tokens", 0)
    written = getattr(usage, "cache_creation_input_tokens", None) or getattr(
        details, "cache_creation_tokens", 0
    )
    return int(read or 0), int(written or 0)


def key_variable(model: str) -> str:
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    return _PROVIDER_KEYS.get(provider, f"{provider.upper()}_API_KEY")


def _litellm() -> Any:
    """litellm, imported on first use (offline runs and ``--help`` never pay for it); an
    LLMError (exit 4) naming the install command when it cannot be imported."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise LLMError(
            f"litellm cannot be imported ({exc}), so --model cannot reach a provider",
            remedy="pip install litellm (it is a dependency of notebook-bcc: reinstall it)",
        ) from None

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    litellm.num_retries = 0
    return litellm


def _interruption(exc: BaseException) -> BaseException | None:
    """The Ctrl-C or SIGTERM that ``exc`` carries, if any. bcc's signal handlers raise where
    the main thread is, often inside the provider's client. Both raise a ``BaseException``
    (errors.py), which a client's ``except Exception`` lets through; this also finds one a
    client caught more widely and wrapped as a connection error, which would be retried (a
    SIGTERM, then an ``Exception``, was once retried to a completed run)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return int(code) if isinstance(code, int) else None


def _missing_key(exc: BaseException) -> bool:
    """The provider's client refused to send without an API key (litellm reports it as a
    500, "Missing credentials", which no retry can mend)."""
    text = str(exc).lower()
    return "missing credentials" in text or "api_key client option must be set" in text


def _clip(text: str, limit: int = 200) -> str:
    """The first line of ``text``, at most ``limit`` characters, never cut mid-word."""
    first = " ".join((text.splitlines() or [""])[0].split())
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0] + " …"


def _transient(exc: BaseException) -> bool:
    if _missing_key(exc):
        return False
    lt = _litellm()
    if isinstance(exc, (lt.RateLimitError, lt.Timeout, lt.APIConnectionError)):
        return True
    if isinstance(exc, (lt.ServiceUnavailableError, lt.InternalServerError, lt.BadGatewayError)):
        return True
    code = _status(exc)
    return code is not None and code >= 500


def _retry_after(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return min(float(value), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


class _Wait:
    """Retry-After when the server sent one, else jittered exponential backoff."""

    def __init__(self) -> None:
        self._backoff = wait_random_exponential(multiplier=0.5, max=20)

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = _retry_after(exc)
        return after if after is not None else self._backoff(state)


class LLMAgent:
    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        run_id: str = "",
        timeout: float = DEFAULTS.llm_timeout,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self.run_id = run_id
        self.timeout = timeout
        self._vision: bool | None = None
        self._marks_cache: bool | None = None
        lt = _litellm()
        try:
            lt.get_llm_provider(model, api_base=api_base)
        except (lt.BadRequestError, ValueError) as exc:  # unknown provider: before any run dir
            raise LLMError(
                f"unknown model provider in '{model}': {str(exc).splitlines()[0][:160]}",
                remedy="use offline, replay:RUN_DIR, or provider/model such as openai/gpt-4o",
            ) from None

    @classmethod
    def from_settings(cls, settings: AgentSettings) -> LLMAgent:
        return cls(
            settings.model,
            api_base=settings.api_base,
            run_id=settings.run_id,
            timeout=settings.timeout,
        )

    def respond(
        self, prompt: RenderedPrompt, obs: Observation, *, repair: str | None = None
    ) -> AgentReply:
        lt = _litellm()
        failures: list[tuple[int, str, str]] = []
        headers = {
            "X-BCC-Run-Id": self.run_id,
            "X-BCC-Transition": obs.event.value,
            "X-BCC-Location": obs.location or "/",
        }
        messages = [
            {"role": "system", "content": self._system_content(prompt)},
            {"role": "user", "content": self._user_content(prompt, obs)},
        ]

        def call() -> Any:
            try:
                return lt.completion(
                    model=self.model,
                    messages=messages,
                    api_base=self.api_base,
                    timeout=self.timeout,
                    extra_headers=headers,
                    num_retries=0,
                    max_retries=0,
                    temperature=0,
                )
            except Exception as exc:
                stop = _interruption(exc)
                if stop is not None:  # a signal, not the provider: no retry, no translation
                    raise stop from None
                failures.append((len(failures) + 1, "error", f"{type(exc).__name__}: {exc}"[:500]))
                raise

        retrying = Retrying(
            retry=retry_if_exception(_transient),
            wait=_Wait(),
            stop=stop_after_attempt(RETRIES + 1),
            reraise=True,
        )
        try:
            response = retrying(call)
        except Exception as exc:  # noqa: BLE001 - litellm raises bare Exception too; all are the provider's
            raise self._translate(exc, tuple(failures)) from None
        text = without_lone_surrogates(response.choices[0].message.content or "")
        usage = getattr(response, "usage", None)
        try:
            cost = float(lt.completion_cost(completion_response=response) or 0.0)
        except Exception:  # noqa: BLE001 - litellm's 'model isn't mapped' is a bare Exception: price 0
            cost = 0.0
        cached, written = cache_tokens(usage)
        return AgentReply(
            text=text,
            model=self.model,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cached_tokens=cached,
            cache_write_tokens=written,
            cost_usd=cost,
            llm_call=True,
            attempts=tuple(failures),
        )

    def marks_cache(self) -> bool:
        """Whether the provider caches only where the request marks it (``cache_control``):
        Anthropic's models, and others litellm's model map says cache prompts, on the
        providers that take the mark. OpenAI, DeepSeek and Gemini cache a shared prefix by
        themselves, so their requests stay plain."""
        if self._marks_cache is None:
            lt = _litellm()
            try:
                _, provider, _, _ = lt.get_llm_provider(self.model, api_base=self.api_base)
                caches = bool(lt.utils.supports_prompt_caching(model=self.model))
            except Exception:  # noqa: BLE001 - an unmapped model: no marks
                provider, caches = "", False
            self._marks_cache = caches and provider in CACHE_MARK_PROVIDERS
        return self._marks_cache

    def _system_content(self, prompt: RenderedPrompt) -> str | list[dict[str, Any]]:
        """The system message: the run's block, then the agent's instructions; for a provider
        that caches only where marked, a ``cache_control`` breakpoint after each."""
        if not self.marks_cache() or not 0 < prompt.run_chars < len(prompt.system):
            return prompt.system
        mark = {"type": "ephemeral"}
        run, own = prompt.system[: prompt.run_chars], prompt.system[prompt.run_chars :]
        return [
            {"type": "text", "text": run, "cache_control": mark},
            {"type": "text", "text": own, "cache_control": mark},
        ]

    def supports_vision(self) -> bool:
        """Whether litellm's model map says the model takes images (unknown models: no)."""
        if self._vision is None:
            self._vision = bool(_litellm().supports_vision(model=self.model))  # unknown: False
        return self._vision

    def _user_content(self, prompt: RenderedPrompt, obs: Observation) -> str | list[dict[str, Any]]:
        """The user message; for a vision model, the behavior's figures (at most
        ``MAX_FIGURES``, downscaled) follow the text as image parts. The text already holds a
        note per figure, so a model without vision still knows what was drawn."""
        pngs = [f.png for f in obs.figures if f.png][:MAX_FIGURES]
        if not pngs or not self.supports_vision():
            return prompt.user
        parts: list[dict[str, Any]] = [{"type": "text", "text": prompt.user}]
        for png in pngs:
            data = base64.b64encode(downscaled_png(png)).decode("ascii")
            parts.append(
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
            )
        return parts

    def _translate(
        self, exc: BaseException, attempts: tuple[tuple[int, str, str], ...]
    ) -> LLMError:
        """The LLMError for a provider exception, with the attempts made (for the log)."""
        lt = _litellm()
        first = _clip(str(exc))
        variable = key_variable(self.model)
        if _missing_key(exc) and not os.environ.get(variable):
            message = f"{self.model}: no API key: {variable} is not set"
            remedy = f"export {variable}=<your key>, then `bcc resume RUN_DIR`"
        elif _missing_key(exc):
            message = f"{self.model}: the provider's client found no API key ({first})"
            remedy = f"set the key variable the provider needs (for {self.model}: {variable})"
        elif isinstance(exc, (lt.AuthenticationError, lt.PermissionDeniedError)):
            message = f"{self.model}: authentication failed ({first})"
            remedy = f"set {variable} to a valid key, then `bcc resume RUN_DIR`"
        elif isinstance(exc, lt.NotFoundError):
            message, remedy = f"{self.model}: model not found ({first})", "check --model"
        elif isinstance(exc, lt.BadRequestError):
            message = f"{self.model}: request refused ({first})"
            remedy = "check --model and --api-base"
        else:
            message = f"{self.model}: provider failed after {len(attempts)} attempt(s) ({first})"
            remedy = (
                "check --api-base and the network, raise --llm-timeout, then `bcc resume RUN_DIR`"
            )
        return LLMError(message, remedy=remedy, attempts=attempts)
