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
clamped to 4 ms once nested), after the page's own work.

Timers (``call_later``, ``call_at``) wait in a heap, as in CPython's loops, behind one browser
timer set for the earliest. WebLoop gives each its own ``setTimeout`` and a proxy of its callback,
and a cancelled one still fires: every request's ``asyncio.timeout`` (30 s, cancelled as soon as the
answer comes) cost a proxy and a JavaScript timer that woke Python 30 s later for nothing. Here such a
timer costs a heap entry, and the browser timer is touched only when a timer comes due sooner than
the one it is set for. Cancelled timers are dropped from the heap when they are most of it.

:func:`webmcp_a2a.browser.page.start` installs it before it makes the agent. Unlike
WebLoop's, these callbacks do not run on a stack that JSPI can suspend: nothing here uses
``pyodide.ffi.run_sync``.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVarTuple, Unpack

from js import MessageChannel, clearTimeout, queueMicrotask, setTimeout
from pyodide.ffi import create_proxy
from pyodide.webloop import WebLoop

_Ts = TypeVarTuple("_Ts")

# The longest one turn runs ready callbacks before it yields to the page.
TURN_BUDGET = 0.008  # seconds, half a frame at 60 Hz
# The heap is rebuilt without its cancelled timers when they are more than this many and half of it.
CANCELLED_TIMERS_KEPT = 100
_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution  # a timer this close is due


class _Timer(asyncio.TimerHandle):
    """A timer in the loop's heap; ``_scheduled`` (CPython's, untyped there) says it still is."""

    __slots__ = ()
    _scheduled: bool


class ReadyQueueLoop(WebLoop):
    """A :class:`WebLoop` whose ``call_soon`` callbacks run together in turns (see the module)."""

    # Set by install(): the running WebLoop becomes one of these in place, so the futures and
    # tasks it already made keep their loop.
    _ready: deque[asyncio.Handle]
    _turn_scheduled: bool
    _run_ready_soon: Any  # a proxy of _run_ready, queued as a microtask: it runs when the current task ends
    _wake: Any  # a MessagePort: a message on it is a later browser task that runs the queue
    turns: int  # how many times the queue was run (each a microtask or a browser task)
    _timers: list[_Timer]  # a heap, earliest first
    _cancelled_timers: int  # how many of them are cancelled
    _browser_timer: int | None  # the id of the one browser timer
    _browser_timer_due: float  # when it fires, in the loop's time (inf: not set)
    _fire_timers_proxy: Any  # a proxy of _fire_timers, the browser timer's callback

    def call_soon(
        self, callback: Callable[[Unpack[_Ts]], object], *args: *_Ts, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        handle = asyncio.Handle(callback, args, self, context=context)
        self._ready.append(handle)
        if not self._turn_scheduled:
            self._turn_scheduled = True
            queueMicrotask(self._run_ready_soon)
        return handle

    def call_later(
        self,
        delay: float,
        callback: Callable[[Unpack[_Ts]], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        return self.call_at(self.time() + delay, callback, *args, context=context)

    def call_at(
        self,
        when: float,
        callback: Callable[[Unpack[_Ts]], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        handle = _Timer(when, callback, args, self, context=context)
        if when != math.inf:  # asyncio.timeout(None) and the like: never due
            handle._scheduled = True
            heapq.heappush(self._timers, handle)
            self._set_browser_timer()
        return handle

    def _timer_handle_cancelled(self, handle: _Timer) -> None:
        # TimerHandle.cancel() tells its loop, even of a timer already run; a cancelled one stays in
        # the heap until it comes first or the heap is rebuilt.
        if not handle._scheduled:
            return
        self._cancelled_timers += 1
        if self._cancelled_timers > CANCELLED_TIMERS_KEPT and 2 * self._cancelled_timers > len(self._timers):
            kept = []
            for timer in self._timers:
                if timer.cancelled():
                    timer._scheduled = False
                else:
                    kept.append(timer)
            heapq.heapify(kept)
            self._timers = kept
            self._cancelled_timers = 0

    def _set_browser_timer(self) -> None:
        """The browser timer for the earliest timer still wanted, unless it is set for then or sooner."""
        timers = self._timers
        while timers and timers[0].cancelled():
            heapq.heappop(timers)._scheduled = False
            self._cancelled_timers -= 1
        if not timers or timers[0].when() >= self._browser_timer_due:
            return  # none left (a timer that finds nothing due costs one call), or set soon enough
        if self._browser_timer is not None:
            clearTimeout(self._browser_timer)
        self._browser_timer_due = when = timers[0].when()
        self._browser_timer = setTimeout(self._fire_timers_proxy, max(0.0, (when - self.time()) * 1000))

    def _fire_timers(self) -> None:
        self._browser_timer = None
        self._browser_timer_due = math.inf
        timers = self._timers
        due = self.time() + _CLOCK_RESOLUTION
        while timers and timers[0].when() <= due:
            timer = heapq.heappop(timers)
            timer._scheduled = False
            if timer.cancelled():
                self._cancelled_timers -= 1
            else:
                self._ready.append(timer)
        if self._ready and not self._turn_scheduled:
            self._turn_scheduled = True
            self._run_ready()
        self._set_browser_timer()

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
        running._timers = []
        running._cancelled_timers = 0
        running._browser_timer = None
        running._browser_timer_due = math.inf
        running._fire_timers_proxy = create_proxy(running._fire_timers)
        return running
