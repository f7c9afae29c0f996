"""Router settings: the limits and timeouts, with the defaults of the embedded router."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RouterSettings(BaseModel):
    max_frame_bytes: int = Field(
        64 * 1024, ge=1024, description="Larger text frames are answered with a frame_too_large error"
    )
    queue_limit: int = Field(
        1000, ge=1, description="Frames waiting to be written to one connection; past it deliveries are refused"
    )
    reply_limit: int = Field(
        10_000, ge=1, description="Replies waiting to be written to one connection; past it the client is dropped"
    )
    ack_timeout: float = Field(10.0, gt=0, description="Seconds the router waits for a recipient's acknowledgement")

    store_path: str = Field(
        ":memory:", description="SQLite file for messages kept for absent agents, known agents and subscriptions"
    )
    store_limit_per_agent: int = Field(10_000, ge=0, description="Messages kept for one absent agent at most")
    store_ttl: float = Field(7 * 86400, gt=0, description="Seconds a kept message without its own expiry lives")

    @property
    def transport_max_bytes(self) -> int:
        """What the WebSocket layer accepts before it drops the connection (code 1009).

        Frames between ``max_frame_bytes`` and this get a polite error frame and the
        connection lives on; only absurd frames cost the sender its connection.
        """
        return self.max_frame_bytes * 16
