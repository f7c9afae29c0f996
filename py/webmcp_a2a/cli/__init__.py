"""The ``webmcp-a2a`` command: run the router, and script against the mesh from a shell.

``serve`` is :mod:`.serve` (the same program as ``python serve.py``); the other commands join the
mesh as a short-lived agent of their own with the CPython client (:mod:`.commands`).
"""

from ..sdk_tracing import off_unless_collected

off_unless_collected()  # before the a2a-sdk is first imported (below)

from .commands import main  # noqa: E402

__all__ = ["main"]
