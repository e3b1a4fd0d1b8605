"""Agent backends: the seam between the runner and whoever writes the XML.

One protocol (``Agent.respond``), three backends chosen by the model string:
``offline`` (built-in analyst), ``replay:<run_dir>`` (recorded replies) and anything else
(a litellm model; imported lazily so offline runs never import litellm).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Protocol

from notebook_bcc.config import DEFAULTS
from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.prompts import RenderedPrompt

__all__ = [
    "Agent",
    "AgentBeingBuilt",
    "AgentReply",
    "AgentRegistry",
    "AgentSettings",
    "agents",
    "make_agent",
    "raise_if_refused",
]


@dataclass(frozen=True)
class AgentReply:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache
    cache_write_tokens: int = 0  # of prompt_tokens, written to it
    cost_usd: float = 0.0
    llm_call: bool = False  # counted against --max-llm-calls
    attempts: tuple[tuple[int, str, str], ...] = ()  # (attempt, status, detail) of retries


class Agent(Protocol):
    model: str

    def respond(
        self, prompt: RenderedPrompt, obs: Observation, *, repair: str | None = None
    ) -> AgentReply:
        """Answer the prompt. ``repair`` holds the previous reply's validation error."""
        ...


@dataclass(frozen=True)
class AgentSettings:
    """What a backend is built from."""

    model: str
    api_base: str | None = None
    run_id: str = ""
    timeout: float = DEFAULTS.llm_timeout


class AgentRegistry:
    """Backends by the model strings they serve, in order; the first that matches is built.

    A backend is named ``module:Class`` and imported only when chosen (an offline run never
    imports litellm); its class builds itself with ``from_settings(AgentSettings)``.
    """

    def __init__(self) -> None:
        self._backends: list[tuple[str, Callable[[str], bool], str]] = []

    def register(self, name: str, serves: Callable[[str], bool], target: str) -> None:
        self._backends.append((name, serves, target))

    def names(self) -> list[str]:
        return [name for name, _, _ in self._backends]

    def build(self, settings: AgentSettings) -> Agent:
        for _, serves, target in self._backends:
            if serves(settings.model):
                module, _, cls = target.partition(":")
                backend = getattr(importlib.import_module(module), cls)
                return backend.from_settings(settings)
        raise LookupError(f"no agent backend serves {settings.model!r}")


agents = AgentRegistry()
agents.register("offline", lambda m: m == "offline", "notebook_bcc.agents.offline:OfflineAnalyst")
agents.register(
    "replay", lambda m: m.startswith("replay:"), "notebook_bcc.agents.replay:ReplayAgent"
)
agents.register("litellm", lambda m: True, "notebook_bcc.agents.llm:LLMAgent")  # any other


def make_agent(
    model: str,
    *,
    api_base: str | None = None,
    run_id: str = "",
    timeout: float = DEFAULTS.llm_timeout,
) -> Agent:
    """The backend for ``model`` (see ``agents``)."""
    return agents.build(AgentSettings(model, api_base, run_id, timeout))


class AgentBeingBuilt:
    """An agent whose backend is built when it is made (a model's backend imports litellm,
    seconds of work) while a thread checks the model's key (``key_check``), so that a refused
    key fails the first call at once. ``settled()`` gives the backend, or this agent when the
    key was refused; ``respond`` raises the refusal, else asks the backend. (The backend was
    built on a thread too, but litellm's import there crawled: see ``__init__``; the future
    that held it is kept, and now is done when ``__init__`` returns.)"""

    def __init__(self, settings: AgentSettings) -> None:
        self.model = settings.model
        self._future: Future[Agent] = Future()
        self._refusal: Future[BaseException | None] = Future()
        threading.Thread(target=self._check, args=(settings,), daemon=True).start()
        # built here, not on a thread: litellm's import on a thread beside the run's start
        # (the kernel's launch, pandas' import for the preview) took 50 s instead of 6 s
        self._build(settings)

    def _build(self, settings: AgentSettings) -> None:
        try:
            self._future.set_result(agents.build(settings))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits, as it was raised
            self._future.set_exception(exc)

    def _check(self, settings: AgentSettings) -> None:
        from notebook_bcc.agents.key_check import refused_key

        try:
            refusal = refused_key(settings.model, settings.api_base)
        except Exception:  # noqa: BLE001 - a check that broke says nothing: the call decides
            refusal = None
        self._refusal.set_result(refusal)

    def refusal(self) -> BaseException | None:
        return self._refusal.result() if self._refusal.done() else None

    def settled(self) -> Agent:
        """The backend once built (raising what building raised: an unusable model string),
        or this agent when the key was refused first (its ``respond`` raises that)."""
        while not self._future.done():
            wait([self._future, self._refusal], return_when=FIRST_COMPLETED)
            if self.refusal() is not None:
                return self
        if self.refusal() is not None:  # refused while the backend was built
            return self
        return self._future.result()

    def respond(
        self, prompt: RenderedPrompt, obs: Observation, *, repair: str | None = None
    ) -> AgentReply:
        refused = self.refusal()
        if refused is not None:
            raise refused
        return self._future.result().respond(prompt, obs, repair=repair)


def raise_if_refused(agent: Agent) -> None:
    """Raise the key check's refusal of ``agent``'s key, if it came (before the kernel boots,
    so that a refused key ends the run at once)."""
    refused = agent.refusal() if isinstance(agent, AgentBeingBuilt) else None
    if refused is not None:
        raise refused
