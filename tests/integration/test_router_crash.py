"""Kill -9 the router in the middle of a stream of 1,000 messages: none lost, none applied twice.

Real processes: ``serve.py`` with a SQLite store, killed with SIGKILL and started again
on the same port and store, while four sender agents stream messages to one
recipient, all on the CPython client with its outbox and reconnect. The recipient
acknowledges each burst of deliveries with one ``acks`` frame (the client's default),
so acks coalesced in flight when the router dies are covered too.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import urllib.request

from tests.conftest import ROOT, eventually, free_port
from tests.streams import SENDERS, assert_every_message_applied_once, stream
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import Hello


def start_router(port: int, store: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "serve.py"), "--port", str(port), "--store", store, "--log-level", "warning"],
        cwd=ROOT,
    )


async def router_up(port: int) -> None:
    def healthy() -> bool:
        try:
            return urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status == 200
        except OSError:
            return False

    await eventually(lambda: healthy(), timeout=20, interval=0.05)


async def test_sigkill_in_mid_stream_loses_nothing_and_applies_nothing_twice(tmp_path):
    port, store = free_port(), str(tmp_path / "router.sqlite3")
    url = f"ws://127.0.0.1:{port}/a2a"
    router = start_router(port, store)
    try:
        await router_up(port)
        recipient = await connect(
            url, Hello(agent_id="sink", agent_type="analyzer"), inbox_limit=10_000, request_timeout=60
        )
        applied: list[str] = []
        recipient.on_message(lambda message: applied.append(message.payload["key"]))
        senders = [
            await connect(url, Hello(agent_id=f"source-{n}", agent_type="executor"), request_timeout=60)
            for n in range(SENDERS)
        ]

        streams = asyncio.gather(*(stream(sender, n, "sink") for n, sender in enumerate(senders)))
        await eventually(lambda: len(applied) >= 200, timeout=20, interval=0.001)
        os.kill(router.pid, signal.SIGKILL)
        router.wait()
        applied_before_kill = len(applied)
        await asyncio.sleep(0.3)
        router = start_router(port, store)

        await assert_every_message_applied_once(applied, applied_before_kill, streams)
        for agent in (recipient, *senders):
            agent.close()
    finally:
        router.kill()
        router.wait()
