"""What every benchmark shares: statistics, result rows, servers, the browser, the machine.

Every figure the suite prints is a ratio against a baseline measured in the same run on the
same machine, so a row always carries both samples (``ours`` and ``base``) and the target the
ratio is held to.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import math
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
BASELINES = BENCH / "baselines"
RESULTS = BENCH / "results"
PYTHON = sys.executable
if str(ROOT / "py") not in sys.path:
    sys.path.insert(0, str(ROOT / "py"))

CHROMIUM = "/usr/bin/chromium"
# Quiet on a closed network (shared/notes/chromium.md); the tests, the benchmarks and the screenshot use these.
QUIET_NETWORK = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHROMIUM_ARGS = [*QUIET_NETWORK, "--enable-features=WebMCP"]  # native document.modelContext: what the product targets


# --- statistics --------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass
class Stats:
    n: int
    median: float
    p95: float
    p99: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Stats:
        values = list(values)
        if not values:
            return cls(0, math.nan, math.nan, math.nan, math.nan, math.nan)
        return cls(
            len(values),
            statistics.median(values),
            percentile(values, 95),
            percentile(values, 99),
            min(values),
            max(values),
        )


# --- result rows ---------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table: our figure, the baseline's, their ratio and the target for it.

    ``target`` is ``("<=", 1.1)`` or ``(">=", 0.5)``, applied to the ratio of medians, or, with
    ``target_on="value"``, to our median itself (e.g. KB per agent).
    """

    bench: str
    metric: str
    unit: str
    ours: Stats
    base: Stats | None = None
    baseline: str = ""
    target: tuple[str, float] | None = None
    target_on: str = "ratio"
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.base is None or not self.base.median:
            return None
        return self.ours.median / self.base.median

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        checked = self.ratio if self.target_on == "ratio" else self.ours.median
        if checked is None or math.isnan(checked):
            return None
        op, limit = self.target
        return checked <= limit if op == "<=" else checked >= limit

    def target_text(self) -> str:
        if self.target is None:
            return ""
        op, limit = self.target
        suffix = "x" if self.target_on == "ratio" else f" {self.unit}"
        return f"{'≤' if op == '<=' else '≥'} {limit:g}{suffix}"

    def to_json(self) -> dict:
        data = asdict(self)
        data.update(ratio=self.ratio, met=self.met, target=self.target_text() or None)
        return data


def fmt(value: float | None, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    magnitude = abs(value)
    return f"{value:,.0f}" if magnitude >= 100 else f"{value:.1f}" if magnitude >= 10 else f"{value:.2f}"


HEADER = [
    "benchmark",
    "metric",
    "unit",
    "n",
    "median",
    "p95",
    "baseline",
    "base median",
    "base p95",
    "ratio",
    "target",
    "met",
]


def table_cells(row: Row) -> list[str]:
    met = {True: "yes", False: "NO", None: ""}[row.met]
    return [
        row.bench,
        row.metric,
        row.unit,
        str(row.ours.n),
        fmt(row.ours.median),
        fmt(row.ours.p95),
        row.baseline,
        fmt(row.base.median) if row.base else "",
        fmt(row.base.p95) if row.base else "",
        f"{row.ratio:.2f}x" if row.ratio is not None else "",
        row.target_text(),
        met,
    ]


def text_table(rows: Sequence[Row]) -> str:
    lines = [HEADER] + [table_cells(row) for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    out = []
    for index, line in enumerate(lines):
        out.append(
            "  ".join(
                cell.ljust(width) if i < 3 or i in (6, 10) else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(line, widths, strict=False))
            )
        )
        if index == 0:
            out.append("  ".join("-" * width for width in widths))
    return "\n".join(out)


def markdown_table(rows: Sequence[Row]) -> str:
    out = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in table_cells(row)) + " |" for row in rows]
    return "\n".join(out)


def machine() -> dict:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kb = 0
    with suppress(OSError, IndexError, ValueError):
        mem_kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg_at_start": os.getloadavg(),
    }


def write_results(
    rows: Sequence[Row],
    name: str,
    *,
    quick: bool,
    wall_seconds: float,
    notes: Sequence[str] = (),
    info: dict | None = None,
) -> tuple[Path, Path]:
    """Write ``bench/results/NAME.json`` and ``NAME.md``; returns their paths."""
    RESULTS.mkdir(exist_ok=True)
    now = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    info = {
        "date": now,
        "mode": "quick" if quick else "full",
        "wall_seconds": round(wall_seconds, 1),
        "machine": machine(),
        **(info or {}),
    }
    json_path, md_path = RESULTS / f"{name}.json", RESULTS / f"{name}.md"
    json_path.write_text(
        json.dumps({**info, "rows": [row.to_json() for row in rows], "notes": list(notes)}, indent=2, default=str)
        + "\n"
    )
    m = info["machine"]
    md = [
        f"# webmcp-a2a benchmarks ({info['mode']} mode)",
        "",
        f"- date: {now}; wall time: {wall_seconds:.0f} s",
        f"- machine: {m['cores']} cores, {m['cpu']}, {m['memory_gb']} GB, Linux {m['kernel']}, "
        f"Python {m['python']}, load average at start {', '.join(f'{x:.2f}' for x in m['loadavg_at_start'])}",
    ]
    md += [f"- {key}: {value}" for key, value in info.items() if key not in ("date", "mode", "wall_seconds", "machine")]
    md += ["", "Ratio = our median / baseline median, both measured in this run.", "", markdown_table(rows)]
    if notes:
        md += ["", "## Notes", ""] + [f"- {note}" for note in notes]
    md_path.write_text("\n".join(md) + "\n")
    return json_path, md_path


