"""One source for every default (issue 40, item 6): the CLI's options and the agents read
RunConfig's, so none can drift from it."""

from __future__ import annotations

import inspect

from notebook_bcc import cli
from notebook_bcc.agents import AgentSettings, make_agent
from notebook_bcc.config import DEFAULTS, RunConfig


def test_every_run_option_named_after_a_setting_has_its_default() -> None:
    fields = set(RunConfig.__dataclass_fields__)
    params = inspect.signature(cli.run).parameters
    # an option whose default is None is "not given": RunConfig's default (or the run's
    # choice, as for the sandbox) applies
    shared = {n for n in fields & set(params) if params[n].default is not None}
    assert {"seed", "cell_timeout", "llm_timeout", "max_alternatives", "max_stages"} <= shared
    for name in shared:
        default = params[name].default
        assert getattr(default, "value", default) == getattr(DEFAULTS, name), name


def test_the_agents_take_the_llm_timeout_from_run_config() -> None:
    assert AgentSettings("offline").timeout == RunConfig().llm_timeout
    assert inspect.signature(make_agent).parameters["timeout"].default == DEFAULTS.llm_timeout
