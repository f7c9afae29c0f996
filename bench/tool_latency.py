"""Benchmark 2: a WebMCP ``a2a_send_message`` call, to delivery and to the acknowledged result.

Ours: two test pages from ``serve.py`` (agents ``lat-a`` and ``lat-b``) in one headless Chromium
with native WebMCP. A script in page A calls ``navigator.modelContext.callTool("a2a_send_message",
args)`` (the facade over the browser's ``document.modelContext.executeTool``) and awaits the
result (``delivered: true``, i.e. B's runtime acknowledged it); page B records when its Python
``on_message`` handler fired (the ``a2a:message`` window event it emits, caught in the capture
phase so page.js's own logging is not counted).
Baseline: two ``bench/baselines/relay_pair.html`` pages on the baseline server (same uvicorn +
Starlette + websockets stack) sending the same JSON arguments through its minimal ``/relay``;
the receiver dispatches ``relay:message`` and sends an ack back the same way.

Both pairs: calls are sequential (one in flight), timed with ``performance.timeOrigin +
performance.now()`` in each page so the two tabs share a clock. Warm-up calls are dropped; the
measured calls alternate between the two pairs in blocks.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
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
      : await window.relay.call(args);
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


class Pair:
    def __init__(self, name: str, sender, receiver, target: str, via: str) -> None:
        self.name, self.sender, self.receiver, self.target, self.via = name, sender, receiver, target, via
        self.delivery: list[float] = []
        self.result: list[float] = []
        self.seq = 0

    async def calls(self, count: int, keep: bool = True) -> None:
        timings = await self.sender.evaluate(CALLS_JS, {"start": self.seq, "count": count, "target": self.target,
                                                        "via": self.via})
        self.seq += count
        arrivals = dict(await self.receiver.evaluate(TAKE_JS))
        if keep:
            for seq, sent, done in timings:
                self.delivery.append(arrivals[seq] - sent)
                self.result.append(done - sent)


async def open_page(context, url: str, ready: str, record_event: str | None = None):
    page = await context.new_page()
    await page.goto(url)
    await wait_for(page, ready)
    if record_event:
        await page.evaluate(RECORD_JS, record_event)
    return page


async def run(quick: bool = False, notes: list | None = None) -> list[Row]:
    warmup, block, blocks = (30, 50, 3) if quick else (50, 50, 8)
    notes = notes if notes is not None else []
    with servers(project_server(), baseline_server()) as (ours_server, base_server):
        async with playwright() as pw:
            browser = await launch_browser(pw)
            try:
                context = await browser.new_context()
                ready = "document.documentElement.dataset.a2a === 'ready'"
                page_url = f"{ours_server.http}/?agent_type=executor&agent_id="
                ours = Pair("ours", await open_page(context, page_url + "lat-a", ready),
                            await open_page(context, page_url + "lat-b", ready, "a2a:message"), "lat-b", "tool")
                relay_ready = "document.documentElement.dataset.relay === 'ready'"
                relay_url = f"{base_server.http}/bench/relay_pair.html"
                base = Pair("base", await open_page(context, f"{relay_url}?id=ra&peer=rb", relay_ready),
                            await open_page(context, f"{relay_url}?id=rb&peer=ra", relay_ready, "relay:message"),
                            "rb", "relay")
                for pair in (ours, base):
                    await pair.calls(warmup, keep=False)
                for index in range(blocks):
                    for pair in (ours, base) if index % 2 == 0 else (base, ours):
                        await pair.calls(block)
            finally:
                await browser.close()

    half_rtt = Stats.of(base.result).median / 2
    notes.append(
        f"tool call: clock check - baseline one-way delivery median {Stats.of(base.delivery).median:.3f} ms "
        f"vs half its round trip {half_rtt:.3f} ms (the two tabs' clocks agree when these are close)"
    )
    baseline = "bare JS page pair + minimal relay"
    return [
        Row("2 tool call", "A callTool -> B Python handler has it", "ms", Stats.of(ours.delivery),
            Stats.of(base.delivery), baseline, target=("<=", 1.5)),
        Row("2 tool call", "A callTool -> acknowledged result in A", "ms", Stats.of(ours.result),
            Stats.of(base.result), baseline, target=("<=", 1.5)),
    ]


if __name__ == "__main__":
    standalone("tool_latency", run)
