"""Benchmark 4: router memory per connected agent at 1,000 agents, and the page's memory after start-up.

Router: RSS (``VmRSS`` of /proc/PID/status) of a fresh ``serve.py`` once idle, then after 1,000
agents connected and welcomed (``bench.loadgen``, batches of 100), settled for a second; the
difference divided by 1,000. Baseline: the same for the minimal ``websockets`` relay
(``bench/baselines/ws_relay.py``). Clients offer permessage-deflate, as browsers and the project's
client do; the full mode repeats it with clients that do not, to show what compression state costs.

Page: the test page as served (``serve.py``; its agent runs in a Web Worker by default) and the
bare Pyodide + pydantic page (baseline server) in the same browser, each once ready. In the page
and in each of its dedicated workers (CDP auto-attach): a forced garbage collection
(``HeapProfiler.collectGarbage``), then the JS heap in use (``Runtime.getHeapUsage``), summed.
Pyodide's WebAssembly memory is not part of a JS heap: the PSS of the page's renderer process
(each page in a browser of its own; page, worker and wasm memory live in that one process) gives
the whole footprint.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
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
from bench.loadgen import Load, RelayDialect, RouterDialect

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


class Inspector:
    """CDP on a page and on its dedicated workers (auto-attached, addressed through the page's session)."""

    def __init__(self, cdp) -> None:
        self.cdp = cdp
        self.workers: list[str] = []
        self._waiting: dict[tuple[str, int], asyncio.Future] = {}
        self._next = 1
        cdp.on("Target.attachedToTarget", self._attached)
        cdp.on("Target.receivedMessageFromTarget", self._received)

    async def start(self) -> None:
        await self.cdp.send(
            "Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": False}
        )
        await asyncio.sleep(0.3)  # existing workers attach right away

    def _attached(self, event: dict) -> None:
        if event["targetInfo"]["type"] == "worker":
            self.workers.append(event["sessionId"])

    def _received(self, event: dict) -> None:
        message = json.loads(event["message"])
        future = self._waiting.pop((event["sessionId"], message.get("id")), None)
        if future is not None and not future.done():
            future.set_result(message)

    async def send(self, session: str | None, method: str, params: dict | None = None) -> dict:
        if session is None:
            return await self.cdp.send(method, params or {})
        self._next += 1
        future = asyncio.get_running_loop().create_future()
        self._waiting[session, self._next] = future
        await self.cdp.send(
            "Target.sendMessageToTarget",
            {"sessionId": session, "message": json.dumps({"id": self._next, "method": method, "params": params or {}})},
        )
        message = await asyncio.wait_for(future, 30)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message["result"]

    async def js_heap(self, session: str | None) -> int:
        """JS heap used after a forced GC, in one JS context."""
        await self.send(session, "HeapProfiler.collectGarbage")
        return (await self.send(session, "Runtime.getHeapUsage"))["usedSize"]


def pss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    raise RuntimeError(f"no Pss for {pid}")


async def page_memory(browser, url: str, ready: str, wasm: str | None) -> tuple[float, float, float]:
    """(JS heap used by the page and its workers, PSS of its renderer process, Pyodide's WebAssembly memory)
    in MB, after start-up and a GC; the last from the page's expression ``wasm`` (0 without one).

    ``browser`` is dedicated to this page: its renderer is the one that burnt the most CPU.
    """
    context = await browser.new_context()
    try:
        page = await context.new_page()
        await page.goto(url)
        await wait_for(page, ready)
        wasm_bytes = await page.evaluate(wasm) if wasm else 0
        inspector = Inspector(await context.new_cdp_session(page))
        await inspector.start()
        heap = 0
        for session in [None, *inspector.workers]:
            heap += await inspector.js_heap(session)
        await inspector.cdp.detach()
        processes = (await (await browser.new_browser_cdp_session()).send("SystemInfo.getProcessInfo"))["processInfo"]
        renderer = max((p for p in processes if p["type"] == "renderer"), key=lambda p: p["cpuTime"])
        pss = pss_kb(renderer["id"])
    finally:
        await context.close()
    return heap / 2**20, pss / 1024, wasm_bytes / 2**20


