"""Benchmark 2: a WebMCP ``a2a_send_message`` call, to delivery and to the acknowledged result.

Ours: two test pages from ``serve.py`` (agents ``lat-a`` and ``lat-b``, each in its page's Web
Worker, the default) in one headless Chromium with native WebMCP. For attribution the full mode
adds a pair with ``?mode=main`` (agents on the main thread) and a default pair whose live log
(``#log``, which page.js re-renders for every call and message) is hidden. A script in page A
calls ``navigator.modelContext.callTool("a2a_send_message", args)`` (the facade over the browser's
``document.modelContext.executeTool``) and awaits the result (``delivered: true``, i.e. B's runtime
acknowledged it); page B records when its Python ``on_message`` handler fired (the ``a2a:message``
window event it emits, caught in the capture phase so page.js's own logging is not counted).
Baseline: two ``bench/baselines/relay_pair.html`` pages on the baseline server (same uvicorn +
Starlette + websockets stack) sending the same JSON arguments through its minimal ``/relay``;
the receiver dispatches ``relay:message`` and sends an ack back the same way.

Attribution: the same bare pair with each call made through a JavaScript WebMCP tool
(``?webmcp``: ``document.modelContext.executeTool``, the browser's own cost per call), and a
JavaScript tool on that page that does nothing (the floor of any tool call, ``a2a_inbox``'s included).

All pairs: calls are sequential (one in flight), timed with ``performance.timeOrigin +
performance.now()`` in each page so the two tabs share a clock. Warm-up calls are dropped; the
measured calls alternate between the two pairs in blocks.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Row,
    Stats,
    baseline_server,
    launch_browser,
    playwright,
    project_server,
    servers,
    standalone,
    wait_for,
)

# Same arguments for both pairs; `seq` ties a send to its arrival.
CALLS_JS = """
async ({start, count, target, via}) => {
  const now = () => performance.timeOrigin + performance.now();
  const out = [];
  for (let seq = start; seq < start + count; seq++) {
    const args = {target_agent_id: target, message_type: "notification",
                  payload: {seq, text: "benchmark message", values: [1, 2, 3], nested: {ok: true}}};
    const sent = now();
    const result = via === "tool"
      ? await navigator.modelContext.callTool("a2a_send_message", args)
      : via === "relay-tool" ? await window.relay.tool("relay_send", args) : await window.relay.call(args);
    const done = now();
    const delivered = via === "tool" ? result?.structuredContent?.delivered : result?.delivered;
    if (!delivered) throw new Error(`call ${seq} not delivered: ${JSON.stringify(result)}`);
    out.push([seq, sent, done]);
  }
  return out;
}
"""
RECORD_JS = """
(event) => {
  window.__arrivals = new Map();
  window.addEventListener(event, ({detail}) => {
    const seq = (detail.payload ?? detail.args?.payload)?.seq;
    if (seq !== undefined) window.__arrivals.set(seq, performance.timeOrigin + performance.now());
  }, {capture: true});
}
"""
TAKE_JS = "() => { const a = [...window.__arrivals]; window.__arrivals.clear(); return a; }"
# For the breakdown: other tools through the same path, sequentially, ms each.
PROBE_JS = """
async ({n, name, args}) => {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await navigator.modelContext.callTool(name, args);
    out.push(performance.now() - t0);
  }
  return out;
}
"""
# The bare page's tool that does nothing, through the browser's executeTool: ms each.
NOOP_JS = """
async ({n}) => {
  const out = [];
  for (let i = 0; i < 10; i++) await window.relay.tool("noop", {});
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await window.relay.tool("noop", {});
    out.push(performance.now() - t0);
  }
  return out;
}
"""
PROBE_ROUNDS = 5
PROBES = (
    ("a2a_inbox", {"wait_seconds": 0}, "a2a_inbox (no network)"),
    ("a2a_discover", {"agent_type": "nobody"}, "a2a_discover (one router round trip, no second agent)"),
)


class Pair:
    def __init__(self, name: str, sender, receiver, target: str, via: str) -> None:
        self.name, self.sender, self.receiver, self.target, self.via = name, sender, receiver, target, via
        self.delivery: list[float] = []
        self.result: list[float] = []
        self.seq = 0

    async def calls(self, count: int, keep: bool = True) -> None:
        timings = await self.sender.evaluate(
            CALLS_JS, {"start": self.seq, "count": count, "target": self.target, "via": self.via}
        )
        self.seq += count
        arrivals = dict(await self.receiver.evaluate(TAKE_JS))
        if keep:
            for seq, sent, done in timings:
                self.delivery.append(arrivals[seq] - sent)
                self.result.append(done - sent)


async def open_page(context, url: str, ready: str, record_event: str | None = None, hide_log: bool = False):
    page = await context.new_page()
    await page.goto(url)
    await wait_for(page, ready)
    if record_event:
        await page.evaluate(RECORD_JS, record_event)
    if hide_log:  # the test page's live log: every call and message re-rendered on the main thread
        await page.evaluate("document.getElementById('log').style.display = 'none'")
    return page


async def run(quick: bool = False, notes: list | None = None) -> list[Row]:
    warmup, block, blocks = (30, 50, 2) if quick else (50, 50, 6)
    notes = notes if notes is not None else []
    with servers(project_server(), baseline_server()) as (ours_server, base_server):
        async with playwright() as pw:
            browser = await launch_browser(pw)
            try:
                context = await browser.new_context()
                ready = "document.documentElement?.dataset.a2a === 'ready'"
                relay_ready = "document.documentElement?.dataset.relay === 'ready'"
                page_url = f"{ours_server.http}/?agent_type=executor&agent_id="
                relay_url = f"{base_server.http}/bench/relay_pair.html"
                # (name, sender page, receiver page, receiver id, via); pages open concurrently (their
                # load time is not what this measures).
                specs: list[tuple[Any, ...]] = [
                    ("ours", (page_url + "lat-a", ready), (page_url + "lat-b", ready, "a2a:message"), "lat-b", "tool")
                ]
                if not quick:
                    # Attribution: both agents on their page's main thread instead of a Web Worker; and
                    # the default pages with the test page's live log hidden (display: none).
                    specs += [
                        (
                            "ours-main",
                            (page_url + "main-a&mode=main", ready),
                            (page_url + "main-b&mode=main", ready, "a2a:message"),
                            "main-b",
                            "tool",
                        ),
                        (
                            "ours-nolog",
                            (page_url + "nolog-a", ready, None, True),
                            (page_url + "nolog-b", ready, "a2a:message", True),
                            "nolog-b",
                            "tool",
                        ),
                    ]
                # Attribution: the same bare pair, each call going through a JavaScript WebMCP tool
                # (document.modelContext.executeTool): what the browser's WebMCP itself adds.
                specs.append(
                    (
                        "base-tool",
                        (f"{relay_url}?id=ta&peer=tb&webmcp", relay_ready),
                        (f"{relay_url}?id=tb&peer=ta&webmcp", relay_ready, "relay:message"),
                        "tb",
                        "relay-tool",
                    )
                )
                specs.append(
                    (
                        "base",
                        (f"{relay_url}?id=ra&peer=rb", relay_ready),
                        (f"{relay_url}?id=rb&peer=ra", relay_ready, "relay:message"),
                        "rb",
                        "relay",
                    )
                )
                pages = await asyncio.gather(*(open_page(context, *spec[i]) for spec in specs for i in (1, 2)))
                pairs = [
                    Pair(name, pages[2 * k], pages[2 * k + 1], target, via)
                    for k, (name, _, _, target, via) in enumerate(specs)
                ]
                *ours_pairs, base_tool, base = pairs  # the project's pairs, then the two bare ones
                for pair in pairs:
                    await pair.calls(warmup, keep=False)
                for index in range(blocks):
                    shift = index % len(pairs)
                    for pair in pairs[shift:] + pairs[:shift]:
                        await pair.calls(block)
                # The probes, in rounds that alternate with the bare page's tool that does nothing.
                noop: list[float] = []
                samples: dict[tuple[str, str], list[float]] = {}
                for round_ in range(PROBE_ROUNDS):
                    noop += await base_tool.sender.evaluate(NOOP_JS, {"n": block // PROBE_ROUNDS})
                    for pair in ours_pairs:
                        for name, args, label in PROBES:
                            if round_ == 0:  # warm-up
                                await pair.sender.evaluate(PROBE_JS, {"n": 10, "name": name, "args": args})
                            samples.setdefault((pair.name, label), []).extend(
                                await pair.sender.evaluate(
                                    PROBE_JS, {"n": block // PROBE_ROUNDS, "name": name, "args": args}
                                )
                            )
                probes = {key: Stats.of(values) for key, values in samples.items()}
            finally:
                await browser.close()

    half_rtt = Stats.of(base.result).median / 2
    notes.append(
        f"tool call: clock check - baseline one-way delivery median {Stats.of(base.delivery).median:.3f} ms "
        f"vs half its round trip {half_rtt:.3f} ms (the two tabs' clocks agree when these are close)"
    )
    for pair in ours_pairs:
        notes.append(
            f"tool call breakdown ({pair.name}): median ms per call - "
            + "; ".join(f"{label} {probes[pair.name, label].median:.2f}" for _, _, label in PROBES)
            + f"; a2a_send_message to B's handler {Stats.of(pair.delivery).median:.2f}, "
            f"to the acknowledged result {Stats.of(pair.result).median:.2f}"
        )
    baseline = "bare JS page pair + minimal relay"
    rows = [
        Row(
            "2 tool call",
            "a local tool with no network (a2a_inbox), agents in Web Workers (default)",
            "ms",
            probes["ours", PROBES[0][2]],
            Stats.of(base.result),
            f"{baseline}: a whole round trip",
            target=("<=", 0.30),
            target_on="value",
        )
    ]
    rows.append(
        Row(
            "2 tool call",
            "a local tool with no network (a2a_inbox), agents in Web Workers (default)",
            "ms",
            probes["ours", PROBES[0][2]],
            Stats.of(noop),
            "a JavaScript WebMCP tool that does nothing, bare page (executeTool's own cost)",
        )
    )
    for pair in ours_pairs:
        where = {
            "ours": "agents in Web Workers (default)",
            "ours-main": "agents on main threads (mode=main)",
            "ours-nolog": "Web Workers, live log hidden",
        }[pair.name]
        target = ("<=", 1.5) if pair.name == "ours" else None
        rows += [
            Row(
                "2 tool call",
                f"A callTool -> B's Python handler has it, {where}",
                "ms",
                Stats.of(pair.delivery),
                Stats.of(base.delivery),
                baseline,
                target=target,
            ),
            Row(
                "2 tool call",
                f"A callTool -> acknowledged result in A, {where}",
                "ms",
                Stats.of(pair.result),
                Stats.of(base.result),
                baseline,
                target=target,
            ),
        ]
    rows += [
        Row(
            "2 tool call",
            f"A callTool -> {reached}, agents in Web Workers (default)",
            "ms",
            Stats.of(ours),
            Stats.of(theirs),
            f"{baseline}, called through a JavaScript WebMCP tool",
        )
        for reached, ours, theirs in (
            ("B's Python handler has it", ours_pairs[0].delivery, base_tool.delivery),
            ("acknowledged result in A", ours_pairs[0].result, base_tool.result),
        )
    ]
    return rows


if __name__ == "__main__":
    standalone("tool_latency", run)
