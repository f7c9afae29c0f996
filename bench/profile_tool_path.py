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
  envelope, the frames written and read, the result) as the client core runs them, in microseconds;
* **cpu**: samples both pages' main threads with V8's profiler (every 50 us) while A makes the same
  calls back to back, as the benchmark does, and does the same for the bare JavaScript pair of the
  benchmark called through a JavaScript WebMCP tool (``relay_pair.html?webmcp``): CPU per call in
  each page, by what ran (Python in WebAssembly, Pyodide's glue, the project's JavaScript, the test
  page's live log, the browser's own native code, garbage collection).

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

from bench.common import baseline_server, launch_browser, playwright, project_server, servers
from bench.tool_latency import open_page

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
# The tool's arguments; the bare pair sends the same ones through its relay.
ARGUMENTS = {
    "target_agent_id": "probe-b",
    "message_type": "notification",
    "payload": {"text": "benchmark message", "values": [1, 2, 3], "nested": {"ok": True}},
}
CALL = """async (args) => {
  const start = performance.timeOrigin + performance.now();
  const result = await navigator.modelContext.callTool("a2a_send_message", args);
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


OURS_CALLS = """async ({n, args}) => {
  for (let i = 0; i < n; i++) {
    const result = await navigator.modelContext.callTool("a2a_send_message", args);
    if (!result.structuredContent.delivered) throw new Error(JSON.stringify(result));
  }
}"""
BARE_CALLS = """async ({n, args}) => {
  for (let i = 0; i < n; i++) await window.relay.tool("relay_send", args);
}"""
# What ran, from a sampled frame's function and script; the first that matches names it.
CPU_KINDS = (
    ("idle", lambda name, url: name == "(idle)"),
    (
        "Python: CPython and pydantic-core (WebAssembly)",
        lambda name, url: (
            name.startswith(("wasm-function", "js-to-wasm", "wasm-to-js")) or ".wasm" in url or url.startswith("wasm:")
        ),
    ),
    ("Pyodide's JavaScript glue", lambda name, url: "/static/pyodide/" in url),
    ("test page's live log and UI (page.js)", lambda name, url: url.endswith("/web/js/page.js")),
    ("project's JavaScript tool path (boot, runtime, webmcp)", lambda name, url: "/web/js/" in url),
    ("bare page's JavaScript", lambda name, url: "/bench/" in url),
    ("browser native code (Blink, V8 runtime, IPC)", lambda name, url: name == "(program)"),
    ("garbage collection (JavaScript heap)", lambda name, url: name == "(garbage collector)"),
    ("built-ins (WebSocket.send, JSON, DOM) and the harness's evaluate", lambda name, url: True),
)


def cpu_by_kind(profile: dict, calls: int) -> dict[str, float]:
    """Microseconds per call of each kind of code in a V8 CPU profile (samples times their intervals)."""
    frames = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    spent = dict.fromkeys((kind for kind, _ in CPU_KINDS), 0.0)
    for node_id, interval in zip(profile["samples"][1:], profile["timeDeltas"][1:], strict=True):
        frame = frames[node_id]
        kind = next(kind for kind, matches in CPU_KINDS if matches(frame["functionName"], frame["url"]))
        spent[kind] += interval / calls
    return spent


async def cpu_profiles(context, sender, receiver, call: str, calls: int) -> tuple[dict[str, float], ...]:
    sessions = [await context.new_cdp_session(page) for page in (sender, receiver)]
    for session in sessions:
        await session.send("Profiler.enable")
        await session.send("Profiler.setSamplingInterval", {"interval": 50})
    await sender.evaluate(call, {"n": 20, "args": ARGUMENTS})  # warm-up
    for session in sessions:
        await session.send("Profiler.start")
    await sender.evaluate(call, {"n": calls, "args": ARGUMENTS})
    profiles = [(await session.send("Profiler.stop"))["profile"] for session in sessions]
    for session in sessions:
        await session.detach()
    return tuple(cpu_by_kind(profile, calls) for profile in profiles)


async def main(calls: int) -> None:
    with servers(project_server(), baseline_server()) as (server, base_server):
        async with playwright() as pw:
            browser = await launch_browser(pw)
            try:
                context = await browser.new_context()
                ready = "document.documentElement?.dataset.a2a === 'ready'"
                relay_ready = "document.documentElement?.dataset.relay === 'ready'"
                relay_url = f"{base_server.http}/bench/relay_pair.html?webmcp"
                a, b, bare_a, bare_b = await asyncio.gather(
                    open_page(context, f"{server.http}/?agent_type=executor&agent_id=probe-a&mode=main", ready),
                    open_page(context, f"{server.http}/?agent_type=executor&agent_id=probe-b&mode=main", ready),
                    open_page(context, f"{relay_url}&id=ta&peer=tb", relay_ready),
                    open_page(context, f"{relay_url}&id=tb&peer=ta", relay_ready),
                )
                # First, before the wrappers below add their own work to the pages' Python.
                cpu = {
                    "ours": await cpu_profiles(context, a, b, OURS_CALLS, calls),
                    "bare": await cpu_profiles(context, bare_a, bare_b, BARE_CALLS, calls),
                }
                for page in (a, b):
                    await page.evaluate("(code) => window.a2a.pyodide.runPython(code)", WRAP)
                await b.evaluate(LISTEN)
                hops: dict[tuple[int, str], list[float]] = {}
                for call in range(calls + 20):
                    marks = await a.evaluate(CALL, ARGUMENTS)
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
    print(f"\ncpu: us per call on each page's main thread ({calls} calls back to back; V8 samples every 50 us)")
    print(f"  {'ours A':>8} {'ours B':>8} {'bare A':>8} {'bare B':>8}  what ran")
    (ours_a, ours_b), (bare_a, bare_b) = cpu["ours"], cpu["bare"]
    for kind, _ in CPU_KINDS:
        if kind != "idle":
            print(f"  {ours_a[kind]:8.0f} {ours_b[kind]:8.0f} {bare_a[kind]:8.0f} {bare_b[kind]:8.0f}  {kind}")
    busy = [sum(us for kind, us in page.items() if kind != "idle") for page in (ours_a, ours_b, bare_a, bare_b)]
    print("  " + " ".join(f"{us:8.0f}" for us in busy) + "  all but idle")
    print(
        f"  ours: {(busy[0] + busy[1]) / 1000:.2f} ms of main-thread CPU per call over both pages, "
        f"bare pair: {(busy[2] + busy[3]) / 1000:.2f} ms ({(busy[0] + busy[1]) / (busy[2] + busy[3]):.1f}x)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    asyncio.run(main(parser.parse_args().calls))