# --- processes ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def raise_fd_limit(wanted: int = 8192) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard, max(soft, wanted)) if hard != resource.RLIM_INFINITY else max(soft, wanted)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def self_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Server:
    """A server in a subprocess of its own, on a free loopback port; stopped with SIGTERM."""

    def __init__(self, name: str, argv: list[str], port: int | None = None) -> None:
        self.name = name
        self.port = port or free_port()
        self.argv = [arg.replace("{port}", str(self.port)) for arg in argv]
        self.process: subprocess.Popen | None = None
        # A scratch working directory: whatever the server writes relative to it (serve.py's
        # default SQLite store, a2a-store.sqlite3) is fresh for every start and never lands in the repo.
        self.workdir = tempfile.TemporaryDirectory(prefix=f"bench-{name}-")
        self.log = open(Path(self.workdir.name) / "server.log", "w+b")  # noqa: SIM115 (closed in stop())

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.name} is not started"
        return self.process.pid

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> Server:
        self.process = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.workdir.name)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}: {self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        tail = self.tail()
        self.stop()
        raise RuntimeError(f"{self.name} did not listen on {self.port} within {timeout}s: {tail}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self.log.closed:
            self.log.close()
        self.workdir.cleanup()

    def tail(self, chars: int = 2000) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-chars:] if not self.log.closed else ""

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def project_server(*flags: str, name: str = "router") -> Server:
    """The product as shipped: ``serve.py`` (router + page + assets on one uvicorn), with ``flags``."""
    # The load generator opens up to 10,000 agents from one loopback address.
    argv = [PYTHON, str(ROOT / "serve.py"), "--port", "{port}", "--log-level", "warning"]
    limits = ["--max-connections-per-address", "100000", "--max-new-agents-per-address", "100000"]
    return Server(name, [*argv, *limits, *flags])


def redis_server() -> Server:
    """Debian's redis-server as a cluster runs it (append-only file, fsync every second), in the scratch directory."""
    argv = ["redis-server", "--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes"]
    return Server("redis", argv)


def baseline_server() -> Server:
    """Bare pages, /static and a minimal relay, on the same uvicorn + Starlette + websockets stack."""
    return Server("baseline-asgi", [PYTHON, str(BASELINES / "server.py"), "--port", "{port}"])


def relay_server(*, uvloop: bool = False) -> Server:
    """The minimal relay written directly with the ``websockets`` library (on uvloop's event loop, as the
    router runs, when ``uvloop``)."""
    argv = [PYTHON, str(BASELINES / "ws_relay.py"), "--port", "{port}"]
    return Server("baseline-ws-relay-uvloop", [*argv, "--uvloop"]) if uvloop else Server("baseline-ws-relay", argv)


@contextmanager
def servers(*made: Server):
    started = []
    try:
        # One at a time, so a failed start still stops the earlier ones.
        for server in made:
            started.append(server.start())  # noqa: PERF401
        yield made
    finally:
        for server in reversed(started):
            server.stop()


# --- browser -------------------------------------------------------------------------------------


@asynccontextmanager
async def playwright():
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        yield pw


async def launch_browser(pw, *, user_data_dir: str | None = None):
    """Chromium from Debian, quiet on a closed network, native WebMCP on. Persistent when given a profile."""
    options = {"executable_path": CHROMIUM, "args": CHROMIUM_ARGS, "headless": True}
    if user_data_dir is not None:
        return await pw.chromium.launch_persistent_context(user_data_dir, **options)
    return await pw.chromium.launch(**options)


async def wait_for(page, expression: str, timeout: float = 90_000) -> None:
    """Poll ``expression`` every 50 ms until it is truthy (``evaluate``, not ``wait_for_function``,
    whose ``eval`` the page's Content-Security-Policy refuses)."""
    deadline = time.monotonic() + timeout / 1000
    while not await page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not true within {timeout / 1000:g}s: {expression}")
        await asyncio.sleep(0.05)


# --- command line --------------------------------------------------------------------------------


def standalone(name: str, run) -> None:
    """``python bench/NAME.py [--quick]``: run one benchmark, print its table, write results/NAME.*."""
    import argparse

    parser = argparse.ArgumentParser(description=f"Run the {name} benchmark alone.")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (the quick mode of run.py)")
    args = parser.parse_args()
    started = time.perf_counter()
    notes: list[str] = []
    rows = asyncio.run(run(quick=args.quick, notes=notes))
    wall = time.perf_counter() - started
    print(text_table(rows))
    for note in notes:
        print(f"- {note}")
    json_path, md_path = write_results(rows, name, quick=args.quick, wall_seconds=wall, notes=notes)
    print(f"\n{name}: {wall:.1f} s; wrote {json_path.relative_to(ROOT)} and {md_path.relative_to(ROOT)}")
