"""Benchmark 4: router memory per connected agent at 1,000 agents, and the page's memory after start-up.

Router: RSS (``VmRSS`` of /proc/PID/status) of a fresh ``serve.py`` once idle, then after 1,000
agents connected and welcomed (``bench.loadgen``, batches of 100), settled for a second; the
difference divided by 1,000. Baseline: the same for the minimal ``websockets`` relay
(``bench/baselines/ws_relay.py``). Clients offer permessage-deflate, as browsers and the project's
client do; the run is repeated with clients that do not, to show what compression state costs.

Page: the test page (``serve.py``) and the bare Pyodide + pydantic page (baseline server) in the
same browser, each once ready: a forced garbage collection (CDP ``HeapProfiler.collectGarbage``),
then the JS heap in use (CDP ``Runtime.getHeapUsage``) and, separately, Pyodide's WebAssembly
memory (not part of the JS heap).
"""

from __future__ import annotations

import asyncio
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
    raise_fd_limit,
    relay_server,
    rss_kb,
    servers,
    standalone,
    wait_for,
)
from bench.loadgen import Load, RelayDialect, RouterDialect  # noqa: E402

AGENTS = 1000


async def per_agent_kb(server, dialect_of, deflate: bool) -> float:
    with servers(server) as (running,):
        await asyncio.sleep(0.5)
        before = rss_kb(running.pid)
        load = Load(dialect_of(running.ws), AGENTS, running.pid, deflate=deflate)
        await load.connect()
        await asyncio.sleep(1.0)
        after = rss_kb(running.pid)
        await load.close()
    return (after - before) / AGENTS


async def page_memory(context, url: str, ready: str, pyodide: str) -> tuple[float, float]:
    """(JS heap used, WebAssembly memory) in MB after start-up and a forced GC."""
    page = await context.new_page()
    try:
        await page.goto(url)
        await wait_for(page, ready)
        cdp = await context.new_cdp_session(page)
        await cdp.send("HeapProfiler.collectGarbage")
        heap = await cdp.send("Runtime.getHeapUsage")
        wasm = await page.evaluate(f"{pyodide}._module.HEAPU8.buffer.byteLength")
        await cdp.detach()
    finally:
        await page.close()
    return heap["usedSize"] / 2**20, wasm / 2**20


async def run(quick: bool = False, notes: list | None = None) -> list[Row]:
    notes = notes if notes is not None else []
    raise_fd_limit(8192)
    rows = []
    router = lambda ws: RouterDialect(ws)  # noqa: E731
    relay = lambda ws: RelayDialect(ws)  # noqa: E731
    for deflate in (True, False):
        ours = await per_agent_kb(project_server(), router, deflate)
        base = await per_agent_kb(relay_server(), relay, deflate)
        label = "with permessage-deflate" if deflate else "clients without permessage-deflate"
        rows.append(Row("4 memory", f"router RSS per connected agent, {AGENTS} agents, {label}", "KB",
                        Stats.of([ours]), Stats.of([base]), "ws relay",
                        target=("<=", 50) if deflate else None, target_on="value"))

    reps = 1 if quick else 2
    samples = {"ours": [], "bare": []}
    with servers(project_server(), baseline_server()) as (ours_server, base_server):
        async with playwright() as pw:
            browser = await launch_browser(pw)
            try:
                for rep in range(reps):
                    context = await browser.new_context()
                    try:
                        samples["ours"].append(await page_memory(
                            context, f"{ours_server.http}/?agent_id=mem-{rep}&agent_type=executor",
                            "document.documentElement.dataset.a2a === 'ready'", "window.a2a.pyodide"))
                        samples["bare"].append(await page_memory(
                            context, f"{base_server.http}/bench/bare_page.html",
                            "document.documentElement.dataset.bare === 'ready'", "window.bare.pyodide"))
                    finally:
                        await context.close()
            finally:
                await browser.close()
    for index, what in ((0, "JS heap used after start-up (after GC)"), (1, "WebAssembly memory after start-up")):
        rows.append(Row("4 memory", f"page {what}", "MB", Stats.of(s[index] for s in samples["ours"]),
                        Stats.of(s[index] for s in samples["bare"]), "bare Pyodide+pydantic page"))
    return rows


if __name__ == "__main__":
    standalone("memory", run)
