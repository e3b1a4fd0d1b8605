"""The XML contract (DESIGN.md §5): payloads.parse_payload and friends."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from notebook_bcc.contract.payloads import (
    KINDS,
    MAX_REPLY_CHARS,
    Action,
    ActionsPayload,
    ArtifactClaim,
    BehaviorPayload,
    ReflectionPayload,
    StageReflectionPayload,
    StagesPayload,
    StepsPayload,
    VariableSpec,
    element_for_log,
    parse_payload,
    resource_dir,
)
from notebook_bcc.errors import PayloadError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "payloads"


def fixture(kind: str) -> str:
    return (FIXTURES / f"{kind}.xml").read_text(encoding="utf-8")


def reject(text: str, kind: str | None = None, **kwargs: int) -> PayloadError:
    with pytest.raises(PayloadError) as info:
        parse_payload(text, kind, **kwargs)
    return info.value


REFLECTION = """<reflection current_step_is_complete="{flag}">
  <evaluation>
    <goal_achievement><status>achieved</status><reasoning>{reasoning}</reasoning></goal_achievement>
  </evaluation>
  <decision><next_state>{state}</next_state><reasoning>done</reasoning></decision>
</reflection>"""

STAGE_REFLECTION = """<stage_reflection stage_is_complete="{flag}">
  <step_evaluation><step_id>s1</step_id><completion_status>complete</completion_status></step_evaluation>
  <decision><next_state>{state}</next_state><reasoning>r</reasoning></decision>
  <variable_management/>
  <stage_experience>Keep the raw frame.</stage_experience>
