"""Where a WebMCP tool call's time goes between two pages: hop by hop, and step by step in Pyodide.

    python bench/profile_tool_path.py [--calls 200]

The tool latency benchmark (``tool_latency.py``) times ``a2a_send_message`` from page A's
``callTool`` to page B's Python handler and back to A's acknowledged result. This script opens
the same test pages from ``serve.py`` (agents on the pages' main threads, ``?mode=main``, so
their Pyodide is in reach) and:

* **hops**: wraps, in each page's Python, the tool's ``call``, the WebSocket's ``send`` and the
  agent's ``data_received`` with time stamps (``performance.timeOrigin + now()``, one clock for both
  tabs), adds B's ``a2a:message`` event and A's ``callTool`` start and end, and prints the median time
  of each point after the call began;
* **steps**: times, inside Pyodide, each piece of Python on that path (argument validation, the
  envelope, the frames written and read, the result) as the client core runs them, in microseconds.

Nothing is added to the product: the wrappers are installed by ``runPython`` in the open pages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import launch_browser, playwright, project_server, servers, wait_for

WRAP = """
from js import performance
import json
from webmcp_a2a.browser.tools import Tool
from webmcp_a2a.browser.websocket import BrowserWebSocketTransport
from webmcp_a2a.client.agent import Agent

MARKS = []


def now():
    return performance.timeOrigin + performance.now()


def wrap(cls, name, label):
    original = getattr(cls, name)
    if label.endswith("coroutine"):
        async def wrapped(self, *args):
            MARKS.append((label.split()[0] + " started", now()))
            result = await original(self, *args)
            MARKS.append((label.split()[0] + " finished", now()))
            return result
    else:
        def wrapped(self, text):
            MARKS.append((f"{label} {json.loads(text)['type']}", now()))
            return original(self, text)
    setattr(cls, name, wrapped)


wrap(Tool, "call", "tool.call coroutine")
wrap(BrowserWebSocketTransport, "send", "WebSocket.send")
wrap(Agent, "data_received", "data_received")


def take_marks():
    marks = list(MARKS)
    MARKS.clear()
    return json.dumps(marks)
"""
LISTEN = """() => {
  window.__marks = [];
  const mark = () => window.__marks.push(["a2a:message event", performance.timeOrigin + performance.now()]);
  window.addEventListener("a2a:message", mark, {capture: true});
}"""
CALL = """async (target) => {
  const start = performance.timeOrigin + performance.now();
  const result = await navigator.modelContext.callTool("a2a_send_message", {target_agent_id: target,
    message_type: "notification", payload: {text: "benchmark message", values: [1, 2, 3], nested: {ok: true}}});
  if (!result.structuredContent.delivered) throw new Error(JSON.stringify(result));
  return [["callTool", start], ["callTool resolved", performance.timeOrigin + performance.now()]];
}"""
TAKE_MARKS = "() => JSON.parse(window.a2a.pyodide.runPython('take_marks()'))"
TAKE_EVENTS = "() => { const marks = window.__marks; window.__marks = []; return marks; }"

STEPS = r"""
import json, statistics, time
from webmcp_a2a.client.core import ClientCore
from webmcp_a2a.protocol import (ROUTER_FRAME, Ack, Deliver, Envelope, Hello, ReceivedMessage, Result,
                                 SendMessageArgs, SendRequest, SendResult)

