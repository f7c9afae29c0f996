"""An A2A ``SendMessage`` round trip through the router to the echo agent, vs. the SDK alone.

    python bench/a2a_roundtrip.py [--quick]

Ours: ``serve.py`` as shipped, ``examples/echo_agent.py`` (a CPython agent of the mesh, its own
process) in its mesh, and the official ``a2a-sdk`` 1.x client posting ``SendMessage`` (blocking, no
streaming) to ``/agents/echo``. Each request crosses HTTP to the router, the SDK's JSON-RPC layer,
the bridge, the mesh's WebSocket to the agent and back (its ``working`` update, then its answer),
and the task store on SQLite. Baseline: the same client against ``baselines/a2a_sdk_echo.py``, the
SDK's own server answering the same way in-process with its in-memory task store. Requests go one
at a time, alternating between the two servers in blocks (ABBA), so drift hits both alike.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.types.a2a_pb2 import Role, SendMessageRequest

from bench.common import BASELINES, PYTHON, ROOT, Row, Server, Stats, project_server, servers, standalone

BLOCK = 25


async def round_trip(client: Client, n: int) -> float:
    """Milliseconds from sending ``SendMessage`` to holding the completed task."""
    request = SendMessageRequest(message=new_text_message(f"ping {n}", role=Role.ROLE_USER))
    started = time.perf_counter()
    (response,) = [event async for event in client.send_message(request)]
    elapsed = (time.perf_counter() - started) * 1000
    assert get_message_text(response.task.status.message) == f"echo: ping {n}", response
    return elapsed


def wait_for_card(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"{url}/.well-known/agent-card.json", timeout=1).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


async def run(quick: bool = False, notes: list[str] | None = None) -> list[Row]:
    notes = notes if notes is not None else []
    rounds = 200 if quick else 1000
    sdk = Server("a2a-sdk", [PYTHON, str(BASELINES / "a2a_sdk_echo.py"), "--port", "{port}"])
    with servers(project_server(), sdk) as (router, baseline):
        echo = subprocess.Popen(
            [PYTHON, str(ROOT / "examples" / "echo_agent.py"), "--router", f"{router.ws}/a2a", "--id", "echo"],
            cwd=router.workdir.name,  # its credential file lands in the router's scratch folder
            stdout=subprocess.DEVNULL,
        )
        try:
            wait_for_card(f"{router.http}/agents/echo")
            async with httpx.AsyncClient(timeout=30) as http:
                clients = {}
                for name, url in (("ours", f"{router.http}/agents/echo"), ("base", baseline.http)):
                    card = await A2ACardResolver(http, url).get_agent_card()
                    clients[name] = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
                times: dict[str, list[float]] = {"ours": [], "base": []}
                for n in range(20):  # warm up both: connections, caches, the SQLite file
                    for client in clients.values():
                        await round_trip(client, n)
                for block in range(rounds // BLOCK):
                    order = ["ours", "base"] if block % 2 == 0 else ["base", "ours"]
                    for name in order:
                        for n in range(BLOCK):
                            times[name].append(await round_trip(clients[name], n))
        finally:
            echo.terminate()
            echo.wait(10)
    notes.append(
        f"A2A round trip: {rounds} SendMessage calls to each server, one at a time, blocks of {BLOCK} (ABBA); "
        "the client runs in the benchmark's process"
    )
    return [
        Row(
            "6 A2A",
            "SendMessage round trip: a2a-sdk client -> router -> echo agent (CPython, own process)",
            "ms",
            Stats.of(times["ours"]),
            Stats.of(times["base"]),
            "the same client -> an a2a-sdk server answering in-process",
            target=("<=", 1.5),
        )
    ]


if __name__ == "__main__":
    standalone("a2a_roundtrip", run)
