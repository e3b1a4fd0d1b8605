"""README and docs/ stay true: every CLI option of every command is documented (on
docs/cli.md, or the page of that command's subsystem), every command has its line in README's
summary, the quick start is exactly the two make commands, every exit code is in docs/cli.md,
and README links every page of docs/ (and no page that is not there)."""

from __future__ import annotations

import re

import typer.main

from notebook_bcc.cli import app
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
#: where a command's options are documented: docs/cli.md, and for some its own page
OPTION_PAGES = {"ask": ("cli.md", "follow-ups.md"), "batch": ("cli.md", "batch.md")}


def _pages(*names: str) -> str:
    return "\n".join((DOCS / n).read_text(encoding="utf-8") for n in names)


def test_every_command_has_a_line_in_the_readme_summary():
    group = typer.main.get_command(app)
    summary = re.search(r"## The commands\s+```\s*\n(.*?)```", README, re.DOTALL)
    assert summary, "README has no command summary"
    lines = summary.group(1).splitlines()
    for name in group.commands:
        assert [ln for ln in lines if ln.startswith(f"bcc {name} ")], name


def test_every_option_of_every_command_is_documented():
    group = typer.main.get_command(app)
    missing = []
    for name, command in group.commands.items():
        text = _pages(*OPTION_PAGES.get(name, ("cli.md",)))
        assert f"bcc {name}" in text, name
        for param in command.params:
            if getattr(param, "param_type_name", "") == "option":
                for opt in param.opts:
                    if opt.startswith("--") and opt != "--help" and opt not in text:
                        missing.append(f"{name} {opt}")
    assert not missing, missing


def test_readme_is_the_cli_reference_in_brief():
    """DESIGN §2: README holds the CLI reference: it names every option of every command
    (docs/cli.md says what each does in full), and the prompts' size budget."""
    from notebook_bcc.contract.prompts import PROMPT_BUDGET_CHARS

    group = typer.main.get_command(app)
    missing = [
        f"{name} {opt}"
        for name, command in group.commands.items()
        for param in command.params
        if getattr(param, "param_type_name", "") == "option"
        for opt in param.opts
        if opt.startswith("--") and opt != "--help" and opt not in README
    ]
    assert not missing, missing
    assert f"**{PROMPT_BUDGET_CHARS:,} characters**" in README


def test_quick_start_is_two_commands():
    block = re.search(r"## Quick start\s+```\s*\n(.*?)```", README, re.DOTALL)
    assert block and block.group(1).split("\n")[:2] == ["make demo", "make test"]


def test_exit_codes_are_documented():
    text = _pages("cli.md")
    for code in ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "130", "143"):
        assert f"\n| {code} |" in text, code


def test_readme_links_every_docs_page_and_only_pages_that_exist():
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)(?:#[\w-]*)?\)", README))
    pages = {p.name for p in DOCS.glob("*.md")}
    assert linked == pages, (sorted(pages - linked), sorted(linked - pages))


def test_links_between_docs_pages_lead_to_a_page_and_heading_that_exist():
    def anchors(page: str) -> set[str]:
        heads = re.findall(r"^#+ (.+)$", (DOCS / page).read_text(encoding="utf-8"), re.M)
        return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads}

    bad = []
    sources = [(p.name, p.read_text(encoding="utf-8"), "") for p in DOCS.glob("*.md")]
    for name, text, prefix in [*sources, ("README.md", README, "docs/")]:
        for target, anchor in re.findall(rf"\]\({prefix}([\w.-]+\.md)?(?:#([\w-]+))?\)", text):
            page = target or name
            if not (DOCS / page).is_file() or (anchor and anchor not in anchors(page)):
                bad.append(f"{name}: {target}#{anchor}")
    assert not bad, bad