def per_call(fn, n=%(n)d):
    for _ in range(20):
        fn()
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(n // 5):
            fn()
        samples.append((time.perf_counter() - started) / (n // 5) * 1e6)
    return statistics.median(samples)

arguments = json.dumps({"target_agent_id": "b", "message_type": "notification",
                        "payload": {"text": "benchmark message", "values": [1, 2, 3], "nested": {"ok": True}}})
args = SendMessageArgs.model_validate_json(arguments)
envelope = Envelope(to_agent=args.target_agent_id, message_type=args.message_type, payload=args.payload)
deliver = Deliver(envelope=envelope.model_copy(update={"from_agent": "a"})).model_dump_json()
delivered = ROUTER_FRAME.validate_json(deliver)
message = ReceivedMessage(**dict(delivered.envelope))
sent = SendResult(delivered=True, target_status="online", message_id=envelope.message_id)
result = Result(ref=1, data=sent.model_dump(mode="json")).model_dump_json()
answer = ROUTER_FRAME.validate_json(result)
core = ClientCore(Hello(agent_id="b", agent_type="executor"))

def receive_whole():
    core._seen.clear()
    core.receive(deliver)
    core.events_received()
    core.ack(delivered.envelope.message_id)
    core.data_to_send()

steps = [
    ("A: validate the tool's arguments (SendMessageArgs)", lambda: SendMessageArgs.model_validate_json(arguments)),
    ("A: build the envelope (new message id, time stamp)", lambda: Envelope(
        to_agent=args.target_agent_id, message_type=args.message_type, payload=args.payload)),
    ("A: write the send frame (SendRequest JSON)", lambda: SendRequest(id=1, envelope=envelope).model_dump_json()),
    ("B: read the deliver frame (router frame union)", lambda: ROUTER_FRAME.validate_json(deliver)),
    ("B: the received message (ReceivedMessage from the envelope)",
     lambda: ReceivedMessage(**dict(delivered.envelope))),
    ("B: write the ack frame", lambda: Ack(message_id=envelope.message_id).model_dump_json()),
    ("B: the message event's JSON for the page", lambda: message.model_dump_json()),
    ("B: all of the client core's receive (read, de-duplicate, ack)", receive_whole),
    ("A: read the result frame (router frame union)", lambda: ROUTER_FRAME.validate_json(result)),
    ("A: the send result (SendResult)", lambda: SendResult.model_validate(answer.data)),
    ("A: the tool's answer (MCP result JSON)", lambda: json.dumps({"content": [{"type": "text", "text": "x"}],
                                                                   "structuredContent": sent.model_dump(mode="json")})),
]
json.dumps([[name, per_call(fn)] for name, fn in steps])
"""


async def main(calls: int) -> None:
    with servers(project_server()) as (server,):
        async with playwright() as pw:
            browser = await launch_browser(pw)
            try:
                context = await browser.new_context()
                pages = []
                for agent in ("probe-a", "probe-b"):
                    page = await context.new_page()
                    await page.goto(f"{server.http}/?agent_type=executor&agent_id={agent}&mode=main")
                    pages.append(page)
                for page in pages:
                    await wait_for(page, "document.documentElement?.dataset.a2a === 'ready'")
                    await page.evaluate("(code) => window.a2a.pyodide.runPython(code)", WRAP)
                a, b = pages
                await b.evaluate(LISTEN)
                hops: dict[tuple[int, str], list[float]] = {}
                for call in range(calls + 20):
                    marks = await a.evaluate(CALL, "probe-b")
                    marks += [["A " + name, at] for name, at in await a.evaluate(TAKE_MARKS)]
                    marks += [["B " + name, at] for name, at in await b.evaluate(TAKE_MARKS)]
                    marks += [["B " + name, at] for name, at in await b.evaluate(TAKE_EVENTS)]
                    marks.sort(key=lambda mark: mark[1])
                    if call >= 20:  # warm-up dropped
                        for index, (name, at) in enumerate(marks):
                            hops.setdefault((index, name), []).append(at - marks[0][1])
                steps = json.loads(await a.evaluate("(code) => window.a2a.pyodide.runPython(code)", STEPS % {"n": 500}))
            finally:
                await browser.close()
    print(f"hops: median ms after A's callTool began ({calls} calls, agents on the pages' main threads)")
    for (_, name), offsets in sorted(hops.items()):
        if len(offsets) >= calls // 2:  # points every call passes
            print(f"  {statistics.median(offsets):7.2f}  {name}")
    print("\nsteps: median us per call inside Pyodide (page A's runtime)")
    for name, us in steps:
        print(f"  {us:7.1f}  {name}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    asyncio.run(main(parser.parse_args().calls))
