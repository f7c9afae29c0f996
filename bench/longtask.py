"""Main-thread responsiveness while the page's agent starts: worker mode against main-thread mode.

    python bench/longtask.py [--runs 5] [--webmcp native|polyfill]

Serves the project with ``serve.py`` on a free port, opens the test page in Debian's
Chromium with ``?mode=main`` and ``?mode=worker`` (alternating, a fresh browser context per
run, so every start is cold), and measures on the page's main thread, from navigation
until the agent is ready (tools registered, router welcome):

* the longest task, from the Long Tasks API (tasks of 50 ms and more; 0 when none);
* total blocking time (the sum over long tasks of their time beyond 50 ms);
* the longest gap between two runs of a 0 ms timer (catches blocking under 50 ms too);
* the time to ready.

Prints both modes' medians and the ratio main / worker (how many times longer the page
freezes when Pyodide starts on its main thread). Standalone: needs only the project's
virtual environment and /usr/bin/chromium; contacts nothing but 127.0.0.1.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.common import CHROMIUM, QUIET_NETWORK  # noqa: E402

MODES = ("main", "worker")

# Installed before any page script: records long tasks and the longest timer gap.
PROBE = """
window.__bench = { longtasks: [], maxGap: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__bench.longtasks.push([entry.startTime, entry.duration]);
}).observe({ type: "longtask", buffered: true });
(() => {
  let last = performance.now();
  const tick = () => {
    const now = performance.now();
    window.__bench.maxGap = Math.max(window.__bench.maxGap, now - last);
    last = now;
    if (document.documentElement?.dataset.a2a !== "ready") setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
})();
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve() -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "serve.py"), "--port", str(port), "--log-level", "warning", "--store", ":memory:"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(f"{url}/healthz", timeout=1).read()
            return process, url
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise SystemExit("serve.py did not come up") from None
            time.sleep(0.1)


def measure(browser, base_url: str, mode: str, run: int) -> dict:
    context = browser.new_context()
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base_url) else route.abort())
    try:
        page = context.new_page()
        page.add_init_script(PROBE)
        page.goto(f"{base_url}/?mode={mode}&agent_id=longtask-{mode}-{run}")
        page.wait_for_selector("html[data-a2a='ready']", state="attached", timeout=120_000)
        ready = page.evaluate("performance.getEntriesByName('a2a:ready')[0]?.startTime ?? performance.now()")
        page.wait_for_timeout(100)  # let the observer deliver the last entries
        longtasks = [
            (start, duration) for start, duration in page.evaluate("window.__bench.longtasks") if start <= ready
        ]
        return {
            "longest": max((duration for _, duration in longtasks), default=0.0),
            "blocking": sum(max(0.0, duration - 50) for _, duration in longtasks),
            "gap": page.evaluate("window.__bench.maxGap"),
            "ready": ready,
        }
    finally:
        context.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="start-ups per mode (default: %(default)s)")
    parser.add_argument("--webmcp", choices=["native", "polyfill"], default="native")
    options = parser.parse_args(argv)
    process, base_url = serve()
    samples: dict[str, list[dict]] = {mode: [] for mode in MODES}
    try:
        with sync_playwright() as playwright:
            args = QUIET_NETWORK + (["--enable-features=WebMCP"] if options.webmcp == "native" else [])
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
            measure(browser, base_url, "main", -1)  # warm-up: the server's first zip, the OS file cache
            for run in range(options.runs):
                for mode in MODES if run % 2 == 0 else MODES[::-1]:
                    samples[mode].append(measure(browser, base_url, mode, run))
            browser.close()
    finally:
        process.terminate()
        process.wait(10)

    def median(mode: str, key: str) -> float:
        return statistics.median(sample[key] for sample in samples[mode])

    print(
        f"Page start-up, main thread of the page ({options.runs} cold starts per mode, medians; "
        f"WebMCP {options.webmcp}; {base_url})"
    )
    print(f"{'mode':<8}{'longest task ms':>17}{'blocking ms':>13}{'longest timer gap ms':>22}{'ready ms':>10}")
    for mode in MODES:
        print(
            f"{mode:<8}{median(mode, 'longest'):>17.0f}{median(mode, 'blocking'):>13.0f}"
            f"{median(mode, 'gap'):>22.0f}{median(mode, 'ready'):>10.0f}"
        )
        runs = ", ".join(f"{sample['longest']:.0f}" for sample in samples[mode])
        print(f"{'':<8}  longest task in each run: {runs}")
    worker_longest = median("worker", "longest")
    main_longest = median("main", "longest")
    if worker_longest > 0:
        print(f"ratio main / worker, longest task: {main_longest / worker_longest:.1f}x")
    else:
        # No task of 50 ms or more at all in worker mode: bound the ratio with the 50 ms threshold.
        print(
            f"ratio main / worker, longest task: >= {main_longest / 50:.1f}x "
            f"(worker mode had no long task; 50 ms used as its upper bound)"
        )
    print(f"ratio main / worker, longest timer gap: {median('main', 'gap') / max(median('worker', 'gap'), 1):.1f}x")
    print(f"ratio main / worker, time to ready: {median('main', 'ready') / median('worker', 'ready'):.2f}x")


if __name__ == "__main__":
    main()
