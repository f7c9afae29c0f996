"""The test page's tool console (web/js/console.js): forms made from the tools' JSON Schemas, results
as structured JSON and as the text an AI agent reads, and a history of calls to replay."""

from __future__ import annotations

import json
import uuid

from tests.browser.conftest import wait_until
from tests.browser.test_page_agents import inbox_until


def choose(page, tool: str) -> None:
    page.check("#tool-modes input[value=form]")
    page.select_option("#tool-name", tool)


def options(page, field: str) -> list[str]:
    return page.eval_on_selector(f"[data-field='{field}']", "select => [...select.options].map(o => o.textContent)")


def call_and_wait(page, calls_before: int) -> None:
    page.click("#call-tool")
    wait_until(page, "(n) => document.querySelectorAll('#tool-history li').length > n", calls_before)
    wait_until(page, "!document.querySelector('#tool-result').textContent.startsWith('…')")


def history_length(page) -> int:
    return page.evaluate("document.querySelectorAll('#tool-history li').length")


def test_a_tools_form_is_made_from_its_schema(alice):
    choose(alice, "a2a_send_message")
    assert alice.get_attribute("[data-field='target_agent_id']", "type") == "text"
    assert options(alice, "message_type") == ["task_request", "task_response", "notification", "data_share"]
    priority = alice.locator("[data-field='priority']")
    assert (priority.get_attribute("type"), priority.get_attribute("min"), priority.get_attribute("max")) == (
        "number",
        "1",
        "10",
    )
    assert priority.input_value() == "5"  # the schema's default
    assert alice.get_attribute("[data-field='payload']", "data-json") == "true"  # a free-form object: JSON
    assert alice.get_attribute("[data-field='ttl_seconds']", "type") == "number"  # optional: anyOf number, null


def test_a_nested_object_becomes_a_fieldset_sent_only_when_included(alice):
    choose(alice, "a2a_publish")
    assert options(alice, "event_type") == ["(not set)", "region_change", "task_available", "knowledge_update"]
    assert alice.locator("fieldset:has([data-include='region']) [data-field^='region.']").count() == 4
    alice.select_option("[data-field='event_type']", label="region_change")
    alice.fill("[data-field='payload']", '{"door": "open"}')
    alice.uncheck("[data-include='region']")  # the example fills one in
    without = alice.evaluate("() => window.a2a.console.arguments()")
    alice.check("[data-include='region']")
    for name, value in {"x": "1", "y": "2", "width": "3", "height": "4"}.items():
        alice.fill(f"[data-field='region.{name}']", value)
    included = alice.evaluate("() => window.a2a.console.arguments()")
    assert without == {"event_type": "region_change", "payload": {"door": "open"}}
    assert included["region"] == {"x": 1, "y": 2, "width": 3, "height": 4}


def test_a_call_from_the_form_shows_the_structured_result_and_what_an_ai_reads(mesh, alice, bob):
    choose(alice, "a2a_send_message")
    alice.fill("[data-field='target_agent_id']", bob.agent_id)
    alice.fill("[data-field='payload']", json.dumps({"from": "form"}))
    call_and_wait(alice, history_length(alice))
    structured = json.loads(alice.text_content("#tool-result"))
    assert structured["delivered"] is True
    assert alice.text_content("#tool-text").startswith("Delivered")
    assert alice.text_content("#tool-history li:first-child code") == "a2a_send_message"
    wait_until(alice, "document.querySelector('#log').textContent.includes('tool a2a_send_message: Delivered')")


def test_a_bad_field_in_the_form_gives_the_tools_error_naming_it(alice):
    choose(alice, "a2a_send_message")
    alice.fill("[data-field='target_agent_id']", "has spaces in it")
    call_and_wait(alice, history_length(alice))
    assert "target_agent_id" in alice.text_content("#tool-text")
    assert "is-error" in alice.get_attribute("#tool-result", "class")


def test_a_call_in_the_history_is_replayed(mesh, alice, bob):
    marker = str(uuid.uuid4())
    choose(alice, "a2a_send_message")
    alice.fill("[data-field='target_agent_id']", bob.agent_id)
    alice.fill("[data-field='payload']", json.dumps({"marker": marker}))
    call_and_wait(alice, history_length(alice))
    before = history_length(alice)
    alice.click("#tool-history li:first-child button[data-replay]")
    wait_until(alice, "(n) => document.querySelectorAll('#tool-history li').length > n", before)
    received = inbox_until(mesh, bob, lambda m: m["payload"].get("marker") == marker)
    if len(received) < 2:
        received += inbox_until(mesh, bob, lambda m: m["payload"].get("marker") == marker)
    assert len(received) == 2


def test_json_mode_calls_with_the_arguments_as_written(alice, bob):
    choose(alice, "a2a_send_message")
    alice.fill("[data-field='target_agent_id']", bob.agent_id)
    alice.check("#tool-modes input[value=json]")
    written = json.loads(alice.input_value("#tool-args"))
    assert written["target_agent_id"] == bob.agent_id  # the form's arguments, as JSON
    written["payload"] = {"via": "json"}
    alice.fill("#tool-args", json.dumps(written))
    call_and_wait(alice, history_length(alice))
    assert json.loads(alice.text_content("#tool-result"))["delivered"] is True
    alice.fill("#tool-args", "{not json")
    alice.click("#call-tool")
    assert "The arguments are not JSON" in alice.text_content("#tool-result")
