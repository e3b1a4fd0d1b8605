"""README stays true: every CLI option of every command is documented, and the quick start is
exactly the two make commands."""

from __future__ import annotations

import re

import typer.main

from notebook_bcc.cli import app
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_option_of_every_command_is_in_the_readme():
    group = typer.main.get_command(app)
    missing = []
    for name, command in group.commands.items():
        assert f"bcc {name}" in README, name
        for param in command.params:
            if getattr(param, "param_type_name", "") == "option":
                for opt in param.opts:
                    if opt.startswith("--") and opt != "--help" and opt not in README:
                        missing.append(f"{name} {opt}")
    assert not missing, missing


def test_quick_start_is_two_commands():
    block = re.search(r"## Quick start\s+```\s*\n(.*?)```", README, re.DOTALL)
    assert block and block.group(1).split("\n")[:2] == ["make demo", "make test"]


def test_exit_codes_are_documented():
    for code in ("0", "1", "2", "3", "4", "5", "6", "7", "8", "130"):
        assert f"| {code} |" in README
