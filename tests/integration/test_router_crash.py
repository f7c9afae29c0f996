"""Kill -9 the router in the middle of a stream of 1,000 messages: none lost, none applied twice.

Real processes: ``serve.py`` with a SQLite store, killed with SIGKILL and started again
on the same port and store, while four sender agents stream messages to one
recipient, all on the CPython client with its outbox and reconnect.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import urllib.request

from tests.conftest import ROOT, eventually, free_port
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import Hello, SendMessageArgs

SENDERS = 4
PER_SENDER = 250


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

        async def stream(sender, n: int):
            sends = []
            for i in range(PER_SENDER):
                sends.append(
                    asyncio.create_task(
                        sender.send_message(
                            SendMessageArgs(
                                target_agent_id="sink", message_type="data_share", payload={"key": f"{n}-{i}"}
                            )
                        )
                    )
                )
                await asyncio.sleep(0.002)
            return await asyncio.gather(*sends)

        streams = asyncio.gather(*(stream(sender, n) for n, sender in enumerate(senders)))
        await eventually(lambda: len(applied) >= 200, timeout=20, interval=0.001)
        os.kill(router.pid, signal.SIGKILL)
        router.wait()
        applied_before_kill = len(applied)
        await asyncio.sleep(0.3)
        router = start_router(port, store)
        results = [result for per_sender in await asyncio.wait_for(streams, 90) for result in per_sender]

        assert 200 <= applied_before_kill < SENDERS * PER_SENDER, "the kill did not land mid-stream"
        assert all(result.delivered or result.stored for result in results)
        await eventually(lambda: len(set(applied)) == SENDERS * PER_SENDER, timeout=30)
        assert sorted(applied) == sorted(f"{n}-{i}" for n in range(SENDERS) for i in range(PER_SENDER))
        for agent in (recipient, *senders):
            agent.close()
    finally:
        router.kill()
        router.wait()
