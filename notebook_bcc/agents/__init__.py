"""Agent backends: the seam between the runner and whoever writes the XML.

One protocol (``Agent.respond``), three backends chosen by the model string:
``offline`` (built-in analyst), ``replay:<run_dir>`` (recorded replies) and anything else
(a litellm model; imported lazily so offline runs never import litellm).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.prompts import RenderedPrompt

__all__ = ["Agent", "AgentReply", "make_agent"]


@dataclass(frozen=True)
class AgentReply:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
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


def make_agent(
    model: str,
    *,
    api_base: str | None = None,
    run_id: str = "",
    timeout: float = 120.0,
    seq_offset: int = 0,
) -> Agent:
    """The backend for ``model`` (see module docstring)."""
    if model == "offline":
        from notebook_bcc.agents.offline import OfflineAnalyst

        return OfflineAnalyst()
    if model.startswith("replay:"):
        from notebook_bcc.agents.replay import ReplayAgent

        return ReplayAgent.from_run_dir(model.split(":", 1)[1])
    from notebook_bcc.agents.llm import LLMAgent

    return LLMAgent(model, api_base=api_base, run_id=run_id, timeout=timeout)
