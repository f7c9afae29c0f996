"""Browser fixtures: one real server process, one Chromium per WebMCP mode, shared pages.

Every test runs twice: ``native`` (Chromium's own ``document.modelContext``, tools
called through Playwright's ``page.webmcp``) and ``polyfill`` (no WebMCP flag: the
page's polyfill, tools called through ``navigator.modelContext`` from page script).
Starting Pyodide costs seconds, so the agents' pages are shared by a mode's tests;
tests keep out of each other's way with unique payloads and correlation ids.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Browser, BrowserContext, Frame, Page, Playwright
from playwright.sync_api import Error as PlaywrightError

from bench.common import CHROMIUM, QUIET_NETWORK
from tests.conftest import free_port, serving

LOCAL_HOSTS = {"127.0.0.1", "localhost"}
READY_TIMEOUT_MS = 60_000

_page_ids = itertools.count()


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """The server every browser test shares."""
    with serving("--ack-timeout", "5") as url:
        yield url


def wait_until(target: Page | Frame, expression: str, arg: Any = None, timeout: float = 30_000) -> Any:
    """Poll ``expression`` (a JavaScript expression, or a function of ``arg``) until it is truthy.

    Playwright's own ``wait_for_function`` evaluates its predicate with ``eval`` inside the page,
    which the page's Content-Security-Policy forbids (no ``'unsafe-eval'``); ``evaluate`` goes
    through the DevTools protocol, which CSP does not govern.
    """
    deadline = time.monotonic() + timeout / 1000
    while not (value := _evaluate_through_navigation(target, expression, arg)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not true within {timeout / 1000:g}s: {expression}")
        time.sleep(0.05)
    return value


def _evaluate_through_navigation(target: Page | Frame, expression: str, arg: Any) -> Any:
    """``evaluate``, or None while the target is between two documents (a reload, a navigation)."""
    try:
        return target.evaluate(expression, arg)
    except PlaywrightError as error:
        if "Execution context was destroyed" in error.message:
            return None
        raise


@dataclass
class Mesh:
    """A mode's browser context, its pages, and every off-machine request it tried."""

    mode: str
    base_url: str
    context: BrowserContext
    foreign_requests: list[str] = field(default_factory=list)
    pages: dict[str, Page] = field(default_factory=dict)

    @property
    def native(self) -> bool:
        return self.mode == "native"

    def open_agent(self, name: str, agent_type: str, **params: str) -> Page:
        """Open the test page as a new agent ``name-MODE-N`` and wait until it is ready."""
        return self.reopen_agent(f"{name}-{self.mode}-{next(_page_ids)}", agent_type, **params)

    def reopen_agent(self, agent_id: str, agent_type: str, **params: str) -> Page:
        """Open the test page as agent ``agent_id`` and wait until it is ready."""
        query = "&".join(
            f"{key}={value}" for key, value in {"agent_id": agent_id, "agent_type": agent_type, **params}.items()
        )
        page = self.context.new_page()
        page.agent_id = agent_id  # type: ignore[attr-defined]  # the tests' own label on the page
        page.goto(f"{self.base_url}/?{query}")
        wait_until(page, "document.documentElement?.dataset.a2a === 'ready'", timeout=READY_TIMEOUT_MS)
        self.pages[agent_id] = page
        return page

    def call(self, page: Page, tool: str, arguments: dict) -> dict:
        """Call a WebMCP tool as an AI agent would in this mode."""
        if self.native:
            return page.webmcp.call_tool(tool, arguments)
        return page.evaluate("([tool, args]) => navigator.modelContext.callTool(tool, args)", [tool, arguments])


@pytest.fixture(scope="session", params=["native", "polyfill"])
def mode(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def chromium(playwright: Playwright, mode: str) -> Iterator[Browser]:
    args = QUIET_NETWORK + (["--enable-features=WebMCP"] if mode == "native" else [])
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
    yield browser
    browser.close()


@contextlib.contextmanager
def new_mesh(chromium: Browser, mode: str, base_url: str, **context_options: Any) -> Iterator[Mesh]:
    """A fresh browser context whose requests to other hosts than loopback are refused and noted."""
    context = chromium.new_context(**context_options)
    mesh = Mesh(mode, base_url, context)

    def only_local(route):
        if urlparse(route.request.url).hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            mesh.foreign_requests.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    try:
        yield mesh
    finally:
        context.close()


@pytest.fixture(scope="session")
def mesh(chromium: Browser, mode: str, server_url: str) -> Iterator[Mesh]:
    with new_mesh(chromium, mode, server_url) as mesh:
        yield mesh


@pytest.fixture(autouse=True)
def nothing_left_the_machine(request):
    """Every browser test: no request went to a host other than 127.0.0.1 / localhost."""
    yield
    if "mesh" in request.fixturenames:
        assert request.getfixturevalue("mesh").foreign_requests == []


@pytest.fixture(scope="session")
def alice(mesh: Mesh) -> Page:
    return mesh.open_agent("alice", "executor")


@pytest.fixture(scope="session")
def bob(mesh: Mesh) -> Page:
    # On the page's main thread (the default is a worker): its tests reach into its Pyodide.
    return mesh.open_agent("bob", "monitor", mode="main")


@pytest.fixture(scope="session")
def carol(mesh: Mesh) -> Page:
    return mesh.open_agent("carol", "analyzer")


class RouterGate:
    """A door in front of the router's port, for agents whose WebSocket should fail and come back.

    Closed, a connection to :attr:`ws_url` is refused (nothing listens); open, it is passed
    through to the router byte for byte. Closing also cuts the connections that went through.
    Unlike ``page.route_web_socket``, it works for workers' and iframes' sockets alike.
    """

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self.target_port = target_port
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/a2a"

    def open(self) -> None:
        if self._listener is None:
            self._listener = socket.create_server(("127.0.0.1", self.port))
            threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def close(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept(); close() alone does not
            listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                return  # closed
            with self._lock:
                if self._listener is not listener:  # closed meanwhile
                    client.close()
                    upstream.close()
                    return
                self._sockets |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture(scope="session")
def router_gate(mode: str, server_url: str) -> Iterator[RouterGate]:
    """One closed gate per WebMCP mode (tests open it, and close it again when done)."""
    port = urlparse(server_url).port
    assert port is not None
    gate = RouterGate(port)
    yield gate
    gate.close()
