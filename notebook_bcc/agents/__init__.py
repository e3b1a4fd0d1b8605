"""Agent backends: the seam between the runner and whoever writes the XML.

One protocol (``Agent.respond``), three backends chosen by the model string:
``offline`` (built-in analyst), ``replay:<run_dir>`` (recorded replies) and anything else
(a litellm model; imported lazily so offline runs never import litellm).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
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


#: how long ``AgentBeingBuilt.settled`` waits for the key check before building the backend
#: anyway (a provider answers ``GET /models`` in well under a second; a silent one must not
#: hold the run up)
KEY_CHECK_WAIT_S = 2.0


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
    """An agent whose model's key is checked on a thread (``key_check``, one HTTP request)
    from the moment it is made, while the run's directory is written and its kernel spawned.

    ``settled()`` waits for that check (at most ``KEY_CHECK_WAIT_S``), then gives the backend,
    built there on the calling thread (a model's imports litellm, seconds of work while the
    kernel boots in its own process; on a thread beside the run's start that import took 50 s
    instead of 6 s), or this agent when the key was refused: then nothing is imported, and
    ``respond`` raises the refusal, so a bad key ends the run in about a second."""

    def __init__(self, settings: AgentSettings) -> None:
        self.model = settings.model
        self._settings = settings
        self._refusal: Future[BaseException | None] = Future()
        self._backend: Agent | None = None
        threading.Thread(target=self._check, daemon=True).start()

    def _check(self) -> None:
        from notebook_bcc.agents.key_check import refused_key

        try:
            refusal = refused_key(self._settings.model, self._settings.api_base)
        except Exception:  # noqa: BLE001 - a check that broke says nothing: the call decides
            refusal = None
        self._refusal.set_result(refusal)

    def refusal(self) -> BaseException | None:
        return self._refusal.result() if self._refusal.done() else None

    def settled(self) -> Agent:
        """The backend (raising what building raised: an unusable model string), or this
        agent when the key was refused (its ``respond`` raises that)."""
        wait([self._refusal], timeout=KEY_CHECK_WAIT_S)
        if self.refusal() is not None:
            return self
        if self._backend is None:
            self._backend = agents.build(self._settings)
        return self._backend

    def respond(
        self, prompt: RenderedPrompt, obs: Observation, *, repair: str | None = None
    ) -> AgentReply:
        backend = self.settled()
        refused = self.refusal()
        if refused is not None:
            raise refused
        return backend.respond(prompt, obs, repair=repair)


def raise_if_refused(agent: Agent) -> None:
    """Raise the key check's refusal of ``agent``'s key, if it came (before the kernel boots,
    so that a refused key ends the run at once)."""
    refused = agent.refusal() if isinstance(agent, AgentBeingBuilt) else None
    if refused is not None:
        raise refused
