"""The page's asyncio loop (py/webmcp_a2a/browser/loop.py): wake-ups run together, within a budget."""

from __future__ import annotations

from playwright.sync_api import Page

# A chain of `await asyncio.sleep(0)`, started from JavaScript: how many turns of the loop it took.
CHAIN = """
async (steps) => {
  const chain = window.a2a.pyodide.runPython(`
import asyncio
async def chain(steps):
    loop = asyncio.get_running_loop()
    before = loop.turns
    for _ in range(steps):
        await asyncio.sleep(0)
    return loop.turns - before
chain`);
  const task = chain(steps);
  const turns = await task;
  for (const proxy of [chain, task]) proxy.destroy();
  return turns;
}
"""

# A task that never stops yielding; a JavaScript timer must still get its turn, and stops it.
SPINNER = """
async () => {
  const py = window.a2a.pyodide;
  const spin = py.runPython(`
import asyncio
spinning = {"on": True, "turns": 0}
async def spin():
    while spinning["on"]:
        spinning["turns"] += 1
        await asyncio.sleep(0)
    return spinning["turns"]
spin`);
  const task = spin();
  const started = performance.now();
  const waited = await new Promise((resolve) => setTimeout(() => resolve(performance.now() - started), 0));
  py.runPython('spinning["on"] = False');
  const turns = await task;
  for (const proxy of [spin, task]) proxy.destroy();
  return { waited, turns };
}
"""


def test_wake_ups_that_follow_each_other_run_in_one_turn(bob: Page) -> None:
    # Pyodide's own loop gives each wake-up a browser task of its own (and has no turns to count);
    # here the chain shares its turn, give or take one past the 8 ms budget on a loaded machine.
    assert bob.evaluate(CHAIN, 20) <= 1


def test_a_task_that_never_stops_yielding_leaves_the_page_its_turn(bob: Page) -> None:
    outcome = bob.evaluate(SPINNER)
    # The page's timer ran while the task spun (within the loop's 8 ms budget, give or take a slow machine).
    assert outcome["waited"] < 1_000
    assert outcome["turns"] > 1