async def run(quick: bool = False, notes: list | None = None) -> list[Row]:
    notes = notes if notes is not None else []
    raise_fd_limit(8192)
    rows = []
    router = lambda ws: RouterDialect(ws)  # noqa: E731
    relay = lambda ws: RelayDialect(ws)  # noqa: E731
    for deflate in (True,) if quick else (True, False):
        ours = await per_agent_kb(project_server(), router, deflate)
        base = await per_agent_kb(relay_server(), relay, deflate)
        # Servers decide: the router and both baselines decline compression (the router's default).
        label = "clients offering permessage-deflate" if deflate else "clients without permessage-deflate"
        rows.append(
            Row(
                "4 memory",
                f"router RSS per connected agent, {AGENTS} agents, {label}",
                "KB",
                Stats.of([ours]),
                Stats.of([base]),
                "ws relay",
                target=("<=", 1.0) if deflate else None,
            )
        )
        if deflate:  # attribution: the same relay on the router's stack (uvicorn + Starlette)
            asgi = await per_agent_kb(baseline_server(), lambda ws: RelayDialect(ws, "/relay/"), deflate)
            rows.append(
                Row(
                    "4 memory",
                    f"router RSS per connected agent, {AGENTS} agents, {label}",
                    "KB",
                    Stats.of([ours]),
                    Stats.of([asgi]),
                    "relay on uvicorn+Starlette",
                )
            )

    reps = 1 if quick else 2
    samples: dict[str, list] = {"ours": [], "bare": [], "ours-main": []}
    agent_ready = "document.documentElement?.dataset.a2a === 'ready'"
    with servers(project_server(), baseline_server()) as (ours_server, base_server):
        pages = {
            "ours": (lambda rep: f"{ours_server.http}/?agent_id=mem-{rep}&agent_type=executor", agent_ready, None),
            "bare": (
                lambda rep: f"{base_server.http}/bench/bare_page.html",
                "document.documentElement?.dataset.bare === 'ready'",
                "() => window.bare.pyodide._module.HEAP8.byteLength",
            ),
        }
        if not quick:  # attribution: the agent on the main thread, where its Pyodide is in reach
            pages["ours-main"] = (
                lambda rep: f"{ours_server.http}/?agent_id=mem-main-{rep}&agent_type=executor&mode=main",
                agent_ready,
                "() => window.a2a.pyodide._module.HEAP8.byteLength",
            )

        async def measure(pw, kind: str, rep: int) -> None:
            url, ready, wasm = pages[kind]
            browser = await launch_browser(pw)
            try:
                samples[kind].append(await page_memory(browser, url(rep), ready, wasm))
            finally:
                await browser.close()

        async with playwright() as pw:
            for rep in range(reps):  # the two pages side by side: memory, not time, is measured
                await asyncio.gather(*(measure(pw, kind, rep) for kind in pages))
    for kind, index, what, target in (
        ("ours", 0, "JS heap used after start-up, page + agent worker, after GC", None),
        ("ours", 1, "renderer process PSS after start-up (JS heaps + Pyodide wasm memory + Blink)", ("<=", 1.10)),
        # Full mode's attribution: without the worker, and the WebAssembly memory in both pages.
        ("ours-main", 1, "renderer process PSS after start-up, agent on the main thread (mode=main, no worker)", None),
        ("ours-main", 2, "Pyodide's WebAssembly memory after start-up, agent on the main thread (mode=main)", None),
    ):
        if samples[kind]:
            rows.append(
                Row(
                    "4 memory",
                    f"page {what}",
                    "MB",
                    Stats.of(s[index] for s in samples[kind]),
                    Stats.of(s[index] for s in samples["bare"]),
                    "bare Pyodide+pydantic page",
                    target=target,
                )
            )
    return rows


if __name__ == "__main__":
    standalone("memory", run)
