"""Shared fixtures: real routers on real loopback sockets."""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette

from tests.certificates import PKI
from webmcp_a2a.router import RouterSettings
from webmcp_a2a.router.routing import Router
from webmcp_a2a.router.server import uvicorn_config

ROOT = Path(__file__).resolve().parent.parent
SDK_ECHO = ROOT / "bench" / "baselines" / "a2a_sdk_echo.py"  # the a2a-sdk alone: an in-process echo agent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class OnLoopback:
    """A router's URLs from its loopback ``port``."""

    port: int

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/a2a"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class RunningRouter(OnLoopback):
    """A router served by uvicorn on a loopback port, in a thread of its own."""

    def __init__(
        self, settings: RouterSettings, port: int | None = None, ws: str | None = None, ws_deflate: bool = False
    ) -> None:
        self.settings = settings
        self.port = port or free_port()
        config = uvicorn_config(settings, port=self.port, ws_deflate=ws_deflate, log_level="warning")
        if ws is not None:  # another of uvicorn's WebSocket protocols than the router's own
            config.ws = ws
        self.app = config.app
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def router(self) -> Router:
        assert isinstance(self.app, Starlette)
        router: Router = self.app.state.router
        return router

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The router's event loop (in the server's thread)."""
        return self.server.servers[0].get_loop()

    def start(self) -> RunningRouter:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("router did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def wait_until_answers(url: str, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Until a GET of ``url`` answers 2xx; RuntimeError when ``process`` exits first or time runs out.
    (An HTTPS server's certificate is not checked: this only asks whether it is up.)"""
    deadline = time.monotonic() + timeout
    unchecked = ssl._create_unverified_context()
    while True:
        try:
            urllib.request.urlopen(url, timeout=1, context=unchecked).read()
            return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"{process.args!r} did not answer at {url}") from None
            time.sleep(0.1)


@contextmanager
def running_router(port: int | None = None, **settings):
    server = RunningRouter(RouterSettings(**settings), port).start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def serving(*flags: str, port: int | None = None) -> Iterator[str]:
    """``serve.py`` itself, as a user runs it, with ``flags`` (on a free port by default); yields its URL
    (``https://`` when the flags give ``--tls-cert``)."""
    port = port or free_port()
    argv = [
        sys.executable,
        str(ROOT / "serve.py"),
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--store",
        ":memory:",
    ]
    url = f"{'https' if '--tls-cert' in flags else 'http'}://127.0.0.1:{port}"
    with spawned([*argv, *flags], f"{url}/healthz"):
        yield url


@contextmanager
def sdk_agent(
    port: int | None = None, script: Path = ROOT / "bench" / "baselines" / "a2a_sdk_echo.py"
) -> Iterator[str]:
    """A plain SDK server (default: the echo one); yields its base URL once its card answers."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    with spawned([sys.executable, str(script), "--port", str(port)], f"{url}/.well-known/agent-card.json"):
        yield url


@contextmanager
def spawned(argv: list[str], ready_url: str, **popen: Any) -> Iterator[subprocess.Popen[bytes]]:
    """A process (run from the repository's root), from when ``ready_url`` answers until the block ends."""
    process = subprocess.Popen(argv, cwd=ROOT, **popen)
    try:
        wait_until_answers(ready_url, process)
        yield process
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> PKI:
    """Test certificates for HTTPS hubs and trust tier mtls (tests/certificates.py)."""
    return PKI.create(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory) -> Iterator[str]:
    """A redis-server of the session's own (tests/cluster.py); tests keep apart by key prefix."""
    from tests.cluster import RedisServer  # it builds on this module

    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def router_server():
    """One router for every test that does not need special limits."""
    with running_router(ack_timeout=5.0) as server:
        yield server


async def eventually(predicate, timeout: float = 10.0, interval: float = 0.02):
    """Poll ``predicate`` until it is truthy; return its value, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(interval)
    return value
