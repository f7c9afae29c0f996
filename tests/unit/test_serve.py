"""serve.py's flags (``webmcp-a2a serve``), each setting the router setting it names, and how the router is served."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from webmcp_a2a import sdk_tracing
from webmcp_a2a.cli import serve
from webmcp_a2a.router.cluster.redis_store import Keys, RedisStore


def test_every_limit_flag_sets_its_setting():
    args = serve.parse_args(["--store-limit", "7", "--rate-frames", "12.5", "--max-topics", "3", "--ack-timeout", "2"])
    settings = serve.settings_of(args)
    assert (settings.store_limit_per_agent, settings.rate_frames, settings.max_topics) == (7, 12.5, 3)
    assert settings.ack_timeout == 2.0


def test_join_tokens_and_provisioned_agents_come_from_flags_and_files(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("# team tokens\nfrom-file-token\n\n")
    agents = tmp_path / "agents.json"
    agents.write_text(json.dumps({"ops-bot": "a-long-enough-secret-0123456789"}))
    args = serve.parse_args(
        [
            "--token",
            "flag-token",
            "--tokens-file",
            str(tokens),
            "--agents-file",
            str(agents),
            "--allow-origin",
            "https://a.example",
        ]
    )
    settings = serve.settings_of(args)
    assert settings.join_tokens == ["flag-token", "from-file-token"]
    assert settings.provisioned_agents == {"ops-bot": "a-long-enough-secret-0123456789"}
    assert settings.allowed_origins == ["https://a.example"]


def test_the_cluster_flags_set_the_cluster_settings():
    args = serve.parse_args(
        [
            "--redis",
            "redis://127.0.0.1:6390/2",
            "--redis-prefix",
            "east:",
            "--cluster-lease",
            "5",
            "--cluster-heartbeat",
            "1.5",
        ]
    )
    settings = serve.settings_of(args)
    assert (settings.redis_url, settings.redis_prefix) == ("redis://127.0.0.1:6390/2", "east:")
    assert (settings.cluster_lease, settings.cluster_heartbeat) == (5.0, 1.5)


def test_releasing_an_agent_in_a_clusters_redis_forgets_its_credential(redis_url, capsys):
    store = RedisStore(redis_url, "test", Keys("release-test:"))
    store.set_credential("gone", b"s" * 16, b"d" * 32)

    serve.main(["--redis", redis_url, "--redis-prefix", "release-test:", "--release-agent", "gone"])

    assert store.credential("gone") is None
    assert "released agent id 'gone'" in capsys.readouterr().out
    store.close()


def test_the_router_runs_on_uvloops_event_loop(router_server):
    import uvloop

    assert isinstance(router_server.loop, uvloop.Loop)


def test_a_request_head_past_16_kb_is_refused_and_the_router_serves_on(router_server):
    address = ("127.0.0.1", router_server.port)
    with socket.create_connection(address, timeout=5) as sock:
        # A head that never ends: the router answers before it has read the whole of it.
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 20_000)
        assert sock.recv(65536).startswith(b"HTTP/1.1 400 ")
    with socket.create_connection(address, timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("entry", ["webmcp_a2a.cli.serve", "webmcp_a2a.router"])  # serve.py's, and an embedder's
@pytest.mark.parametrize(("asked", "traced"), [(None, "False"), ("true", "True")])
def test_the_a2a_sdks_tracing_is_off_unless_asked_for(entry, asked, traced):
    env = {k: v for k, v in os.environ.items() if k != sdk_tracing.SWITCH}
    if asked is not None:
        env[sdk_tracing.SWITCH] = asked
    check = f"import {entry}; from a2a.utils import telemetry; print(telemetry.otel_enabled)"
    answer = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, check=True)
    assert answer.stdout.strip() == traced
