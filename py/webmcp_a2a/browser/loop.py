"""Pyodide's event loop with a ready queue: a chain of wake-ups runs at once, not a browser task each.

Pyodide's :class:`~pyodide.webloop.WebLoop` gives every ``call_soon`` a browser task of its
own: a fresh JavaScript proxy of the callback, a ``MessageChannel`` message, and the
browser's event loop in between. An ``await`` that resumes costs one such trip (about
100 us, shared/notes/pyodide.md), and a tool call that waits for the router takes two in
a row after its answer arrives: the future wakes the tool's task, the finished task wakes
whoever awaits it (``runPythonTool`` in web/js/runtime.js).

:class:`ReadyQueueLoop` keeps ready callbacks in a queue, as CPython's own loops do, and runs
the queue in a microtask, right after the JavaScript that made the first of them ready (the
WebSocket's message event, say) returns; callbacks that become ready meanwhile run in the same
turn. A budget on one turn keeps the page responsive when code keeps scheduling itself
(``while True: await asyncio.sleep(0)``): past it, the rest goes to a later browser task (a
message on a channel of the loop's own, as Pyodide's scheduler does: a 0 ms timer would be
clamped to 4 ms once nested), after the page's own work. Timers (``call_later`` with a delay)
stay the browser's.

:func:`webmcp_a2a.browser.page.start` installs it before it makes the agent. Unlike
WebLoop's, these callbacks do not run on a stack that JSPI can suspend: nothing here uses
``pyodide.ffi.run_sync``.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVarTuple, Unpack

from js import MessageChannel, queueMicrotask
from pyodide.ffi import create_proxy
from pyodide.webloop import WebLoop

_Ts = TypeVarTuple("_Ts")

# The longest one turn runs ready callbacks before it yields to the page.
TURN_BUDGET = 0.008  # seconds, half a frame at 60 Hz


class ReadyQueueLoop(WebLoop):
    """A :class:`WebLoop` whose ``call_soon`` callbacks run together in turns (see the module)."""

    # Set by install(): the running WebLoop becomes one of these in place, so the futures and
    # tasks it already made keep their loop.
    _ready: deque[asyncio.Handle]
    _turn_scheduled: bool
    _run_ready_soon: Any  # a proxy of _run_ready, queued as a microtask: it runs when the current task ends
    _wake: Any  # a MessagePort: a message on it is a later browser task that runs the queue
    turns: int  # how many times the queue was run (each a microtask or a browser task)

    def call_soon(
        self, callback: Callable[[Unpack[_Ts]], object], *args: *_Ts, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        handle = asyncio.Handle(callback, args, self, context=context)
        self._ready.append(handle)
        if not self._turn_scheduled:
            self._turn_scheduled = True
            queueMicrotask(self._run_ready_soon)
        return handle

    def _run_ready(self, event: Any = None) -> None:
        # The turn stays scheduled while it runs: what becomes ready meanwhile joins this turn.
        self.turns += 1
        self._install_running_loop()
        self._install_asyncgen_hooks()
        ready = self._ready
        deadline = time.monotonic() + TURN_BUDGET
        try:
            while ready:
                handle = ready.popleft()
                if handle.cancelled():
                    continue
                try:
                    handle._run()
                except SystemExit as exit_:
                    if self._system_exit_handler is None:
                        raise
                    self._system_exit_handler(exit_.code)
                except KeyboardInterrupt:
                    if self._keyboard_interrupt_handler is None:
                        raise
                    self._keyboard_interrupt_handler()
                if time.monotonic() > deadline:
                    break
        finally:
            if ready:  # over budget: the rest in the next browser task, after the page's own
                self._wake.postMessage(None)
            else:
                self._turn_scheduled = False

    @classmethod
    def install(cls) -> ReadyQueueLoop:
        """Turn the running :class:`WebLoop` into a :class:`ReadyQueueLoop` (once; later calls return it)."""
        running = asyncio.get_event_loop()
        if isinstance(running, ReadyQueueLoop):
            return running
        if type(running) is not WebLoop:
            raise RuntimeError(f"expected Pyodide's WebLoop, found {type(running).__name__}")
        running.__class__ = cls
        assert isinstance(running, ReadyQueueLoop)
        running._ready = deque()
        running._turn_scheduled = False
        running.turns = 0
        # One proxy for the page's lifetime rather than one per callback.
        running._run_ready_soon = create_proxy(running._run_ready)
        channel = MessageChannel.new()
        channel.port1.onmessage = running._run_ready_soon
        running._wake = channel.port2
        return running
