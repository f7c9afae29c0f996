"""Page agents users write (examples/page_agents/, ``?agent=/page-agents/NAME.py``): their own tools,
handlers, packages installed with micropip from the server's wheels, and requests over pyodide-http."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.browser.conftest import READY_TIMEOUT_MS, wait_until
from tests.browser.test_page_agents import inbox_until, send

_ids = itertools.count()


@pytest.fixture(scope="module")
def greeter(mesh):
    page = mesh.open_agent("greeter", "executor", agent="/page-agents/greeter.py")
    yield page
    page.close()


@pytest.fixture(scope="module")
def watcher(mesh):
    page = mesh.open_agent("watcher", "monitor", agent="/page-agents/router_watch.py")
    yield page
    page.close()


def test_a_page_agent_registers_its_own_tool_with_its_models_schema(mesh, greeter):
    tools = greeter.evaluate("navigator.modelContext.listTools()")
    (greet,) = [tool for tool in tools if tool["name"] == "greet"]
    assert set(greet["inputSchema"]["properties"]) == {"name", "excited"}
    assert greet["inputSchema"]["required"] == ["name"]
    assert greet["description"] == "Make a greeting for someone (this page agent's own tool)."
    assert {"a2a_send_message", "a2a_inbox"} <= {tool["name"] for tool in tools}


def test_a_page_agents_tool_answers_with_its_result(mesh, greeter):
    result = mesh.call(greeter, "greet", {"name": "Ada", "excited": True})
    assert not result.get("isError"), result
    assert result["structuredContent"] == {"text": "Hello, Ada!"}


def test_a_bad_argument_to_a_page_agents_tool_is_named(mesh, greeter):
    result = mesh.call(greeter, "greet", {"excited": True})
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["field"] == "name"


def test_a_page_agents_message_handler_answers_the_sender(mesh, greeter, alice):
    sent = send(mesh, alice, greeter.agent_id, payload={"name": "Alice"})
    assert sent["structuredContent"]["delivered"] is True, sent
    message_id = sent["structuredContent"]["message_id"]
    (answer,) = inbox_until(mesh, alice, lambda m: m["payload"].get("in_reply_to") == message_id)
    assert answer["from_agent"] == greeter.agent_id
    assert answer["payload"]["greeting"] == "Hello, Alice."


def test_a_page_agent_answers_an_a2a_task_with_its_task_handler(mesh, greeter):
    command = Path(sys.executable).parent / "webmcp-a2a"
    url = f"{mesh.base_url}/agents/{greeter.agent_id}"
    run = subprocess.run([str(command), "call", url, "Grace"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run
    assert "Hello, Grace!" in run.stdout


def test_a_page_agent_gets_the_packages_it_requires_and_uses_requests(mesh, watcher):
    result = mesh.call(watcher, "router_health", {})
    assert not result.get("isError"), result
    answer = result["structuredContent"]
    assert answer["status_code"] == 200
    assert answer["health"]["status"] == "ok"
    assert answer["requests"] == "2.34.2"  # the pinned wheel, installed by micropip in the page


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ('REQUIRES = ["no-such-package"]\n', "requires 'no-such-package', which this server does not host"),
        ("def broken(:\n", "is not valid Python"),
    ],
    ids=["package-not-hosted", "syntax-error"],
)
def test_a_page_agent_file_that_cannot_run_fails_the_start_up_saying_why(mesh, source, reason):
    page = mesh.context.new_page()
    # Matched on the path: the page's own URL names the file too (?agent=).
    page.route(
        lambda url: urlparse(url).path == "/page-agents/cannot-run.py",
        lambda route: route.fulfill(status=200, body=source),
    )
    page.goto(
        f"{mesh.base_url}/?agent_id=cannot-run-{mesh.mode}-{next(_ids)}&mode=main&agent=/page-agents/cannot-run.py"
    )
    try:
        wait_until(page, "document.getElementById('startup')?.dataset.phase === 'failed'", timeout=READY_TIMEOUT_MS)
        assert page.get_attribute("#startup", "data-failed-phase") == "agent"
        assert reason in page.text_content("#boot-phase")
    finally:
        page.close()