</stage_reflection>"""


# --- the six DESIGN examples -------------------------------------------------------------------


def test_every_kind_has_a_schema_and_a_valid_fixture() -> None:
    for kind in KINDS:
        assert (resource_dir() / "schemas" / f"{kind}.rng").is_file()
        parsed = parse_payload(fixture(kind), kind)
        assert parsed.kind == kind
        assert parsed.hardened is False
        assert etree.fromstring(parsed.xml).tag == kind


def test_stages_example() -> None:
    value = parse_payload(fixture("stages")).value
    assert isinstance(value, StagesPayload)
    assert value.title == "Penguin species classification"
    assert value.focus == "accuracy above 0.9; explain every dropped row"
    # the second stage sits inside <remaining>; document order is kept
    assert [s.id for s in value.stages] == ["data_existence_establishment", "species_modelling"]
    first, second = value.stages
    assert first.title == "Data Existence Establishment"
    assert first.goal.startswith("Load and check the data.")
    assert first.verified_artifacts == (
        VariableSpec("raw_dataset", "DataFrame loaded from assets"),
    )
    assert first.required_variables == (VariableSpec("user_submit_files", "input paths"),)
    assert [v.name for v in second.verified_artifacts] == ["cv_scores", "model"]
    assert second.required_variables == ()


def test_steps_example() -> None:
    value = parse_payload(fixture("steps"), "steps").value
    assert isinstance(value, StepsPayload)
    assert [s.id for s in value.steps] == ["data_loading", "integrity_check"]
    step = value.steps[0]
    assert step.title == "Data Loading"
    assert step.pcs == (
        ("predictability", "same file always gives the same frame"),
        ("computability", "fits in memory"),
        ("stability", ""),
    )
    assert value.steps[1].pcs == ()
    assert value.focus == "keep raw_dataset untouched"


def test_behavior_example() -> None:
    value = parse_payload(fixture("behavior"), "behavior").value
    assert value == BehaviorPayload(
        id="data_loading_b1",
        step_id="data_loading",
        agent="Explore-Agent",
        task="Load assets/penguins.csv into raw_dataset and report its shape.",
        inputs=(VariableSpec("user_submit_files", '["assets/penguins.csv"]'),),
        outputs=(VariableSpec("raw_dataset", "DataFrame"),),
        acceptance=("len(raw_dataset) > 0", "raw_dataset.shape[1] == 8"),
    )


def test_actions_example_keeps_order_and_code_indentation() -> None:
    value = parse_payload(fixture("actions"), "actions").value
    assert isinstance(value, ActionsPayload)
    assert [a.kind for a in value.actions] == ["title", "text", "code"]
    assert value.actions[0] == Action("title", "Penguin species classification")
    assert value.actions[2].content == (
        "import pandas as pd\n"
        "\n"
        "raw_dataset = pd.read_csv(user_submit_files[0])\n"
        "if len(raw_dataset) > 0 and raw_dataset.shape[1] < 100:\n"
        "    print(raw_dataset.shape)"
    )


def test_reflection_example() -> None:
    value = parse_payload(fixture("reflection"), "reflection").value
    assert isinstance(value, ReflectionPayload)
    assert value.step_complete is True
    assert value.next_state == "STEP_COMPLETED"
    assert value.goal_status == "achieved"
    assert value.goal_reasoning == "The frame is loaded with all rows."
    assert value.decision_reasoning == "All artifacts exist."
    assert value.artifacts == (ArtifactClaim("raw_dataset", "complete", "344 rows x 8 columns"),)
    assert value.criteria == (("passed", "len(raw_dataset) > 0"),)
    assert value.variables_produced == (VariableSpec("raw_dataset", "344 rows x 8 cols"),)
    assert value.recommendations == "Check missing values in sex."
    assert value.comment == "The data has **344** penguins of three species."


def test_stage_reflection_example() -> None:
    value = parse_payload(fixture("stage_reflection"), "stage_reflection").value
    assert isinstance(value, StageReflectionPayload)
    assert value.stage_complete is False
    assert value.next_state == "STEP_RUNNING"
    assert value.step_id == "data_loading"
    assert value.completion_status == "complete"
    assert value.reasoning == "Integrity is not checked yet."
    assert value.findings == (("high", "11 rows lack sex"), ("low", "ids are unique"))
    assert value.goal_status == "partial"
    assert value.next_focus == "integrity_check"
    assert value.retain == (
        VariableSpec("raw_dataset", "needed for cleaning", next_use="data_cleaning"),
    )
    assert value.deprecate == (
        VariableSpec("user_submit_files", "loaded already", replacement="raw_dataset", safe=True),
    )
    assert value.stage_experience is None


def test_stage_complete_with_experience() -> None:
    text = STAGE_REFLECTION.format(flag="TRUE", state="stage_completed")
    value = parse_payload(text, "stage_reflection").value
    assert isinstance(value, StageReflectionPayload)
    assert (value.stage_complete, value.next_state) == (True, "STAGE_COMPLETED")
    assert value.stage_experience == "Keep the raw frame."
    assert value.retain == value.deprecate == value.findings == ()


# --- extraction --------------------------------------------------------------------------------


def test_fenced_and_prose_wrapped_reply_is_accepted() -> None:
    reply = (
        "Sure! Here is the plan.\n\n```xml\n"
        + fixture("behavior")
        + "```\n\nLet me know if <task> needs changes."
    )
    parsed = parse_payload(reply)
    assert parsed.kind == "behavior"
    assert parsed.value == parse_payload(fixture("behavior")).value
    assert parsed.xml.startswith("<behavior ") and parsed.xml.endswith("</behavior>")
    assert "Sure" not in parsed.xml and "```" not in parsed.xml


def test_positions_refer_to_the_reply_as_written() -> None:
    reply = "Plan below.\n```xml\n<stages>\n  <stage id='a' title='A'>\n  </stage>\n</stages>\n```"
    err = reject(reply, "stages")
    assert (err.line, err.column) == (4, 3)
    assert "element <goal> missing in <stage id='a'>" in str(err)


def test_wrong_root_is_rejected() -> None:
    err = reject("Here:\n  <stage id='x' title='X'><goal>g</goal></stage>", "steps")
    assert err.message == "expected root <steps>, found <stage>"
    assert (err.line, err.column, err.kind) == (2, 3, "steps")


def test_no_root_at_all() -> None:
    assert "no payload root element found" in str(reject("I could not do it."))
    assert "found no XML element" in str(reject("nothing here", "actions"))


def test_unknown_kind() -> None:
    assert "unknown payload kind 'plan'" in str(reject("<plan/>", "plan"))


def test_kind_is_inferred_from_first_known_root() -> None:
    reply = "The <step_id> is below.\n" + fixture("stage_reflection")
    assert parse_payload(reply).kind == "stage_reflection"


def test_self_closing_root_without_actions() -> None:
    err = reject("ok: <actions/> done", "actions")
    assert "needs at least one" in err.message
    assert (err.line, err.column) == (1, 5)


# --- hardening ---------------------------------------------------------------------------------


def test_raw_lt_and_amp_in_code_are_hardened() -> None:
    code = "if a < b and c & d:\n    print(a &lt; b)  # &lt; stays literal"
    text = f"<actions>\n<add-code2run>\n{code}\n</add-code2run>\n</actions>"
    parsed = parse_payload(text, "actions")
    assert parsed.hardened is True
    assert parsed.value == ActionsPayload((Action("code", code),))


def test_code_with_cdata_terminator_round_trips() -> None:
    code = 'x = data[idx[0]]>0 < 1\nmarker = "]]>"'
    parsed = parse_payload(f"<actions><add-code2run>{code}</add-code2run></actions>")
    assert parsed.hardened is True
    assert parsed.value.actions[0].content == code  # type: ignore[union-attr]
    # the serialized form parses back to the same payload, and so does the log copy
    assert parse_payload(parsed.xml).value == parsed.value
    assert "".join(element_for_log(parsed).find("add-code2run").itertext()) == code
    # a model that splits the CDATA itself is read the same way, without hardening
    split = code.replace("]]>", "]]]]><![CDATA[>")
    again = parse_payload(f"<actions><add-code2run><![CDATA[{split}]]></add-code2run></actions>")
    assert again.hardened is False and again.value == parsed.value


def test_markup_inside_code_is_kept_verbatim() -> None:
    code = 'display(HTML("<b>a &amp; b</b> > c"))'
    parsed = parse_payload(f"<actions><add-code2run>{code}</add-code2run></actions>")
    assert parsed.value.actions[0].content == code  # type: ignore[union-attr]


def test_valueless_attribute_is_hardened() -> None:
    text = REFLECTION.format(flag="", state="STEP_COMPLETED", reasoning="x").replace('="">', ">", 1)
    assert text.startswith("<reflection current_step_is_complete>")
    parsed = parse_payload(text, "reflection")
    assert parsed.hardened is True
    assert parsed.value.step_complete is True  # type: ignore[union-attr]
    assert 'current_step_is_complete="true"' in parsed.xml


def test_raw_lt_in_reasoning_is_hardened() -> None:
    text = REFLECTION.format(flag="true", state="STEP_COMPLETED", reasoning="p < 0.05 & n > 30")
    parsed = parse_payload(text, "reflection")
    assert parsed.hardened is True
    assert parsed.value.goal_reasoning == "p < 0.05 & n > 30"  # type: ignore[union-attr]


def test_unfixable_syntax_reports_the_original_error() -> None:
    err = reject("<actions>\n  <add-text>hello</add-txt>\n</actions>", "actions")
    assert (err.line, err.column) == (2, 28)  # libxml2 points just past the bad tag
    assert "Opening and ending tag mismatch" in err.message
    assert err.message.count("line") == 1  # lxml's own "line 2, column 26" suffix is dropped


# --- security and size -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n<actions><add-text>&e;</add-text></actions>',
        '<actions><!ENTITY e SYSTEM "file:///etc/passwd"><add-text>x</add-text></actions>',
        "<!doctype html><actions><add-text>x</add-text></actions>",
    ],
)
def test_doctype_and_entity_declarations_are_refused(text: str) -> None:
    err = reject(text, "actions")
    assert getattr(err, "security", False) is True
    assert "DOCTYPE/ENTITY declarations are refused" in err.message
    assert "root:" not in str(err) and "passwd" not in str(err)
    assert err.line == 1


def test_oversized_reply_is_refused_before_parsing() -> None:
    err = reject("<actions>" + "x" * 50 + "</actions>", "actions", max_chars=40)
    assert "more than the limit of 40" in err.message and err.line is None
    huge = "<!DOCTYPE x>" + " " * MAX_REPLY_CHARS  # the cap wins over everything else
    assert getattr(reject(huge), "security", False) is False


# --- schema and semantic checks ----------------------------------------------------------------


def test_missing_required_element_has_line_and_column() -> None:
    text = "<stages>\n  <stage id='a' title='A'>\n    <goal>g</goal>\n  </stage>\n</stages>"
    err = reject(text, "stages")
    assert err.message == "element <verified_artifacts> missing in <stage id='a'>"
    assert (err.line, err.column, err.kind) == (2, 3, "stages")


def test_missing_nested_element_and_attribute() -> None:
    text = REFLECTION.format(flag="false", state="STEP_RUNNING", reasoning="x").replace(
        "<reasoning>x</reasoning>", ""
    )
    err = reject(text, "reflection")
    assert err.message == "element <reasoning> missing in <goal_achievement>"
    assert (err.line, err.column) == (3, 5)
    text = fixture("reflection").replace(' status="complete"', "")
    err = reject(text, "reflection")
    assert err.message == "attribute 'status' missing on <artifact name='raw_dataset'>"
    assert err.line == 3


def test_repeated_and_stray_content_is_explained() -> None:
    text = fixture("behavior").replace("<agent>", "<task>again</task><agent>")
    assert "element <task> appears more than once in <behavior" in str(reject(text))
    text = fixture("behavior").replace(
        '<variable name="user_submit_files">["assets/penguins.csv"]</variable>', "user_submit_files"
    )
    err = reject(text)
    assert "<inputs> holds stray text 'user_submit_files'" in err.message
    assert "put values inside <variable>" in err.message and err.line == 4


@pytest.mark.parametrize("bad", ["2fast", "raw-data", "class", ""])
def test_non_identifier_variable_name_is_rejected(bad: str) -> None:
    text = fixture("stages").replace('name="cv_scores"', f'name="{bad}"')
    err = reject(text, "stages")
    assert f"name {bad!r} of <variable> is not a Python identifier" in err.message
    assert err.line == 12


def test_non_identifier_artifact_in_behavior_outputs() -> None:
    text = fixture("behavior").replace(
        '<artifact name="raw_dataset">', '<artifact name="raw data">'
    )
    err = reject(text, "behavior")
    assert "is not a Python identifier" in err.message and err.line == 5


def test_duplicate_stage_ids_are_rejected() -> None:
    text = fixture("stages").replace('id="species_modelling"', 'id="data_existence_establishment"')
    err = reject(text, "stages")
    assert "duplicate stage id 'data_existence_establishment'" in err.message
    assert (err.line, err.column) == (9, 5)


@pytest.mark.parametrize("bad", ["DataLoading", "data-loading", "1st"])
def test_non_snake_case_ids_are_rejected(bad: str) -> None:
    err = reject(fixture("steps").replace('id="integrity_check"', f'id="{bad}"'))
    assert f"id {bad!r} of <step> is not snake_case" in err.message and err.line == 13
    err = reject(fixture("behavior").replace('id="data_loading_b1"', f'id="{bad}"'))
    assert "is not snake_case" in err.message and err.line == 1


def test_reflection_flag_must_agree_with_next_state() -> None:
    err = reject(REFLECTION.format(flag="true", state="STEP_RUNNING", reasoning="x"))
    assert 'current_step_is_complete="true"' in err.message
    assert "STEP_RUNNING" in err.message and err.line == 1
    err = reject(REFLECTION.format(flag="false", state="STEP_COMPLETED", reasoning="x"))
    assert 'current_step_is_complete="false"' in err.message and "STEP_COMPLETED" in err.message


def test_stage_reflection_flag_must_agree_with_next_state() -> None:
    err = reject(STAGE_REFLECTION.format(flag="false", state="STAGE_COMPLETED"))
    assert 'stage_is_complete="false"' in err.message and "STAGE_COMPLETED" in err.message


def test_status_values_and_booleans_are_checked() -> None:
    err = reject(REFLECTION.format(flag="yes", state="STEP_COMPLETED", reasoning="x"))
    assert 'must be "true" or "false"' in err.message
    err = reject(REFLECTION.format(flag="true", state="DONE", reasoning="x"))
    assert "must be one of STEP_COMPLETED, STEP_RUNNING; found 'DONE'" in err.message
    assert err.line == 5
    err = reject(fixture("stage_reflection").replace('priority="high"', 'priority="urgent"'))
    assert "must be one of high, medium, low" in err.message


def test_unknown_extra_elements_and_attributes_are_tolerated() -> None:
    text = """<stages version="2">
  <note>planner thoughts <b>ignored</b></note>
  <stage id="load" title="Load" color="red">
    <goal>Load <em>everything</em></goal>
    <rationale><variable>not a declared variable</variable></rationale>
    <verified_artifacts><variable name="df" dtype="DataFrame">frame</variable><hint/></verified_artifacts>
  </stage>
  <remaining><why>later</why></remaining>
