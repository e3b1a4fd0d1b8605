"""`bcc validate` through the real CLI: exit 0 valid, 6 invalid, one line, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT, run_bcc

FIXTURES = sorted((ROOT / "tests" / "fixtures" / "payloads").glob("*.xml"))


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_design_examples_are_valid(path: Path):
    proc = run_bcc("validate", str(path), "--kind", path.stem)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(f"valid <{path.stem}>")


def _validate(tmp_path: Path, text: str, *args: str):
    f = tmp_path / "reply.txt"
    f.write_text(text)
    return run_bcc("validate", str(f), *args)


def test_fenced_prose_and_raw_lt_amp_are_accepted(tmp_path: Path):
    reply = (
        "Sure! Here are the actions:\n```xml\n<actions>\n  <add-text>Filter rows</add-text>\n"
        "  <add-code2run>small = df[(df.a < 3) & (df.b > 1)]</add-code2run>\n</actions>\n```\nDone."
    )
    proc = _validate(tmp_path, reply)
    assert proc.returncode == 0, proc.stderr
    assert "valid <actions> (after hardening)" in proc.stdout


def test_external_entity_is_refused_without_leaking(tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CANARY")
    reply = (
        f'<!DOCTYPE actions [<!ENTITY x SYSTEM "file://{secret}">]>\n'
        "<actions><add-text>&x;</add-text></actions>"
    )
    proc = _validate(tmp_path, reply)
    assert proc.returncode == 6
    assert "CANARY" not in proc.stdout + proc.stderr
    assert "DOCTYPE" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("text", "kind", "needle"),
    [
        (
            '<stages>\n  <stage id="a" title="A">\n    <verified_artifacts/>\n  </stage>\n</stages>',
            "stages",
            "goal",
        ),
        (
            '<steps>\n <step id="s" title="S">\n  <goal>g</goal>\n  <verified_artifacts>\n'
            '   <variable name="2bad">x</variable>\n  </verified_artifacts>\n </step>\n</steps>',
            "steps",
            "2bad",
        ),
        (
            '<reflection current_step_is_complete="true">\n <evaluation><goal_achievement>'
            "<status>achieved</status><reasoning>r</reasoning></goal_achievement></evaluation>\n"
            " <decision><next_state>STEP_RUNNING</next_state><reasoning>r</reasoning></decision>\n"
            "</reflection>",
            "reflection",
            "STEP_RUNNING",
        ),
    ],
    ids=["missing-element", "non-identifier", "flag-disagrees"],
)
def test_rejections_carry_line_and_column(tmp_path: Path, text: str, kind: str, needle: str):
    proc = _validate(tmp_path, text, "--kind", kind)
    assert proc.returncode == 6
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith("error: line ")
    assert "column" in line and needle in line


def test_help_does_not_import_litellm():
    proc = run_bcc("--help", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0
    assert "notebook_bcc" in proc.stderr  # the import profile is really there
    assert "litellm" not in proc.stderr
