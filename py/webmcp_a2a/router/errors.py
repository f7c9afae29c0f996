"""The one exception the router's parts raise for a request they refuse."""

from __future__ import annotations

from ..protocol import ErrorCode, ErrorInfo


class RequestError(Exception):
    """A request that cannot be served; answered with an error frame carrying ``ref``."""

    def __init__(self, code: ErrorCode, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.info = ErrorInfo(code=code, message=message, field=field)
