"""10,000 malformed frames beside a live pair: the router answers each with an error frame and loses nothing.

    python bench/malformed_flood.py [--frames 10000]

Starts ``serve.py`` as shipped (default limits), connects a legitimate pair (alice sends to bob
all along, each message acknowledged), and floods the router from other connections with every
kind of bad input the security issue lists: not JSON, unknown frame types, wrong field types,
deeply nested arrays and payloads, oversized and binary frames, relay frames carrying garbage,
requests before a hello, and hellos claiming bob's id without his credential. Prints: crashes
(the server process gone, or a traceback in its log), legitimate messages lost, error frames
returned by kind, frames left unanswered, and the server's RSS before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

import websockets

from bench.common import project_server, rss_kb
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import Hello, InboxArgs, SendMessageArgs

BATCH = 100
PAUSE = 0.03  # ~3,000 frames/s: under the default per-connection rate limit, so the frames reach the parser


def malformed_frames(victim: str) -> list[Callable[[int], str | bytes]]:
    deep_payload = '{"a":' * 3000 + "1" + "}" * 3000
    return [
        lambda n: f"not json {n}",
        lambda n: json.dumps([n, "an array, not an object"]),
        lambda n: json.dumps({"type": "teleport", "id": n}),
        lambda n: json.dumps({"type": "send", "id": n, "envelope": {"to_agent": 5, "message_type": "gossip"}}),
        lambda n: json.dumps({"type": "subscribe", "id": n, "topic": "x" * 500}),
        lambda n: "[" * 60_000,
        lambda n: (
            '{"type":"send","id":%d,"envelope":{"to_agent":"x","message_type":"notification","payload":%s}}'
            % (n, deep_payload)
        ),
        lambda n: "x" * 70_000,  # over max_frame_bytes
        lambda n: bytes([n % 256]) * 16,  # binary
        lambda n: json.dumps({"type": "relay", "agent_id": f"ghost-{n}", "frame": "{{{ not json"}),
        lambda n: json.dumps({"type": "relay", "agent_id": f"ghost-{n}", "frame": "[" * 30_000}),
        lambda n: json.dumps({"type": "heartbeat", "id": n}),  # a request before any hello
        lambda n: json.dumps({"type": "hello", "agent_id": "router", "agent_type": "x"}),  # a reserved id
        lambda n: json.dumps(
            {"type": "hello", "agent_id": victim, "agent_type": "executor"}
        ),  # bob's id, no credential
    ]


async def flood(url: str, frames: int, victim: str, answers: Counter[str]) -> int:
    """Send ``frames`` malformed frames; count the answers by error code; return how many went unanswered."""
    makers = malformed_frames(victim)
    sent = answered = 0
    while sent < frames:
        async with websockets.connect(url, max_size=None) as websocket:
            sent_here = 0
            answered_here = 0

            async def read() -> None:
                nonlocal answered_here
                with contextlib.suppress(websockets.ConnectionClosed):
                    async for text in websocket:
                        frame = json.loads(text)
                        if frame["type"] == "relayed":
                            frame = json.loads(frame["frame"])
                        answers[frame["error"]["code"] if frame["type"] == "error" else frame["type"]] += 1
                        answered_here += 1

            reader = asyncio.create_task(read())
            with contextlib.suppress(websockets.ConnectionClosed):
                while sent < frames:
                    frame = makers[sent % len(makers)](sent)
                    await websocket.send(frame)
                    sent += 1
                    sent_here += 1
                    if isinstance(frame, str) and f'"agent_id": "{victim}"' in frame:
                        break  # an impostor's hello: refused, and this connection closed (4001)
                    if sent % BATCH == 0:
                        await asyncio.sleep(PAUSE)
            deadline = time.monotonic() + 5
            while answered_here < sent_here and not reader.done() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            await websocket.close()
            await reader
            answered += answered_here
    return sent - answered


async def main(frames: int) -> None:
    with project_server() as server:
        url = f"{server.ws}/a2a"
        alice = await connect(url, Hello(agent_id="alice", agent_type="executor"), reconnect=False)
        bob = await connect(url, Hello(agent_id="bob", agent_type="executor"), reconnect=False, inbox_limit=100_000)
        rss_before = rss_kb(server.pid)
        delivered = 0
        sent_legit = 0
        answers: Counter[str] = Counter()
        started = time.perf_counter()

        async def converse() -> None:
            nonlocal delivered, sent_legit
            while not flooding.done():
                sent_legit += 1
                result = await alice.send_message(
                    SendMessageArgs(target_agent_id="bob", message_type="notification", payload={"n": sent_legit})
                )
                delivered += result.delivered
                await asyncio.sleep(0.005)

        flooding = asyncio.create_task(flood(url, frames, "bob", answers))
        await converse()
        unanswered = await flooding
        wall = time.perf_counter() - started
        received = len((await bob.inbox(InboxArgs(max_messages=1000, wait_seconds=1))).messages)
        while more := (await bob.inbox(InboxArgs(max_messages=1000))).messages:
            received += len(more)
        rss_after = rss_kb(server.pid)
        alive = server.process is not None and server.process.poll() is None
        tracebacks = server.tail(10**7).count("Traceback")
        alice.close()
        bob.close()

    print(f"malformed frames sent:        {frames:,} in {wall:.1f} s")
    print(f"crashes:                      {0 if alive and not tracebacks else 1} (server alive: {alive}, "
          f"tracebacks in its log: {tracebacks})")  # fmt: skip
    print(f"legitimate messages:          {sent_legit:,} sent, {delivered:,} acknowledged, {received:,} received, "
          f"lost: {sent_legit - received}")  # fmt: skip
    print(f"error frames returned:        {sum(v for k, v in answers.items() if k != 'welcome'):,}")
    for code, count in answers.most_common():
        print(f"  {code:<26}  {count:,}")
    print(f"frames left unanswered:       {unanswered:,}")
    print(f"server RSS:                   {rss_before / 1024:.1f} MB before, {rss_after / 1024:.1f} MB after")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=10_000)
    asyncio.run(main(parser.parse_args().frames))
