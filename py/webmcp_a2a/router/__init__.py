"""The backend router: registry, routing, subscriptions, and the ASGI app that serves it all."""

from ..sdk_tracing import off_unless_collected

off_unless_collected()  # before the a2a-sdk is first imported (below)

from .app import create_app  # noqa: E402
from .settings import RouterSettings  # noqa: E402

__all__ = ["RouterSettings", "create_app"]
