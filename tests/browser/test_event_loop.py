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


# Python run in the page: an async function of no arguments whose result is JSON.
RUN_ASYNC = """
async (source) => {
  const run = window.a2a.pyodide.runPython(source);
  const task = run();
  const result = await task;
  for (const proxy of [run, task]) proxy.destroy();
  return JSON.parse(result);
}
"""

TIMERS_IN_ORDER = """
import asyncio, json
async def timers():
    loop = asyncio.get_running_loop()
    start = loop.time()
    fired = []
    for delay in (0.03, 0.01, 0.02):
        loop.call_at(start + delay, lambda delay=delay: fired.append([delay, loop.time() - start]))
    loop.call_at(start + 0.005, fired.append, "cancelled").cancel()
    await asyncio.sleep(0.05)
    return json.dumps(fired)
timers
"""

# A timer due in 30 s sets the browser's timer; one due sooner, set after it, must not wait for it.
SOONER_AFTER_LATER = """
import asyncio, json
async def sooner():
    loop = asyncio.get_running_loop()
    later = loop.call_later(30, print, "too late")
    start = loop.time()
    await asyncio.sleep(0.01)
    later.cancel()
    return json.dumps(loop.time() - start)
sooner
"""

# A request's timeout: asyncio.wait_for sets a 30 s timer and cancels it when the answer comes.
MANY_TIMEOUTS = """
import asyncio, json
from webmcp_a2a.browser.loop import CANCELLED_TIMERS_KEPT
async def timeouts():
    loop = asyncio.get_running_loop()
    for _ in range(1000):
        answer = loop.create_future()
        loop.call_soon(answer.set_result, None)
        await asyncio.wait_for(answer, 30)
    return json.dumps([len(loop._timers), CANCELLED_TIMERS_KEPT])
timeouts
"""


def test_timers_run_in_the_order_they_come_due_and_never_early_and_a_cancelled_one_never(bob: Page) -> None:
    fired = bob.evaluate(RUN_ASYNC, TIMERS_IN_ORDER)
    assert [delay for delay, _ in fired] == [0.01, 0.02, 0.03]
    assert all(waited >= delay for delay, waited in fired), fired


def test_a_timer_set_after_a_later_one_fires_on_its_own_time(bob: Page) -> None:
    assert bob.evaluate(RUN_ASYNC, SOONER_AFTER_LATER) < 1.0


def test_timeouts_cancelled_by_their_answers_do_not_pile_up(bob: Page) -> None:
    # Pyodide's own loop leaves each one a browser timer (and a proxy) for its full 30 s.
    pending, kept = bob.evaluate(RUN_ASYNC, MANY_TIMEOUTS)
    assert pending <= 2 * kept + 1


def test_wake_ups_that_follow_each_other_run_in_one_turn(bob: Page) -> None:
    # Pyodide's own loop gives each wake-up a browser task of its own (and has no turns to count);
    # here the chain shares its turn, give or take one past the 8 ms budget on a loaded machine.
    assert bob.evaluate(CHAIN, 20) <= 1


def test_a_task_that_never_stops_yielding_leaves_the_page_its_turn(bob: Page) -> None:
    outcome = bob.evaluate(SPINNER)
    # The page's timer ran while the task spun (within the loop's 8 ms budget, give or take a slow machine).
    assert outcome["waited"] < 1_000
    assert outcome["turns"] > 1
