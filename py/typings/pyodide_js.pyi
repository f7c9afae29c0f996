"""``pyodide_js``: the Pyodide API object as Python sees it (what the page agent loader uses)."""

from typing import Any

from pyodide.ffi import JsProxy

class _Lockfile(JsProxy):
    packages: JsProxy

lockfile: _Lockfile

async def loadPackage(names: str | list[str]) -> Any: ...