</stages>"""
    value = parse_payload(text, "stages").value
    assert isinstance(value, StagesPayload)
    assert [(s.id, s.goal) for s in value.stages] == [("load", "Load everything")]
    assert value.stages[0].verified_artifacts == (VariableSpec("df", "frame"),)


def test_actions_need_at_least_one_action() -> None:
    err = reject("<actions>\n  <note>nothing to do</note>\n</actions>", "actions")
    assert "needs at least one" in err.message and err.line == 1
    err = reject("<actions><add-code2run>\n   \n</add-code2run></actions>", "actions")
    assert err.message == "<add-code2run> is empty"


def test_element_for_log_is_a_fresh_copy() -> None:
    parsed = parse_payload(fixture("reflection"))
    first, second = element_for_log(parsed), element_for_log(parsed)
    assert first is not second and first.tag == "reflection"
    first.set("current_step_is_complete", "false")
    assert second.get("current_step_is_complete") == "true"


def test_a_payload_file_parses() -> None:
    text = (FIXTURES / "steps.xml").read_text(encoding="utf-8")
    assert parse_payload(text, "steps").kind == "steps"


ALTERNATIVES = """<alternatives step_id="fit">
  <choose better="lower"><![CDATA[rmse_by_model[best] if best in rmse_by_model else 1e9]]></choose>
  <behavior id="fit_ridge" step_id="fit"><agent>Model-Agent</agent><task>Ridge.</task>
    <outputs><artifact name="rmse_by_model">dict</artifact></outputs></behavior>
  <behavior id="fit_gbm" step_id="fit"><agent>Model-Agent</agent><task>Boosting.</task>
    <outputs><artifact name="rmse_by_model">dict</artifact></outputs>
    <acceptance><criterion>len(rmse_by_model) > 0</criterion></acceptance></behavior>
