"""Remake docs/screenshot.png and docs/mesh-view.png: alice sends bob a task through the tool
console's form, bob reads his inbox, a broadcast goes out, and the mesh view watches it all.

.venv/bin/python docs/screenshot.py   (with `make run` serving on 127.0.0.1:8765)
"""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import CHROMIUM, QUIET_NETWORK

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8765"
ARGS = [*QUIET_NETWORK, "--enable-features=WebMCP"]


def call_from_form(page, tool: str, fields: dict[str, str]) -> None:
    page.select_option("#tool-name", tool)
    for name, value in fields.items():
        control = page.locator(f"[data-field='{name}']")
        if control.evaluate("element => element.tagName") == "SELECT":
            control.select_option(label=value)
        else:
            control.fill(value)
    page.click("#call-tool")
    # Polled with evaluate: the page's CSP refuses the eval behind wait_for_function.
    while page.evaluate("document.querySelector('#tool-result').textContent.startsWith('…')"):
        page.wait_for_timeout(50)


with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    view = browser.new_page(viewport={"width": 1400, "height": 900})
    view.goto(f"{BASE}/web/watch.html")
    view.wait_for_selector("html[data-watch='ready']", state="attached", timeout=60_000)
    alice = browser.new_page(viewport={"width": 1200, "height": 1800})
    bob = browser.new_page(viewport={"width": 1200, "height": 1800})
    carol = browser.new_page(viewport={"width": 1200, "height": 900})
    for page, query in (
        (bob, "agent_id=bob&agent_type=monitor"),
        (carol, "agent_id=carol&agent_type=monitor&mode=main"),
        (alice, "agent_id=alice&agent_type=executor"),
    ):
        page.goto(f"{BASE}/?{query}")
        page.wait_for_selector("html[data-a2a='ready']", state="attached", timeout=60_000)
    call_from_form(
        alice,
        "a2a_send_message",
        {
            "target_agent_id": "bob",
            "message_type": "task_request",
            "payload": '{"task": "scan sector 7"}',
            "correlation_id": "job-1",
        },
    )
    call_from_form(bob, "a2a_inbox", {"wait_seconds": "2"})
    bob.screenshot(path=str(Path(__file__).with_name("screenshot.png")), full_page=True)
    call_from_form(carol, "a2a_subscribe", {"event_type": "region_change"})
    call_from_form(alice, "a2a_broadcast", {"agent_type": "monitor", "payload": '{"status": "all clear?"}'})
    view.wait_for_timeout(300)  # a message in flight
    view.screenshot(path=str(Path(__file__).with_name("mesh-view.png")))
    browser.close()
