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

    a2a_reply_timeout: float = Field(
        300.0, gt=0, description="Seconds an A2A task waits for its agent's next answer before it fails"
    )

    hub_name: str = Field(
        "hub",
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="This router's name among federated hubs: its agents are NAME's agents elsewhere (id@NAME)",
    )
    registry_health_interval: float = Field(
        60.0, gt=0, description="Seconds between health checks of the registered remote agents' cards"
    )
    registry_fetch_timeout: float = Field(5.0, gt=0, description="Seconds a remote agent's card may take to fetch")

    # --- TLS (router/tls.py) ----------------------------------------------------------------
    tls_cert: str | None = Field(None, description="PEM certificate chain: serve HTTPS and WSS instead of HTTP and WS")
    tls_key: str | None = Field(None, description="PEM private key of --tls-cert (when not in that file)")
    tls_client_ca: str | None = Field(
        None, description="PEM CA bundle: ask clients for a certificate (optional) and verify it against these CAs"
    )

    page_agents_dir: str | None = Field(
        None,
        description="Folder of page agents users write, served at /page-agents/ for ?agent=/page-agents/NAME.py "
        "(default: the checkout's examples/page_agents)",
    )

    store_path: str = Field(
        ":memory:", description="SQLite file for messages kept for absent agents, known agents and subscriptions"
    )
    store_limit_per_agent: int = Field(10_000, ge=0, description="Messages kept for one absent agent at most")
    store_ttl: float = Field(7 * 86400, gt=0, description="Seconds a kept message without its own expiry lives")
    store_bytes_per_agent: int = Field(
        64 * 1024 * 1024, ge=0, description="Bytes of messages kept for one absent agent at most"
    )
    store_bytes_total: int = Field(1024 * 1024 * 1024, ge=0, description="Bytes of kept messages in all at most")

    # --- a cluster of routers sharing one Redis (router/cluster/) -------------------------------
    redis_url: str | None = Field(
        None, description="redis://HOST:PORT/DB: join the cluster of routers sharing it (instead of --store)"
    )
    redis_prefix: str = Field("mesh:", description="Prefix of the cluster's keys and channels in Redis")
    cluster_heartbeat: float = Field(1.0, gt=0, description="Seconds between a router's lease renewals")
    cluster_lease: float = Field(
        3.0, gt=0, description="Seconds a router's lease lasts: a killed router's agents may reconnect elsewhere then"
    )

    # --- who may join (SECURITY.md) ---------------------------------------------------------
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins whose pages may open the WebSocket; the server's own are added when served",
    )
    join_tokens: list[str] = Field(
        default_factory=list, repr=False, description="When any: every hello must carry one of them"
    )
    watch_tokens: list[str] = Field(
        default_factory=list,
        repr=False,
        description="When any: watching the mesh (/watch) takes one of them; else whoever may join may watch",
    )
    provisioned_agents: dict[str, str] = Field(
        default_factory=dict, repr=False, description="Agent ids the operator owns already, with their credentials"
    )
    signing: bool = Field(
        False, description="Sign and check envelopes with per-agent HMAC-SHA256 keys (derived by the router)"
    )
    signing_keys: dict[str, str] = Field(
        default_factory=dict, repr=False, description="Agents' signing keys given by the operator (signing on)"
    )
    require_signatures: bool = Field(False, description="Refuse every envelope its sender did not sign")

    @property
    def scheme(self) -> str:
        """How the server's own pages are reached: ``https`` with ``tls_cert``, else ``http``."""
        return "https" if self.tls_cert else "http"

    @property
    def signs(self) -> bool:
        return self.signing or bool(self.signing_keys) or self.require_signatures

    # --- limits (each refusal names itself; SECURITY.md) -----------------------------------
    rate_frames: float = Field(5000, gt=0, description="Frames per second one connection may send (sustained)")
    rate_bytes: float = Field(8 * 1024 * 1024, gt=0, description="Bytes per second one connection may send")
    rate_burst_seconds: float = Field(2.0, gt=0, description="Bursts of this many seconds' worth are allowed")
    max_connections_per_address: int = Field(1024, ge=1, description="Open connections from one remote address")
    max_new_agents_per_address: int = Field(
        10_000, ge=1, description="Agent ids one remote address may register while the router runs"
    )
    max_agents: int = Field(100_000, ge=1, description="Agent ids the router knows (owns credentials for) in all")
    max_subscriptions_per_agent: int = Field(256, ge=1, description="Subscriptions of one agent")
    max_topics: int = Field(10_000, ge=1, description="Topics with subscribers, in all")
    error_log_interval: float = Field(
        10.0, gt=0, description="Seconds between log lines about one address's refused frames"
    )

    @property
    def transport_max_bytes(self) -> int:
        """What the WebSocket layer accepts before it drops the connection (code 1009).

        Frames between ``max_frame_bytes`` and this get a polite error frame and the
        connection lives on; only absurd frames cost the sender its connection.
        """
        return self.max_frame_bytes * 16
