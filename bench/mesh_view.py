"""The mesh view stays fluid: 200 agents, 100 messages a second, against the same view idle.

Ours: ``web/watch.html`` from ``serve.py`` in headless Chromium, watching a mesh of 200 simulated
agents (``loadgen.py``'s raw WebSocket agents) while they send 100 direct messages a second, open
loop, to random other agents (each acknowledged by its recipient). Baseline, same run, same page,
same 200 agents: the view while nobody sends. Measured in the page: the interval between animation
frames (``requestAnimationFrame``; 16.7 ms at 60 Hz) and the main thread's long tasks (over 50 ms),
and how many messages the view drew, listed and left undrawn (more than it draws at once).
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Row, Stats, launch_browser, playwright, project_server, servers, standalone, wait_for
from bench.loadgen import Load, RouterDialect

AGENTS = 200
RATE = 100  # messages per second

# Animation frame intervals and long tasks over `seconds`, in ms.
FRAMES_JS = """
async (seconds) => {
  const intervals = [], longTasks = [];
  const observer = new PerformanceObserver((list) => longTasks.push(...list.getEntries().map((e) => e.duration)));
  observer.observe({ type: "longtask" });
  let last = performance.now();
  const end = last + seconds * 1000;
  await new Promise((done) => {
    const frame = (now) => {
      intervals.push(now - last);
      last = now;
      if (now < end) requestAnimationFrame(frame); else done();
    };
    requestAnimationFrame(frame);
  });
  observer.disconnect();
  return { intervals, longTasks, counts: { ...window.watch.counts } };
}
"""


async def send_open_loop(load: Load, rate: int, stop: asyncio.Event) -> int:
    """``rate`` direct messages a second from random agents to random others, until ``stop``."""
    rng = random.Random(7)
    sent = 0
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not stop.is_set():
        due = int((loop.time() - started) * rate)
        while sent < due:
            sender, target = rng.sample(load.agents, 2)
            load._send(sender, broadcast=False, target=target.name)
            sent += 1
        await asyncio.sleep(0.005)
    return sent


async def run(quick: bool = False, notes: list | None = None) -> list[Row]:
    window = 5 if quick else 15
    notes = notes if notes is not None else []
    with servers(project_server()) as (server,):
        load = Load(RouterDialect(server.ws), AGENTS, server.pid, prefix="view")
        await load.connect()
        try:
            async with playwright() as pw:
                browser = await launch_browser(pw)
                try:
                    page = await (await browser.new_context(viewport={"width": 1400, "height": 900})).new_page()
                    await page.goto(f"{server.http}/web/watch.html")
                    await wait_for(page, "document.documentElement?.dataset.watch === 'ready'")
                    await asyncio.sleep(1)  # the first layout
                    idle = await page.evaluate(FRAMES_JS, window)
                    stop = asyncio.Event()
                    sending = asyncio.create_task(send_open_loop(load, RATE, stop))
                    await asyncio.sleep(1)  # into the stream
                    busy = await page.evaluate(FRAMES_JS, window)
                    stop.set()
                    sent = await sending
                finally:
                    await browser.close()
        finally:
            await load.close()

    seen = busy["counts"]["messages"] - idle["counts"]["messages"]
    notes.append(
        f"mesh view: {AGENTS} agents, {sent} messages sent at {RATE}/s; during the {window} s measured the view "
        f"listed {seen}, drew {busy['counts']['drawn'] - idle['counts']['drawn']} and left "
        f"{busy['counts']['dropped'] - idle['counts']['dropped']} undrawn (too many in flight); "
        f"long tasks: {len(busy['longTasks'])} under load (longest {max(busy['longTasks'], default=0):.0f} ms), "
        f"{len(idle['longTasks'])} idle"
    )
    return [
        Row(
            "mesh view",
            f"animation frame interval, {AGENTS} agents, {RATE} msgs/s (p95 compared)",
            "ms",
            Stats.of(busy["intervals"]),
            Stats.of(idle["intervals"]),
            "the same view, nobody sending",
        ),
        Row(
            "mesh view",
            f"frames per second under {RATE} msgs/s",
            "fps",
            Stats.of([1000 / max(interval, 1) for interval in busy["intervals"]]),
            Stats.of([1000 / max(interval, 1) for interval in idle["intervals"]]),
            "the same view, nobody sending",
            target=(">=", 30),
            target_on="value",
        ),
    ]


if __name__ == "__main__":
    standalone("mesh_view", run)
