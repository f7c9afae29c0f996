"""Pyodide's asyncio event loop: only what py/webmcp_a2a/browser/loop.py uses."""

import asyncio
from collections.abc import Callable

class WebLoop(asyncio.AbstractEventLoop):
    _system_exit_handler: Callable[[int | str | None], None] | None
    _keyboard_interrupt_handler: Callable[[], None] | None
    def _install_running_loop(self) -> None: ...
    def _install_asyncgen_hooks(self) -> None: ...
