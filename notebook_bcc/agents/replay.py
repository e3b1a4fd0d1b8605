"""ReplayAgent: answers each transition with the reply recorded in a run's logs."""

from __future__ import annotations

from collections import deque
from pathlib import Path

from notebook_bcc.agents import AgentReply, AgentSettings
from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.prompts import RenderedPrompt
from notebook_bcc.errors import UsageError
from notebook_bcc.rundir.store import RunStore

__all__ = ["ReplayAgent"]


class ReplayAgent:
    """Recorded accepted replies, served per event in their original order: a fork's
    (FORK) as the behavior arranger's, a branch's per branch (its branches ask at once)."""

    def __init__(self, replies: dict[str, deque[str]], source: Path) -> None:
        self.model = f"replay:{source}"
        self._replies = replies

    @classmethod
    def from_settings(cls, settings: AgentSettings) -> ReplayAgent:
        return cls.from_run_dir(settings.model.split(":", 1)[1])

    @classmethod
    def from_run_dir(cls, run_dir: str | Path) -> ReplayAgent:
        root = Path(run_dir)
        logs = list(RunStore(root).logs())  # committed transitions only, in order
        if not logs:
            raise UsageError(
                f"{root} has no transition logs to replay",
                remedy="pass a run directory of `bcc run`",
            )
        replies: dict[str, deque[str]] = {}
        for t in logs:
            ok = [r for r in t.findall("response") if r.get("status") == "ok"]
            if ok:
                replies.setdefault(_key(t.get("event"), t.get("branch")), deque()).append(
                    ok[-1].text or ""
                )
        return cls(replies, root)

    def respond(
        self, prompt: RenderedPrompt, obs: Observation, *, repair: str | None = None
    ) -> AgentReply:
        queue = self._replies.get(_key(obs.event.value, obs.branch))
        if not queue:
            raise UsageError(
                f"the recording has no more {obs.event.value} replies (the run diverged)",
                remedy="replay a complete run, or run with a model",
            )
        return AgentReply(text=queue.popleft(), model=self.model)


def _key(event: str, branch: str | None) -> str:
    if event == "FORK":  # the behavior arranger's other answer
        return "START_BEHAVIOR"
    return f"{event}@{branch}" if branch else event
