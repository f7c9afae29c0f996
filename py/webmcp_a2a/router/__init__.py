"""The backend router: registry, routing, subscriptions, and the ASGI app that serves it all."""

from .app import create_app
from .settings import RouterSettings

__all__ = ["RouterSettings", "create_app"]
