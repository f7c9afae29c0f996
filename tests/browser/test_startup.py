"""How a page's Python starts: from the memory snapshot and bytecode built by static/fetching/boot.mjs,
or the ordinary way when those are missing or refused (web/js/runtime.js)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.browser.conftest import READY_TIMEOUT_MS, wait_until
from tests.browser.test_page_agents import send

_pages = itertools.count()


def open_main_page(mesh, name: str, snapshot_body: bytes | None = None, snapshot_status: int = 200):
    """A test page with its agent on the main thread (so the test can reach its Pyodide), the
    snapshot optionally replaced by the test before it reaches the page."""
    page = mesh.context.new_page()
    if snapshot_body is not None:
        page.route(
            "**/static/boot/pyodide.snapshot", lambda route: route.fulfill(status=snapshot_status, body=snapshot_body)
        )
    agent_id = f"{name}-{mesh.mode}-{next(_pages)}"
    page.goto(f"{mesh.base_url}/?agent_id={agent_id}&agent_type=executor&mode=main")
    wait_until(page, "document.documentElement?.dataset.a2a === 'ready'", timeout=READY_TIMEOUT_MS)
    page.agent_id = agent_id
    return page


def run_python(page, code: str):
    return page.evaluate("(code) => window.a2a.pyodide.runPython(code)", code)


@pytest.fixture(scope="module")
def restored(mesh):
    page = open_main_page(mesh, "restored")
    yield page
    page.close()


def test_page_starts_from_the_snapshot_with_bytecode(restored):
    assert restored.evaluate("window.a2a.boot") == {"snapshot": "restored", "bytecode": "used"}


def test_a_restored_page_keeps_no_copy_of_the_snapshot(mesh, restored):
    # Pyodide copies the snapshot into its memory; the bytes fetched must not stay alive beside it.
    snapshot_bytes = (Path(__file__).resolve().parents[2] / "static/boot/pyodide.snapshot").stat().st_size
    inspector = mesh.context.new_cdp_session(restored)
    try:
        inspector.send("HeapProfiler.collectGarbage")
        array_buffers = inspector.send("Runtime.getHeapUsage")["backingStorageSize"]
    finally:
        inspector.detach()
    assert array_buffers < snapshot_bytes


def test_the_package_bytecode_matches_its_source(restored):
    # A checked-hash .pyc (PEP 552 flags 0b11) is used only while the hash it carries is its source's.
    checked = run_python(
        restored,
        """
import importlib.util, webmcp_a2a.protocol as module
with open(module.__cached__, "rb") as pyc:
    header = pyc.read(16)
with open(module.__file__, "rb") as source:
    expected = importlib.util.source_hash(source.read())
int.from_bytes(header[4:8], "little") == 0b11 and header[8:16] == expected
""",
    )
    assert checked is True


def test_pages_restored_from_one_snapshot_draw_different_random_numbers(mesh, restored):
    other = open_main_page(mesh, "restored-too")
    try:
        draws = [run_python(page, "import random; random.getrandbits(64)") for page in (restored, other)]
    finally:
        other.close()
    assert draws[0] != draws[1]


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        (b"\x00" * 4096, 200, "Snapshot has invalid magic number"),
        (b"gone", 404, "HTTP 404"),
    ],
    ids=["refused", "missing"],
)
def test_without_a_usable_snapshot_the_page_starts_the_ordinary_way_and_works(mesh, alice, body, status, reason):
    page = open_main_page(mesh, "fallback", snapshot_body=body, snapshot_status=status)
    try:
        boot = page.evaluate("window.a2a.boot")
        assert boot["snapshot"].startswith("not used:")
        assert reason in boot["snapshot"]
        result = send(mesh, page, alice.agent_id, payload={"text": "started the ordinary way"})
        assert result["structuredContent"]["delivered"] is True, result
    finally:
        page.close()


def open_page(mesh, query: str, wait_for: str, route: tuple[str, bytes] | None = None):
    page = mesh.context.new_page()
    if route is not None:
        pattern, body = route
        page.route(pattern, lambda request: request.fulfill(status=200, body=body))
    page.goto(f"{mesh.base_url}/?{query}")
    wait_until(page, wait_for, timeout=READY_TIMEOUT_MS)
    return page


def test_the_start_up_is_shown_phase_by_phase(mesh):
    page = open_page(mesh, f"agent_id=phases-{mesh.mode}", "document.documentElement?.dataset.a2a === 'ready'")
    try:
        reports = page.evaluate("window.a2a.progress")
        phases = [report["phase"] for report in reports]
        assert list(dict.fromkeys(phases)) == ["download", "python", "packages", "agent", "router", "ready"]
        times = [report["at"] for report in reports]
        assert times == sorted(times)
        assert any(report.get("total", 0) > 1_000_000 for report in reports)  # bytes while downloading
        assert page.get_attribute("#startup", "data-phase") == "ready"
        assert page.evaluate("document.getElementById('boot-progress').value") == 100
        assert "ready" in page.text_content("#boot-phase")
    finally:
        page.close()


def test_a_failed_start_up_names_the_phase_and_the_reason(mesh):
    # A wheel whose bytes are not the ones its lock pins: the browser refuses it (subresource integrity).
    page = open_page(
        mesh,
        f"agent_id=tampered-{mesh.mode}&mode=main",
        "document.getElementById('startup')?.dataset.phase === 'failed'",
        route=("**/static/wheels/pydantic-*.whl", b"not the wheel the lock pins"),
    )
    try:
        assert page.get_attribute("#startup", "data-failed-phase") == "packages"
        assert "failed while loading pydantic: Could not load pydantic" in page.text_content("#boot-phase")
    finally:
        page.close()


def test_a_missing_asset_fails_the_start_up_naming_it(mesh):
    page = mesh.context.new_page()
    page.route("**/static/pyodide/pyodide.mjs", lambda route: route.fulfill(status=404, body="gone"))
    try:
        page.goto(f"{mesh.base_url}/?agent_id=no-runtime-{mesh.mode}&mode=main")
        wait_until(page, "document.getElementById('startup')?.dataset.phase === 'failed'", timeout=READY_TIMEOUT_MS)
        assert page.get_attribute("#startup", "data-failed-phase") in ("download", "python")
        assert "pyodide.mjs" in page.text_content("#boot-phase")
    finally:
        page.close()


def test_a_refused_agent_shows_why_in_the_start_up_view(mesh, alice):
    # Another tab's agent id, without its credential (a fresh context keeps no localStorage).
    context = mesh.context.browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{mesh.base_url}/?agent_id={alice.agent_id}")
        wait_until(page, "document.getElementById('startup')?.dataset.phase === 'failed'", timeout=READY_TIMEOUT_MS)
        assert page.get_attribute("#startup", "data-failed-phase") == "router"
        assert "failed while joining the router: refused" in page.text_content("#boot-phase")
    finally:
        context.close()