</alternatives>"""


def test_alternatives_are_read_as_behaviors_and_a_choice() -> None:
    parsed = parse_payload(ALTERNATIVES, ("alternatives", "behavior"))
    p = parsed.value
    assert parsed.kind == "alternatives"
    assert [b.id for b in p.behaviors] == ["fit_ridge", "fit_gbm"]
    assert p.behaviors[1].acceptance == ("len(rmse_by_model) > 0",)
    assert (p.step_id, p.better) == ("fit", "lower")
    assert p.choose == "rmse_by_model[best] if best in rmse_by_model else 1e9"
    # one behavior answers the same question as ever
    one = parse_payload(fixture("behavior"), ("alternatives", "behavior"))
    assert one.kind == "behavior"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('id="fit_gbm"', 'id="fit_ridge"'), "used twice"),
        (('better="lower"', 'better="smaller"'), '"higher" or "lower"'),
        (("<task>Boosting.</task>", ""), "element <task> missing"),
        (('id="fit_gbm" step_id="fit"', 'id="fit_gbm" step_id="other"'), "not of step"),
    ],
)
def test_a_broken_fork_is_explained(change: tuple[str, str], message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        parse_payload(ALTERNATIVES.replace(*change), "alternatives")


def test_a_fork_of_one_is_refused() -> None:
    start = ALTERNATIVES.index('  <behavior id="fit_gbm"')
    single = ALTERNATIVES[:start] + "</alternatives>"
    with pytest.raises(PayloadError, match="2 or more"):
        parse_payload(single, "alternatives")
