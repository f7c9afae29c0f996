"""Secure by default, tried as an attacker would over real sockets: origins, identities, tokens, limits."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import subprocess
import sys

import httpx
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from tests.conftest import ROOT, eventually, free_port, running_router
from tests.unit.conftest import unique
from webmcp_a2a.client.agent import RouterError
from webmcp_a2a.client.core import ClientCore
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import (
    Deliver,
    Envelope,
    Hello,
    InboxArgs,
    SendMessageArgs,
    SendRequest,
    SubscriptionFilter,
    Welcome,
    sign_envelope,
    signature_valid,
)

EVIL = "http://evil.example"


def note(target: str, **payload) -> SendMessageArgs:
    return SendMessageArgs(target_agent_id=target, message_type="notification", payload=payload)


async def say_hello(websocket: ClientConnection, agent_id: str, **fields) -> dict:
    await websocket.send(Hello(agent_id=agent_id, agent_type="executor", **fields).model_dump_json())
    return json.loads(await websocket.recv())


async def close_code(websocket: ClientConnection) -> int | None:
    """Read until the router closes the connection; its close code."""
    try:
        while True:
            await asyncio.wait_for(websocket.recv(), 5)
    except websockets.ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None


# --- origins ----------------------------------------------------------------------------------------


async def test_a_websocket_from_a_foreign_origin_is_refused_with_403_before_any_frame(router_server):
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(router_server.ws_url, origin=EVIL)  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_pages_of_the_servers_own_origins_may_open_the_websocket(router_server, host):
    origin = f"http://{host}:{router_server.port}"
    async with websockets.connect(router_server.ws_url, origin=origin) as websocket:  # type: ignore[arg-type]
        assert (await say_hello(websocket, unique("own-origin")))["type"] == "welcome"


async def test_an_origin_added_by_the_operator_may_open_the_websocket():
    with running_router(allowed_origins=["https://app.example"]) as server:
        async with websockets.connect(server.ws_url, origin="https://app.example") as websocket:  # type: ignore[arg-type]
            assert (await say_hello(websocket, "app-agent"))["type"] == "welcome"
        with pytest.raises(websockets.InvalidStatus):
            await websockets.connect(server.ws_url, origin=EVIL)  # type: ignore[arg-type]


def test_http_requests_from_a_foreign_origin_are_refused(router_server):
    assert httpx.get(f"{router_server.http_url}/healthz", headers={"Origin": EVIL}).status_code == 403
    assert httpx.get(f"{router_server.http_url}/healthz").status_code == 200  # no browser, no Origin


def test_pages_carry_a_content_security_policy_and_the_usual_headers(router_server):
    headers = httpx.get(f"{router_server.http_url}/").headers
    csp = headers["content-security-policy"]
    assert "script-src 'self' 'wasm-unsafe-eval'" in csp
    assert "frame-ancestors 'self'" in csp
    assert "'unsafe-eval'" not in csp.replace("'wasm-unsafe-eval'", "")
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


# --- identity -----------------------------------------------------------------------------------------


async def test_only_the_first_welcome_of_an_agent_id_carries_its_credential(raw, router_server):
    agent_id = unique("owner")
    first_socket = await raw()
    first = await say_hello(first_socket, agent_id)
    assert len(first["credential"]) >= 32
    await first_socket.close()
    await eventually(lambda: router_server.router.registry.online(agent_id) is None)
    again = await say_hello(await raw(), agent_id, credential=first["credential"])
    assert again["type"] == "welcome"
    assert again["credential"] is None


async def test_an_offline_agents_mail_goes_only_to_its_owner(agents, leave, raw):
    bob = await agents()
    credential = bob.credential
    await leave(bob)
    alice = await agents()
    sent = await alice.send_message(note(bob.agent_id, secret="for bob only"))
    assert sent.stored is True
    for presented, code in ((None, "credential_required"), ("guessed-" * 4, "bad_credential")):
        impostor = await raw()
        fields = {"credential": presented} if presented else {}
        reply = await say_hello(impostor, bob.agent_id, **fields)
        assert (reply["type"], reply["error"]["code"], reply["error"]["field"]) == ("error", code, "credential")
        assert await close_code(impostor) == 4001  # closed without a single deliver frame
    owner = await agents(agent_id=bob.agent_id, credential=credential)
    (message,) = (await owner.inbox(InboxArgs(wait_seconds=3))).messages
    assert message.payload == {"secret": "for bob only"}


async def test_an_impostor_does_not_take_over_subscriptions(agents, leave, raw, router_server):
    watcher = await agents()
    await watcher.subscribe("knowledge_update", SubscriptionFilter())
    await leave(watcher)
    reply = await say_hello(await raw(), watcher.agent_id)
    assert reply["error"]["code"] == "credential_required"
    assert router_server.router.registry.online(watcher.agent_id) is None


async def test_credentials_survive_a_restart_and_are_stored_only_as_salted_digests(tmp_path):
    store = str(tmp_path / "store.sqlite3")
    with running_router(store_path=store) as server:
        bob = await connect(server.ws_url, Hello(agent_id="bob", agent_type="executor"), reconnect=False)
        credential = bob.credential
        assert credential is not None
        bob.close()
    database = (tmp_path / "store.sqlite3").read_bytes() + (tmp_path / "store.sqlite3-wal").read_bytes()
    assert credential.encode() not in database
    with sqlite3.connect(store) as db:
        (kept,) = db.execute("SELECT hello FROM agents WHERE agent_id = 'bob'").fetchone()
        assert "credential" not in json.loads(kept)
    with running_router(store_path=store) as server:
        async with websockets.connect(server.ws_url) as impostor:
            assert (await say_hello(impostor, "bob"))["error"]["code"] == "credential_required"
        owner = await connect(server.ws_url, Hello(agent_id="bob", agent_type="executor", credential=credential))
        assert owner.state == "connected"
        owner.close()


async def test_a_cpython_agent_keeps_its_credential_in_a_file(router_server, tmp_path):
    path = tmp_path / "bot.credential"
    hello = Hello(agent_id=unique("bot"), agent_type="executor")
    first = await connect(router_server.ws_url, hello, credential_file=path, reconnect=False)
    assert path.read_text().strip() == first.credential
    assert path.stat().st_mode & 0o077 == 0
    first.close()
    await eventually(lambda: router_server.router.registry.online(hello.agent_id) is None)
    again = await connect(router_server.ws_url, hello, credential_file=path, reconnect=False)
    assert again.state == "connected"
    again.close()


async def test_a_join_token_is_required_when_the_router_has_one():
    with running_router(join_tokens=["let-me-in-0123456789"]) as server:
        for fields, code in (({}, "join_token_required"), ({"join_token": "guess"}, "bad_join_token")):
            async with websockets.connect(server.ws_url) as websocket:
                reply = await say_hello(websocket, "visitor", **fields)
                assert (reply["error"]["code"], reply["error"]["field"]) == (code, "join_token")
                assert await close_code(websocket) == 4001
        async with websockets.connect(server.ws_url) as websocket:
            assert (await say_hello(websocket, "member", join_token="let-me-in-0123456789"))["type"] == "welcome"


async def test_an_operator_can_provision_an_agent_and_its_credential():
    secret = "provisioned-secret-0123456789"
    with running_router(provisioned_agents={"ops-bot": secret}) as server:
        async with websockets.connect(server.ws_url) as websocket:
            assert (await say_hello(websocket, "ops-bot"))["error"]["code"] == "credential_required"
        async with websockets.connect(server.ws_url) as websocket:
            welcome = await say_hello(websocket, "ops-bot", credential=secret)
            assert (welcome["type"], welcome["credential"]) == ("welcome", None)


def test_a_provisioned_credential_must_be_long():
    with pytest.raises(ValueError, match="shorter than 24"), running_router(provisioned_agents={"bot": "short"}):
        pass


async def test_an_operator_can_release_an_agent_id_with_its_mail(tmp_path):
    store = str(tmp_path / "store.sqlite3")
    with running_router(store_path=store) as server:
        bob = await connect(server.ws_url, Hello(agent_id="bob", agent_type="executor"), reconnect=False)
        bob.close()
        await eventually(lambda: server.router.registry.online("bob") is None)
        alice = await connect(server.ws_url, Hello(agent_id="alice", agent_type="executor"), reconnect=False)
        assert (await alice.send_message(note("bob", old="mail"))).stored is True
        alice.close()
    released = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(ROOT / "serve.py"), "--store", store, "--release-agent", "bob"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "released agent id 'bob'" in released.stdout
    with running_router(store_path=store) as server:
        newcomer = await connect(server.ws_url, Hello(agent_id="bob", agent_type="executor"), reconnect=False)
        assert newcomer.credential is not None  # a new owner
        assert (await newcomer.inbox(InboxArgs(wait_seconds=0.5))).messages == []  # the old owner's mail is gone
        newcomer.close()


# --- malformed input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("[" * 60_000, "frame_too_deep"),
        ("[" * 100_000, "frame_too_large"),  # past max_frame_bytes: refused before its depth is looked at
        (
            '{"type":"send","id":7,"envelope":{"to_agent":"x","message_type":"notification","payload":'
            + '{"a":' * 3000
            + "1"
            + "}" * 3000
            + "}}",
            "frame_too_deep",
        ),
    ],
    ids=["array-60000-deep", "array-100000-deep", "payload-3000-deep"],
)
async def test_deeply_nested_json_gets_an_error_frame_and_the_pair_keeps_working(agents, raw, frame, code):
    alice, bob = await agents(), await agents()
    websocket = await raw()
    await websocket.send(frame)
    reply = json.loads(await websocket.recv())
    assert reply["error"]["code"] == code
    assert (await say_hello(websocket, unique("after-deep")))["type"] == "welcome"  # the connection lives on
    assert (await alice.send_message(note(bob.agent_id))).delivered is True


async def test_a_deeply_nested_relayed_frame_gets_an_error_frame(raw):
    host = await raw()
    hosted = unique("hosted")
    await host.send(json.dumps({"type": "relay", "agent_id": hosted, "frame": "[" * 50_000}))
    outer = json.loads(await host.recv())
    assert json.loads(outer["frame"])["error"]["code"] == "frame_too_deep"


# --- limits -------------------------------------------------------------------------------------------


async def test_frames_past_the_rate_limit_are_refused_and_the_connection_lives_on():
    with running_router(rate_frames=50, rate_burst_seconds=1) as server:
        async with websockets.connect(server.ws_url) as websocket:
            await say_hello(websocket, "chatty")
            heartbeat = json.dumps({"type": "heartbeat", "id": 1})
            for _ in range(200):
                await websocket.send(heartbeat)
            replies = [json.loads(await websocket.recv()) for _ in range(200)]
            refused = [r for r in replies if r["type"] == "error"]
            assert refused
            assert {r["error"]["code"] for r in refused} == {"rate_limited"}
            assert len(refused) < 200 - 40  # the burst went through
            await asyncio.sleep(1.0)  # the bucket fills again
            await websocket.send(json.dumps({"type": "heartbeat", "id": 2}))
            assert json.loads(await websocket.recv())["type"] == "result"


async def test_bytes_past_the_rate_limit_are_refused():
    with running_router(rate_bytes=10_000, rate_burst_seconds=1, max_frame_bytes=4096) as server:
        async with websockets.connect(server.ws_url) as websocket:
            await say_hello(websocket, "bulky")
            frame = json.dumps({"type": "heartbeat", "id": 1, "status": "online", "pad": "x" * 3000})
            for _ in range(10):
                await websocket.send(frame)
            codes = [json.loads(await websocket.recv())["error"]["code"] for _ in range(10)]
            assert "rate_limited" in codes


async def test_connections_past_the_per_address_limit_are_refused():
    with running_router(max_connections_per_address=2) as server:
        async with (
            websockets.connect(server.ws_url),
            websockets.connect(server.ws_url),
            websockets.connect(server.ws_url) as third,
        ):
            reply = json.loads(await third.recv())
            assert reply["error"]["code"] == "too_many_connections"
            assert await close_code(third) == 1008
        await eventually(lambda: not server.router.connections_by_address)  # the count goes down as they close
        async with websockets.connect(server.ws_url) as later:
            assert (await say_hello(later, "later"))["type"] == "welcome"


async def test_an_address_registers_a_limited_number_of_new_agent_ids():
    with running_router(max_new_agents_per_address=2) as server:
        welcomes = []
        for name in ("one", "two"):
            async with websockets.connect(server.ws_url) as websocket:
                welcomes.append(await say_hello(websocket, name))
        async with websockets.connect(server.ws_url) as websocket:
            reply = await say_hello(websocket, "three")
            assert (reply["error"]["code"], reply["error"]["field"]) == ("too_many_agents", "agent_id")
        async with websockets.connect(server.ws_url) as websocket:  # an id it owns still comes back
            assert (await say_hello(websocket, "one", credential=welcomes[0]["credential"]))["type"] == "welcome"


async def test_the_router_knows_a_limited_number_of_agents_in_all():
    with running_router(max_agents=1) as server:
        async with websockets.connect(server.ws_url) as websocket:
            assert (await say_hello(websocket, "first"))["type"] == "welcome"
        async with websockets.connect(server.ws_url) as websocket:
            assert (await say_hello(websocket, "second"))["error"]["code"] == "too_many_agents"


async def test_subscriptions_per_agent_and_topics_in_all_are_limited():
    with running_router(max_subscriptions_per_agent=2, max_topics=3) as server:
        agent = await connect(server.ws_url, Hello(agent_id="fan", agent_type="monitor"), reconnect=False)
        other = await connect(server.ws_url, Hello(agent_id="other", agent_type="monitor"), reconnect=False)
        await agent.subscribe("t1")
        await agent.subscribe("t2")
        with pytest.raises(RouterError) as refused:
            await agent.subscribe("t3")
        assert (refused.value.info.code, refused.value.info.field) == ("too_many_subscriptions", "topic")
        await other.subscribe("t3")
        with pytest.raises(RouterError) as no_topic:
            await other.subscribe("t4")
        assert no_topic.value.info.code == "too_many_subscriptions"
        await other.subscribe("t1")  # an existing topic is fine
        agent.close()
        other.close()


async def test_stored_bytes_are_limited_per_absent_agent_and_in_all():
    with running_router(store_bytes_per_agent=3000, store_bytes_total=5000) as server:
        for name in ("away-1", "away-2"):
            away = await connect(server.ws_url, Hello(agent_id=name, agent_type="executor"), reconnect=False)
            away.close()
            await eventually(lambda name=name: server.router.registry.online(name) is None)
        sender = await connect(server.ws_url, Hello(agent_id="sender", agent_type="executor"), reconnect=False)
        blob = "x" * 1000
        first = [await sender.send_message(note("away-1", blob=blob)) for _ in range(3)]
        assert [r.stored for r in first] == [True, True, False]  # about 1.3 KB each: the third is over 3000
        assert first[2].reason == "store_full"
        second = [await sender.send_message(note("away-2", blob=blob)) for _ in range(2)]
        assert [r.stored for r in second] == [True, False]  # 5000 in all
        sender.close()


async def test_a_lock_lease_is_capped_at_an_hour(raw):
    websocket = await raw()
    await say_hello(websocket, unique("greedy"))
    await websocket.send(json.dumps({"type": "lock", "id": 4, "name": "forever", "lease_seconds": 3601}))
    reply = json.loads(await websocket.recv())
    assert (reply["ref"], reply["error"]["code"], reply["error"]["field"]) == (4, "invalid_frame", "lease_seconds")


async def test_serving_beyond_loopback_without_a_token_warns(tmp_path):
    port = free_port()
    argv = [sys.executable, str(ROOT / "serve.py"), "--host", "0.0.0.0", "--port", str(port), "--store", ":memory:"]
    process = await asyncio.create_subprocess_exec(*argv, stderr=asyncio.subprocess.PIPE)
    try:
        assert process.stderr is not None
        first = await asyncio.wait_for(process.stderr.readline(), 20)
        assert b"WARNING: listening on 0.0.0.0 without a join token" in first
    finally:
        process.terminate()
        await process.wait()


async def test_repeated_refusals_are_logged_once_per_interval_not_per_frame(caplog):
    with (
        running_router(error_log_interval=60) as server,
        caplog.at_level(logging.WARNING, logger="webmcp_a2a.router"),
    ):
        async with websockets.connect(server.ws_url) as websocket:
            for _ in range(300):
                await websocket.send("not json")
            for _ in range(300):
                assert json.loads(await websocket.recv())["error"]["code"] == "malformed_frame"
    lines = [record.getMessage() for record in caplog.records if "refused frames from" in record.getMessage()]
    assert lines == ["refused frames from 127.0.0.1: 1 malformed_frame"]


# --- signed envelopes -------------------------------------------------------------------------------


def signed_send(envelope: Envelope, key: bytes, request_id: int = 1) -> str:
    envelope.signature = sign_envelope(envelope, key)
    return SendRequest(id=request_id, envelope=envelope).model_dump_json()


async def test_with_signing_on_each_recipient_gets_envelopes_signed_with_its_own_key():
    with running_router(signing=True) as server:
        alice = await connect(server.ws_url, Hello(agent_id="alice", agent_type="executor"), reconnect=False)
        bob = await connect(server.ws_url, Hello(agent_id="bob", agent_type="executor"), reconnect=False)
        assert alice.signs
        assert bob.signs
        assert alice.core.signing_key != bob.core.signing_key
        assert (await alice.send_message(note("bob", text="signed"))).delivered is True
        (message,) = (await bob.inbox(InboxArgs(wait_seconds=2))).messages
        assert bob.core.signing_key is not None
        assert signature_valid(message, bob.core.signing_key)
        assert alice.core.signing_key is not None
        assert not signature_valid(message, alice.core.signing_key)
        alice.close()
        bob.close()


async def test_a_tampered_envelope_is_refused():
    with running_router(signing=True) as server:
        bob = await connect(server.ws_url, Hello(agent_id="bob", agent_type="executor"), reconnect=False)
        async with websockets.connect(server.ws_url) as alice:
            key = bytes.fromhex((await say_hello(alice, "alice"))["signing_key"])
            envelope = Envelope(from_agent="alice", to_agent="bob", message_type="notification", payload={"pay": 10})
            frame = json.loads(signed_send(envelope, key))
            frame["envelope"]["payload"]["pay"] = 1_000_000  # changed after signing
            await alice.send(json.dumps(frame))
            reply = json.loads(await alice.recv())
            assert (reply["error"]["code"], reply["error"]["field"]) == ("bad_signature", "envelope.signature")
        assert (await bob.inbox(InboxArgs(wait_seconds=0.3))).messages == []
        bob.close()


async def test_an_unsigned_message_to_an_agent_that_requires_signatures_is_refused():
    with running_router(signing=True) as server:
        hello = Hello(agent_id="careful", agent_type="executor", require_signatures=True)
        careful = await connect(server.ws_url, hello, reconnect=False)
        async with websockets.connect(server.ws_url) as sloppy:
            await say_hello(sloppy, "sloppy")
            unsigned = Envelope(to_agent="careful", message_type="notification", payload={})
            await sloppy.send(SendRequest(id=1, envelope=unsigned).model_dump_json())
            reply = json.loads(await sloppy.recv())
            assert (reply["error"]["code"], reply["error"]["field"]) == ("signature_required", "envelope.signature")
        signer = await connect(server.ws_url, Hello(agent_id="signer", agent_type="executor"), reconnect=False)
        assert (await signer.send_message(note("careful"))).delivered is True  # the client signs
        careful.close()
        signer.close()


async def test_a_router_that_requires_signatures_refuses_every_unsigned_envelope():
    with running_router(require_signatures=True) as server:
        async with websockets.connect(server.ws_url) as websocket:
            await say_hello(websocket, "unsigned")
            envelope = Envelope(to_agent="broadcast", message_type="notification", payload={})
            await websocket.send(
                json.dumps({"type": "broadcast", "id": 3, "envelope": envelope.model_dump(mode="json")})
            )
            assert json.loads(await websocket.recv())["error"]["code"] == "signature_required"


async def test_operator_keys_are_handed_out_and_derived_keys_survive_a_restart(tmp_path):
    store = str(tmp_path / "store.sqlite3")
    given = "operator-key-0123456789abcdef"
    credentials: dict[str, str] = {}
    keys: dict[str, list[str]] = {"ops": [], "other": []}
    for _ in range(2):  # the same store, two router runs
        with running_router(store_path=store, signing_keys={"ops": given}) as server:
            for agent_id in keys:
                async with websockets.connect(server.ws_url) as websocket:
                    welcome = await say_hello(websocket, agent_id, credential=credentials.get(agent_id))
                    credentials.setdefault(agent_id, welcome["credential"])
                    keys[agent_id].append(welcome["signing_key"])
    assert keys["ops"] == [given.encode().hex()] * 2
    assert keys["other"][0] == keys["other"][1]  # derived from the router's stored secret


def test_a_client_refuses_a_delivery_whose_signature_does_not_check():
    core = ClientCore(Hello(agent_id="bob", agent_type="executor"))
    core.connect()
    core.receive(Welcome(agent_id="bob", max_frame_bytes=65536, signing_key=(b"k" * 32).hex()).model_dump_json())
    core.data_to_send()
    forged = Envelope(from_agent="alice", to_agent="bob", message_type="notification", payload={})
    forged.signature = sign_envelope(forged, b"not bob's key")
    core.receive(Deliver(envelope=forged).model_dump_json())
    (ack,) = [json.loads(frame) for frame in core.data_to_send()]
    assert (ack["accepted"], ack["reason"]) == (False, "bad_signature")
    assert [type(event).__name__ for event in core.events_received()] == ["Welcomed", "Failed"]
