"""A scripted agent for tests: the agent seam, answering from a function of the observation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from notebook_bcc.agents import AgentReply
from notebook_bcc.config import RunConfig
from notebook_bcc.contract.observation import Observation
from notebook_bcc.contract.prompts import RenderedPrompt
from notebook_bcc.workflow.runner import Runner
from notebook_bcc.workflow.session import create_run


@dataclass
class ScriptedAgent:
    answer: Callable[[Observation], str]
    model: str = "scripted"
    seen: list[tuple[str, RenderedPrompt]] = field(default_factory=list)

    def respond(
        self, prompt: RenderedPrompt, obs: Observation, *, repair: str | None = None
    ) -> AgentReply:
        self.seen.append((obs.event, prompt))
        return AgentReply(text=self.answer(obs), model=self.model)


def one_stage(
    obs: Observation,
    code: Callable[[Observation], str],
    *,
    complete_when: Callable[[Observation], bool] | None = None,
    artifact: str = "result",
) -> str:
    """A one-stage, one-step plan whose action code comes from ``code``."""
    if obs.event == "START_WORKFLOW":
        return (
            '<stages><stage id="work" title="Work"><goal>g</goal><verified_artifacts>'
            f'<variable name="{artifact}">x</variable></verified_artifacts></stage></stages>'
        )
    if obs.event == "START_STEP":
        return (
            '<steps><step id="compute" title="Compute"><goal>g</goal><verified_artifacts>'
            f'<variable name="{artifact}">x</variable></verified_artifacts></step></steps>'
        )
    if obs.event == "START_BEHAVIOR":
        n = obs.behaviors_in_step + 1
        return (
            f'<behavior id="compute_b{n}" step_id="compute"><agent>A</agent><task>t</task>'
            f'<outputs><artifact name="{artifact}">x</artifact></outputs>'
            f"<acceptance><criterion>{artifact} is not None</criterion></acceptance></behavior>"
        )
    if obs.event == "COMPLETE_ACTION":
        return f"<actions><add-text>Compute it.</add-text><add-code2run><![CDATA[{code(obs)}]]></add-code2run></actions>"
    if obs.event == "COMPLETE_STEP":
        done = complete_when(obs) if complete_when else all(ok for _, ok in obs.artifacts)
        flag, nxt = ("true", "STEP_COMPLETED") if done else ("false", "STEP_RUNNING")
        return (
            f'<reflection current_step_is_complete="{flag}"><evaluation><goal_achievement>'
            "<status>achieved</status><reasoning>r</reasoning></goal_achievement></evaluation>"
            f"<decision><next_state>{nxt}</next_state><reasoning>because</reasoning></decision>"
            "<comment>Looked at it.</comment></reflection>"
        )
    if obs.event == "COMPLETE_STAGE":
        return (
            '<stage_reflection stage_is_complete="true"><step_evaluation><step_id>compute</step_id>'
            "<completion_status>complete</completion_status></step_evaluation><decision>"
            "<next_state>STAGE_COMPLETED</next_state><reasoning>r</reasoning></decision>"
            "<variable_management/></stage_reflection>"
        )
    raise AssertionError(obs.event)


def make_runner(tmp: Path, agent: ScriptedAgent, **config: object) -> Runner:
    problem = tmp / "problem.md"
    problem.write_text("Describe the numbers.\n")
    data = tmp / "data.csv"
    data.write_text("a,b\n1,2\n3,4\n5,6\n")
    runner = create_run(RunConfig(model="offline", **config), problem, [data], out=tmp / "run")
    runner.agent = agent
    return runner
