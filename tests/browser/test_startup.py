"""How a page's Python starts: from the memory snapshot and bytecode built by static/fetching/boot.mjs,
or the ordinary way when those are missing or refused (web/js/runtime.js)."""

from __future__ import annotations

import itertools

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
    wait_until(page, "document.documentElement.dataset.a2a === 'ready'", timeout=READY_TIMEOUT_MS)
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
