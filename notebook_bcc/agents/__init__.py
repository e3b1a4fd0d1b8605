"""Agent backends: the seam between the runner and whoever writes the XML.

One protocol (``Agent.respond``), three backends chosen by the model string:
``offline`` (built-in analyst), ``replay:<run_dir>`` (recorded replies) and anything else
(a litellm model; imported lazily so offline runs never import litellm).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
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
    """An agent whose backend is built on a thread of its own (a model's backend imports
    litellm, seconds of work), so that the run's kernel boots meanwhile. ``built()`` waits for
    it and raises what building raised (an unusable model string); ``respond`` waits too."""

    def __init__(self, settings: AgentSettings) -> None:
        self.model = settings.model
        self._future: Future[Agent] = Future()
        threading.Thread(
            target=self._build, args=(settings,), name="bcc-agent-build", daemon=True
        ).start()

    def _build(self, settings: AgentSettings) -> None:
        try:
            self._future.set_result(agents.build(settings))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits, as it was raised
            self._future.set_exception(exc)

    @property
    def ready(self) -> bool:
        return self._future.done()

    def built(self) -> Agent:
        return self._future.result()

    def respond(
        self, prompt: RenderedPrompt, obs: Observation, *, repair: str | None = None
    ) -> AgentReply:
        return self.built().respond(prompt, obs, repair=repair)
