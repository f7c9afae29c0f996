"""The page's global scope as Pyodide's ``js`` module offers it: only what the project uses."""

from collections.abc import Callable
from typing import Any

from pyodide.ffi import JsProxy

class Event(JsProxy):
    type: str

class MessageEvent(Event):
    data: str

class CloseEvent(Event):
    code: int
    reason: str

class WebSocket(JsProxy):
    @staticmethod
    def new(url: str) -> WebSocket: ...
    def send(self, data: str) -> None: ...
    def close(self, code: int = ..., reason: str = ...) -> None: ...
    def addEventListener(self, type: str, listener: Callable[[Any], None]) -> None: ...
    def removeEventListener(self, type: str, listener: Callable[[Any], None]) -> None: ...

class Location(JsProxy):
    origin: str

location: Location

class MessagePort(JsProxy):
    onmessage: Callable[[MessageEvent], None] | None
    def postMessage(self, message: Any) -> None: ...

class MessageChannel(JsProxy):
    port1: MessagePort
    port2: MessagePort
    @staticmethod
    def new() -> MessageChannel: ...

def queueMicrotask(callback: Callable[[], None]) -> None: ...
def setTimeout(callback: Callable[[], None], delay_ms: float) -> int: ...
def clearTimeout(timer_id: int) -> None: ...
