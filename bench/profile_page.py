"""Where the page's start-up goes beyond "Pyodide + pydantic": cProfile inside Pyodide.

    python bench/profile_page.py [--top 25]

The page ready benchmark shows the test page needing most of a second more than the bare
Pyodide + pydantic page, between the ``a2a:python-ready`` and ``a2a:tools-registered`` marks
(importing the project's package, building the tools, registering them). This script opens a
page on ``serve.py``'s own origin (a Playwright route answers one URL with a small module
script: nothing is added to the server) that loads the runtime with the project's own loader
(``web/js/runtime.js``), then times, in Python, each import and the tools' input schemas - once
plainly, once under ``cProfile`` (in a second page) - and, in JavaScript, registering the tools
with ``document.modelContext``. Prints the step times and the top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import launch_browser, playwright, project_server, servers, wait_for

PAGE = "/__bench_profile__.html"

PYTHON = """
import json, time, io, cProfile, pstats, importlib
PROFILE = %(profile)s
steps = []
profiler = cProfile.Profile() if PROFILE else None
def step(name, fn):
    started = time.perf_counter()
    if profiler: profiler.enable()
    result = fn()
    if profiler: profiler.disable()
    steps.append([name, (time.perf_counter() - started) * 1000])
    return result
step("import pydantic", lambda: importlib.import_module("pydantic"))
step("first use of pydantic (BaseModel, TypeAdapter: its lazy imports)",
     lambda: (importlib.import_module("pydantic").BaseModel, importlib.import_module("pydantic").TypeAdapter))
for module in ("webmcp_a2a.protocol", "webmcp_a2a.client.agent", "webmcp_a2a.browser.tools",
               "webmcp_a2a.browser.page"):
    step("import " + module, lambda: importlib.import_module(module))
from webmcp_a2a.browser.tools import TOOLS
from webmcp_a2a.browser.page import PageAgent
schemas = step("input_schema() of %%d tools" %% len(TOOLS),
               lambda: [[t.name, t.description, json.dumps(t.input_schema())] for t in TOOLS])
report = ""
if profiler:
    for key, count in (("cumulative", %(top)d), ("tottime", %(top)d)):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(key).print_stats(count)
        report += "\\n--- by %%s ---\\n" %% key + out.getvalue().split("\\n\\n", 1)[-1]
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime").print_callers(3)
    report += "\\n--- callers of the 3 largest self times ---\\n" + out.getvalue().split("\\n\\n", 1)[-1]
json.dumps({"steps": steps, "schemas": schemas, "report": report})
"""

HTML = """<!doctype html><meta charset="utf-8"><title>profile</title>
<script type="module">
import { startPython } from "/web/js/runtime.js";
const t0 = performance.now();
const { pyodide } = await startPython();
const ready = performance.now();
const out = JSON.parse(await pyodide.runPythonAsync(window.__PY));
out.steps.unshift(["startPython(): Pyodide + pydantic + package zip", ready - t0]);
let t = performance.now();
for (const [name, description, schema] of out.schemas) {
  const inputSchema = JSON.parse(schema);
  await document.modelContext.registerTool({ name, description, inputSchema, execute: async () => ({}) });
}
out.steps.push([`document.modelContext.registerTool x${out.schemas.length}`, performance.now() - t]);
window.__profile = out;
document.documentElement.dataset.done = "1";
</script>"""


async def one(context, base: str, profile: bool, top: int) -> dict:
    page = await context.new_page()
    page.on("console", lambda message: print(f"[page] {message.text}", file=sys.stderr))
    page.on("pageerror", lambda error: print(f"[page error] {error}", file=sys.stderr))
    await page.add_init_script(f"window.__PY = {json.dumps(PYTHON % {'profile': profile, 'top': top})};")
    await page.goto(base + PAGE)
    await wait_for(page, "document.documentElement?.dataset.done === '1'")
    result = await page.evaluate("window.__profile")
    await page.close()
    return result


async def main(top: int) -> None:
    with servers(project_server()) as (server,):
        async with playwright() as pw:
            browser = await launch_browser(pw)
            try:
                context = await browser.new_context()
                await context.route(f"**{PAGE}", lambda route: route.fulfill(body=HTML, content_type="text/html"))
                plain = await one(context, server.http, False, top)
                profiled = await one(context, server.http, True, top)
            finally:
                await browser.close()
    print("step times, ms (plain run | under cProfile):")
    for (name, ms), (_, pms) in zip(plain["steps"], profiled["steps"], strict=False):
        print(f"  {ms:8.1f} | {pms:8.1f}  {name}")
    print(profiled["report"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=25)
    asyncio.run(main(parser.parse_args().top))
