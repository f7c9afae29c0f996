"""Secure by default, in Chromium: an agent id stays with the browser that registered it, and pages of
other sites cannot open the router."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import READY_TIMEOUT_MS, wait_until
from tests.conftest import free_port, serving

READY = "document.documentElement?.dataset.a2a === 'ready'"


def test_a_reloaded_page_reclaims_its_own_agent_id(mesh, alice):
    page = mesh.open_agent("reloader", "executor")
    page.reload()
    wait_until(page, READY, timeout=READY_TIMEOUT_MS)
    assert mesh.call(page, "a2a_status", {})["structuredContent"]["state"] == "connected"
    marker = str(uuid.uuid4())
    sent = mesh.call(
        alice,
        "a2a_send_message",
        {"target_agent_id": page.agent_id, "message_type": "notification", "payload": {"marker": marker}},
    )
    assert sent["structuredContent"]["delivered"] is True
    page.close()


def test_another_browser_cannot_take_an_offline_agents_id(mesh, chromium):
    page = mesh.open_agent("owned", "executor")
    agent_id = page.agent_id
    page.close()
    stranger = chromium.new_context()  # another profile: it never had the agent's credential
    try:
        intruder = stranger.new_page()
        intruder.goto(f"{mesh.base_url}/?agent_id={agent_id}&agent_type=executor")
        wait_until(intruder, "document.getElementById('state')?.dataset.state === 'refused'", timeout=30_000)
        assert "4001" in intruder.evaluate("document.getElementById('state-detail').textContent")
    finally:
        stranger.close()


class _OtherSite(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>another site</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def other_site() -> Iterator[str]:
    """A page of another origin (another port on this machine)."""
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _OtherSite)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_page_of_another_site_cannot_open_the_router(mesh, server_url, other_site):
    page = mesh.context.new_page()
    try:
        page.goto(f"{other_site}/")
        outcome = page.evaluate(
            """(url) => new Promise((resolve) => {
                const socket = new WebSocket(url);
                socket.onopen = () => resolve("open");
                socket.onclose = (event) => resolve(`closed ${event.code}`);
            })""",
            server_url.replace("http", "ws") + "/a2a",
        )
        assert outcome == "closed 1006"  # the upgrade was answered 403
    finally:
        page.close()


@pytest.fixture(scope="module")
def signing_server() -> Iterator[str]:
    with serving("--require-signatures") as url:
        yield url


def test_page_agents_sign_what_they_send_and_get_envelopes_signed_for_them(mesh, signing_server):
    def open_on_signing_router(name: str) -> Page:
        page = mesh.context.new_page()
        page.goto(f"{signing_server}/?agent_id={name}-{mesh.mode}&agent_type=executor&mode=main")
        wait_until(page, READY, timeout=READY_TIMEOUT_MS)
        return page

    alice, bob = open_on_signing_router("signed-alice"), open_on_signing_router("signed-bob")
    try:
        sent = mesh.call(
            alice,
            "a2a_send_message",
            {"target_agent_id": f"signed-bob-{mesh.mode}", "message_type": "notification", "payload": {"n": 1}},
        )
        assert sent["structuredContent"]["delivered"] is True  # the router requires signatures: alice signed
        (message,) = mesh.call(bob, "a2a_inbox", {"wait_seconds": 5})["structuredContent"]["messages"]
        assert len(message["signature"]) == 64
        # bob's runtime checks it with its own key, as any recipient can (protocol.signature_valid)
        check = f"""
import js
from webmcp_a2a.protocol import ReceivedMessage, signature_valid
message = ReceivedMessage.model_validate_json({json.dumps(json.dumps(message))})
signature_valid(message, js.window.a2a.agent.agent.core.signing_key)
"""
        checked = bob.evaluate("(code) => window.a2a.pyodide.runPython(code)", check)
        assert checked is True
    finally:
        alice.close()
        bob.close()
