"""Benchmark 1: page ready, cold and warm HTTP cache, against a bare Pyodide + pydantic page.

Ours: the test page from ``serve.py`` (``/?agent_id=...``), from navigation start to the
``a2a:ready`` performance mark (tools registered and the router has welcomed the agent).
Baseline: ``bench/baselines/bare_page.html`` from the baseline server (same uvicorn + Starlette,
same ``/static`` mount), from navigation start to its ``bare:ready`` mark (Pyodide loaded exactly
as boot.js loads it, then ``import pydantic``).

Cold: a fresh browser context per load (empty HTTP cache). Warm: one persistent profile per page
kind, loaded once to fill the cache, then each measured load opens a new tab in it. Loads of the
two kinds alternate (ABBA...) so drift on a noisy machine hits both alike. Native WebMCP is on.
"""

from __future__ import annotations

import sys
import tempfile
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

OURS_MARKS = ("a2a:boot", "a2a:python-ready", "a2a:tools-registered", "a2a:ready")
BARE_MARKS = ("bare:boot", "bare:python-ready", "bare:ready")


class Kind:
    def __init__(self, name: str, url, ready: str, marks: tuple[str, ...]) -> None:
        self.name, self.url, self.ready, self.marks = name, url, ready, marks


async def load(context, kind: Kind, index: int) -> dict[str, float]:
    """Navigate a new tab and return its performance marks (ms since navigation start)."""
    page = await context.new_page()
    try:
        await page.goto(kind.url(index), wait_until="commit")
        await wait_for(page, kind.ready)
        marks = await page.evaluate(
            "(names) => Object.fromEntries(names.map((n) => [n, performance.getEntriesByName(n)[0]?.startTime]))",
            list(kind.marks),
        )
    finally:
        await page.close()
    return marks


async def run(quick: bool = False, notes: list | None = None) -> list[Row]:
    reps = 3 if quick else 5
    notes = notes if notes is not None else []
    with servers(project_server(), baseline_server()) as (ours_server, base_server):
        ours = Kind("ours", lambda i: f"{ours_server.http}/?agent_id=ready-{i}&agent_type=executor",
                    "document.documentElement.dataset.a2a === 'ready'", OURS_MARKS)
        bare = Kind("bare", lambda i: f"{base_server.http}/bench/bare_page.html",
                    "document.documentElement.dataset.bare === 'ready'", BARE_MARKS)
        samples = {(mode, kind.name): [] for mode in ("cold", "warm") for kind in (ours, bare)}
        counter = iter(range(10_000))

        async with playwright() as pw:
            browser = await launch_browser(pw)
            try:
                for rep in range(reps):
                    for kind in (ours, bare) if rep % 2 == 0 else (bare, ours):
                        context = await browser.new_context()
                        try:
                            samples["cold", kind.name].append(await load(context, kind, next(counter)))
                        finally:
                            await context.close()
            finally:
                await browser.close()

            with tempfile.TemporaryDirectory(prefix="bench-profile-") as profiles:
                contexts = {kind.name: await launch_browser(pw, user_data_dir=f"{profiles}/{kind.name}")
                            for kind in (ours, bare)}
                try:
                    for kind in (ours, bare):  # fill the cache
                        await load(contexts[kind.name], kind, next(counter))
                    for rep in range(reps):
                        for kind in (ours, bare) if rep % 2 == 0 else (bare, ours):
                            samples["warm", kind.name].append(await load(contexts[kind.name], kind, next(counter)))
                finally:
                    for context in contexts.values():
                        await context.close()

    rows = []
    for mode in ("cold", "warm"):
        ours_ready = [marks["a2a:ready"] for marks in samples[mode, "ours"]]
        bare_ready = [marks["bare:ready"] for marks in samples[mode, "bare"]]
        breakdown = {
            name: Stats.of(marks[name] for marks in samples[mode, "ours"]).median for name in OURS_MARKS
        } | {name: Stats.of(marks[name] for marks in samples[mode, "bare"]).median for name in BARE_MARKS}
        rows.append(Row(
            "1 page ready", f"{mode} cache: navigation -> ready", "ms", Stats.of(ours_ready), Stats.of(bare_ready),
            "bare Pyodide+pydantic page", target=("<=", 1.10), extra={"median_marks_ms": breakdown},
        ))
        tools = breakdown["a2a:tools-registered"] - breakdown["a2a:python-ready"]
        notes.append(
            f"page ready, {mode}: median marks (ms) ours python-ready {breakdown['a2a:python-ready']:.0f} "
            f"(runtime + pydantic + package zip), tools-registered {breakdown['a2a:tools-registered']:.0f} "
            f"(+{tools:.0f}: import webmcp_a2a + build and register the tools), ready "
            f"{breakdown['a2a:ready']:.0f}; bare python-ready {breakdown['bare:python-ready']:.0f}, "
            f"ready {breakdown['bare:ready']:.0f} (import pydantic "
            f"+{breakdown['bare:ready'] - breakdown['bare:python-ready']:.0f})"
        )
    return rows


if __name__ == "__main__":
    standalone("page_ready", run)
