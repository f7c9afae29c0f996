"""The router client: a sans-I/O core (:mod:`.core`) and its asyncio API (:mod:`.agent`).

Transports live beside it and are imported explicitly: :mod:`.cpython` (the
``websockets`` library) here, :mod:`webmcp_a2a.browser.websocket` in the page.
"""

from .agent import Agent, RouterError, Transport
from .core import ClientCore

__all__ = ["Agent", "ClientCore", "RouterError", "Transport"]
