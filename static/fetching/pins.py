"""What is fetched: the pinned versions, where each file goes under ``static/``, and the lock's path.

Change a pin here, then run ``python3 static/fetch.py --record``.
"""

from __future__ import annotations

import re
from pathlib import Path

PYODIDE_VERSION = "314.0.7"

WEBMCP_POLYFILL_VERSION = "5.1.0"

CYTOSCAPE_VERSION = "3.34.4"

# npm package spec -> {path inside the tarball: path under static/}
NPM_PACKAGES: dict[str, dict[str, str]] = {
    f"pyodide@{PYODIDE_VERSION}": {
        "package/pyodide.mjs": "pyodide/pyodide.mjs",
        "package/pyodide.js": "pyodide/pyodide.js",
        "package/pyodide.asm.mjs": "pyodide/pyodide.asm.mjs",
        "package/pyodide.asm.wasm": "pyodide/pyodide.asm.wasm",
        "package/python_stdlib.zip": "pyodide/python_stdlib.zip",
        "package/pyodide-lock.json": "pyodide/pyodide-lock.json",
        "package/package.json": "pyodide/package.json",
    },
    f"@mcp-b/webmcp-polyfill@{WEBMCP_POLYFILL_VERSION}": {
        "package/dist/index.iife.js": "vendor/webmcp-polyfill/index.iife.js",
        "package/LICENSE": "vendor/webmcp-polyfill/LICENSE",
    },
    # The mesh view's graph (web/watch.html): an ES module, no dependencies.
    f"cytoscape@{CYTOSCAPE_VERSION}": {
        "package/dist/cytoscape.esm.min.mjs": "vendor/cytoscape/cytoscape.esm.min.mjs",
        "package/LICENSE": "vendor/cytoscape/LICENSE",
    },
}

PYODIDE_NPM_SPEC = f"pyodide@{PYODIDE_VERSION}"

# Wheels for Pyodide 314 (CPython 3.14, ABI 2026_0).  pydantic 2.14.3 pins
# pydantic-core 2.50.4; the others are the newest releases satisfying
# pydantic's (and each other's) requirements when they were recorded.
WHEELS: dict[str, str] = {
    "pydantic": "2.14.3",
    "pydantic-core": "2.50.4",
    "typing-extensions": "4.16.0",
    "annotated-types": "0.8.0",
    "typing-inspection": "0.4.5",
    # For page agents users write (issue 13): micropip installs what an agent declares from these,
    # and pyodide-http lets it use requests / urllib over the page's own HTTP.
    "micropip": "0.11.1",
    "pyodide-http": "0.2.2",
    "requests": "2.34.2",
    "urllib3": "2.8.0",
    "idna": "3.20",
    "charset-normalizer": "3.5.2",
    "certifi": "2026.10.18",
}

# Platform of the Pyodide build (checked against its pyodide-lock.json `info`
# by --record).  Pure-Python wheels match any platform.
WHEEL_PLATFORM_ARGS: list[str] = [
    "--platform",
    "pyemscripten_2026_0_wasm32",
    "--python-version",
    "3.14",
    "--implementation",
    "cp",
    "--abi",
    "cp314",
]

STATIC = Path(__file__).resolve().parent.parent  # static/

LOCK_PATH = STATIC / "assets.lock.json"

WHEEL_LOCK_OUT = "wheels/pyodide-lock.json"

MANAGED_DIRS = ("pyodide", "wheels", "vendor")

PART_SUFFIX = ".part"

LOCK_FORMAT = 1


class FetchError(Exception):
    """A problem that stops the run (exit code 1)."""


def canonical(name: str) -> str:
    """PEP 503 normalisation, the same one Pyodide applies to lock keys."""
    return re.sub(r"[-_.]+", "-", name).lower()
