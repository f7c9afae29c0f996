"""Two hubs, one mesh: a router that registers another hub's card reaches that hub's agents as ID@HUB.
Two real ``serve.py`` processes on loopback, agents on each."""

from __future__ import annotations

import asyncio
import ssl
import sys
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.certificates import PKI
from tests.conftest import ROOT, free_port, serving, spawned
from webmcp_a2a.client.agent import Agent, RouterError
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import A2A_REMOTE_KEY, A2ARemoteUpdate, DiscoverArgs, Hello, InboxArgs, SendMessageArgs


async def answer_as(name: str, task) -> None:
    await task.complete(f"{name} did: {task.text}")


async def join(url: str, agent_id: str, trusting: ssl.SSLContext | None = None) -> Agent:
    hello = Hello(agent_id=agent_id, agent_type="executor", capabilities=["chores"])
    agent = await connect(url.replace("http", "ws") + "/a2a", hello, reconnect=False, ssl_context=trusting)
    agent.on_task(lambda task: answer_as(agent_id, task))
    return agent


async def register(hub: str, card_url: str) -> dict:
    async with httpx.AsyncClient(timeout=15) as http:
        answer = await http.post(f"{hub}/registry", json={"card_url": card_url})
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


async def final_answer(agent: Agent, task_id: str) -> A2ARemoteUpdate:
    while True:
        got = await agent.inbox(InboxArgs(wait_seconds=10, correlation_id=task_id, max_messages=1))
        assert got.messages, f"no answer for {task_id}"
        update = A2ARemoteUpdate.model_validate(got.messages[0].payload[A2A_REMOTE_KEY])
        if update.final:
            return update


@pytest.fixture
async def hubs() -> AsyncIterator[tuple[str, str]]:
    with serving("--hub-name", "hub-a") as a, serving("--hub-name", "hub-b") as b:
        yield a, b


@pytest.fixture
async def alice(hubs) -> AsyncIterator[Agent]:
    """An agent of hub A."""
    agent = await join(hubs[0], "alice")
    yield agent
    agent.close()


@pytest.fixture
async def bob(hubs) -> AsyncIterator[Agent]:
    """An agent of hub B."""
    agent = await join(hubs[1], "bob")
    yield agent
    agent.close()


async def test_a_registered_hubs_agents_are_listed_as_id_at_hub(hubs, alice, bob):
    a, b = hubs
    registered = await register(b, a)
    assert registered["id"] == "hub-a"  # the hub's own name
    found = {info.agent_id: info for info in (await bob.discover(DiscoverArgs())).agents}
    assert (found["alice@hub-a"].agent_type, found["alice@hub-a"].status) == ("executor", "online")
    assert found["alice@hub-a"].capabilities == ["chores"]
    assert found["alice@hub-a"].url == f"{a}/agents/alice/.well-known/agent-card.json"
    assert "bob@hub-b" not in found  # a hub lists its own agents only: nothing comes back round


async def test_tasks_cross_the_link_both_ways(hubs, alice, bob):
    a, b = hubs
    await register(b, a)
    await register(a, b)
    to_alice = await bob.send_message(
        SendMessageArgs(target_agent_id="alice@hub-a", message_type="task_request", payload={"text": "dishes"})
    )
    assert (await final_answer(bob, to_alice.remote_task_id or "")).text == "alice did: dishes"
    to_bob = await alice.send_message(
        SendMessageArgs(target_agent_id="bob@hub-b", message_type="task_request", payload={"text": "laundry"})
    )
    assert (await final_answer(alice, to_bob.remote_task_id or "")).text == "bob did: laundry"


async def test_a_hub_that_goes_away_marks_its_agents_offline_and_sends_fail():
    port = free_port()
    with serving("--hub-name", "hub-b") as b:
        bob = await join(b, "bob")
        try:
            with serving("--hub-name", "hub-a", port=port) as a:
                alice = await join(a, "alice")
                await register(b, a)
                alice.close()
            async with httpx.AsyncClient(timeout=15) as http:
                assert (await http.post(f"{b}/registry/hub-a/check")).json()["health"]["status"] == "failing"
            found = {info.agent_id: info for info in (await bob.discover(DiscoverArgs(include_offline=True))).agents}
            assert found["alice@hub-a"].status == "offline"
            assert "alice@hub-a" not in {info.agent_id for info in (await bob.discover(DiscoverArgs())).agents}
            with pytest.raises(RouterError) as failure:
                await bob.send_message(
                    SendMessageArgs(target_agent_id="alice@hub-a", message_type="task_request", payload={"text": "?"})
                )
            assert failure.value.info.code == "remote_unreachable"
        finally:
            bob.close()


KEY_A, KEY_B = "key-that-b-shows-a-0123", "key-that-a-shows-b-0123"


async def federate(a: str, b: str, key_a: str = KEY_A, key_b: str = KEY_B, trust: str = "api-key") -> None:
    """Each hub registers the other: what it presents there, and what it expects from it."""
    async with httpx.AsyncClient(timeout=15) as http:
        for here, there, send, accept in ((b, a, key_a, KEY_B), (a, b, key_b, KEY_A)):
            body = {"card_url": there, "trust": trust}
            if trust == "api-key":
                body |= {"send_key": send, "accept_key": accept}
            answer = await http.post(f"{here}/registry", json=body)
            assert answer.status_code == 201, answer.text
            assert "send_key" not in answer.json()  # keys are never shown


def note(target: str, text: str) -> SendMessageArgs:
    return SendMessageArgs(target_agent_id=target, message_type="notification", payload={"text": text})


async def test_direct_messages_cross_under_api_key_from_their_true_sender(hubs, alice, bob):
    a, b = hubs
    await federate(a, b)
    sent = await bob.send_message(note("alice@hub-a", "hi alice"))
    assert (sent.delivered, sent.target_status) == (True, "online")
    (got,) = (await alice.inbox(InboxArgs(wait_seconds=5))).messages
    assert (got.from_agent, got.message_type, got.payload) == ("bob@hub-b", "notification", {"text": "hi alice"})
    back = await alice.send_message(note(got.from_agent or "", "hi bob"))  # a reply goes back the same way
    assert back.delivered is True
    (reply,) = (await bob.inbox(InboxArgs(wait_seconds=5))).messages
    assert (reply.from_agent, reply.payload) == ("alice@hub-a", {"text": "hi bob"})


@pytest.mark.parametrize(
    ("trust", "key_a"), [("none", KEY_A), ("api-key", "a-wrong-key-0123456789")], ids=["tier-none", "wrong-key"]
)
async def test_direct_messages_are_refused_under_none_or_with_a_wrong_key(hubs, alice, bob, trust, key_a):
    a, b = hubs
    await federate(a, b, key_a=key_a, trust=trust)
    with pytest.raises(RouterError) as refused:
        await bob.send_message(note("alice@hub-a", "let me in"))
    assert (refused.value.info.code, refused.value.info.field) == ("remote_refused", "target_agent_id")
    assert (await alice.inbox(InboxArgs(wait_seconds=0.5))).messages == []


async def test_a_registration_under_api_key_needs_a_key(hubs):
    a, b = hubs
    async with httpx.AsyncClient(timeout=15) as http:
        answer = await http.post(f"{b}/registry", json={"card_url": a, "trust": "api-key"})
    assert (answer.status_code, answer.json()["field"]) == (422, "accept_key")


async def test_an_agent_the_hub_does_not_know_is_a_tool_error(hubs, bob):
    a, b = hubs
    await register(b, a)
    with pytest.raises(RouterError) as failure:
        await bob.send_message(note("nobody@hub-a", "anyone?"))
    assert (failure.value.info.code, failure.value.info.field) == ("remote_unreachable", "target_agent_id")
    assert "HTTP 404" in failure.value.info.message


@pytest.fixture(scope="module")
def token_server() -> Iterator[str]:
    port = free_port()
    script = ROOT / "tests" / "servers" / "oauth_token_server.py"
    with spawned([sys.executable, str(script), "--port", str(port)], f"http://127.0.0.1:{port}/issued"):
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(("secret", "delivered"), [("secret-of-hub-b", True), ("a-guess", False)], ids=["ok", "bad"])
async def test_under_bearer_the_sending_hub_gets_its_token_by_client_credentials(
    hubs, alice, bob, token_server, secret, delivered
):
    a, b = hubs
    async with httpx.AsyncClient(timeout=15) as http:
        oauth = {"token_url": f"{token_server}/token", "client_id": "hub-b", "client_secret": secret}
        on_b = await http.post(f"{b}/registry", json={"card_url": a, "trust": "bearer", **oauth})
        on_a = await http.post(
            f"{a}/registry", json={"card_url": b, "trust": "bearer", "accept_key": "token-of-hub-b-0123456789"}
        )
        assert (on_b.status_code, on_a.status_code) == (201, 201)
        assert "client_secret" not in on_b.json()
        issued = (await http.get(f"{token_server}/issued")).json()["issued"]
    if delivered:
        for n in range(2):
            assert (await bob.send_message(note("alice@hub-a", f"bearer {n}"))).delivered is True
        got = (await alice.inbox(InboxArgs(wait_seconds=5, max_messages=2))).messages
        assert [(m.from_agent, m.payload["text"]) for m in got] == [
            ("bob@hub-b", "bearer 0"),
            ("bob@hub-b", "bearer 1"),
        ]
        async with httpx.AsyncClient(timeout=15) as http:
            assert (await http.get(f"{token_server}/issued")).json()["issued"] == issued + 1  # kept, not refetched
    else:
        with pytest.raises(RouterError) as refused:
            await bob.send_message(note("alice@hub-a", "let me in"))
        assert refused.value.info.code == "remote_refused"
        assert "token URL" in refused.value.info.message


async def test_the_hub_card_declares_what_federated_hubs_present_and_agent_cards_do_not(hubs, alice):
    a, _ = hubs
    async with httpx.AsyncClient(timeout=15) as http:
        hub = (await http.get(f"{a}/.well-known/agent-card.json")).json()
        agent = (await http.get(f"{a}/agents/alice/.well-known/agent-card.json")).json()
    assert hub["securitySchemes"]["hubKey"]["apiKeySecurityScheme"]["name"] == "X-A2A-Hub-Key"
    assert hub["securitySchemes"]["hubToken"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert "securitySchemes" not in agent  # an ordinary client needs nothing (no join token here)


# --- trust tier mtls: each hub serves HTTPS and knows the other by its client certificate ---------


@pytest.fixture
async def tls_hubs(pki) -> AsyncIterator[tuple[str, str]]:
    with (
        serving("--hub-name", "hub-a", *pki.serve_flags("server-a")) as a,
        serving("--hub-name", "hub-b", *pki.serve_flags("server-b")) as b,
    ):
        yield a, b


async def federate_by_certificate(pki: PKI, a: str, b: str, b_shows: str = "client-b") -> None:
    """Each hub registers the other under mtls; hub B shows ``b_shows``."""
    async with httpx.AsyncClient(timeout=15, verify=pki.trusting()) as http:
        for here, there, shows, expects in ((b, a, b_shows, "client-a"), (a, b, "client-a", "client-b")):
            answer = await http.post(f"{here}/registry", json=pki.mtls_registration(there, shows, expects))
            assert answer.status_code == 201, answer.text


async def test_under_mtls_direct_messages_and_tasks_cross_between_https_hubs(pki, tls_hubs):
    a, b = tls_hubs
    await federate_by_certificate(pki, a, b)
    alice, bob = await join(a, "alice", pki.trusting()), await join(b, "bob", pki.trusting())
    try:
        assert (await bob.send_message(note("alice@hub-a", "hi over tls"))).delivered is True
        (got,) = (await alice.inbox(InboxArgs(wait_seconds=5))).messages
        assert (got.from_agent, got.payload) == ("bob@hub-b", {"text": "hi over tls"})
        task = await alice.send_message(
            SendMessageArgs(target_agent_id="bob@hub-b", message_type="task_request", payload={"text": "ironing"})
        )
        assert (await final_answer(alice, task.remote_task_id or "")).text == "bob did: ironing"
    finally:
        alice.close()
        bob.close()


async def test_under_mtls_a_certificate_other_than_the_registered_one_is_refused(pki, tls_hubs):
    a, b = tls_hubs
    await federate_by_certificate(pki, a, b, b_shows="stranger")  # issued by the same CA, but not hub-b's
    alice, bob = await join(a, "alice", pki.trusting()), await join(b, "bob", pki.trusting())
    try:
        with pytest.raises(RouterError) as refused:
            await bob.send_message(note("alice@hub-a", "let me in"))
        assert refused.value.info.code == "remote_refused"
        assert "did not present the mtls credential" in refused.value.info.message
        assert (await alice.inbox(InboxArgs(wait_seconds=0.5))).messages == []
    finally:
        alice.close()
        bob.close()


@pytest.mark.parametrize(
    ("extra", "field"),
    [({}, "accept_key"), ({"accept_key": "not-a-fingerprint-at-all"}, "accept_key"),
     ({"client_cert": "/nonexistent/client.pem"}, "client_cert"), ({"ca_cert": "/nonexistent/ca.pem"}, "ca_cert")],
    ids=["nothing", "bad-fingerprint", "missing-cert", "missing-ca"],
)  # fmt: skip
async def test_an_mtls_registration_names_the_field_it_cannot_use(pki, tls_hubs, extra, field):
    a, b = tls_hubs
    async with httpx.AsyncClient(timeout=15, verify=pki.trusting()) as http:
        body = {"card_url": a, "trust": "mtls", "ca_cert": str(pki.ca.cert)}
        if field != "accept_key":
            body["accept_key"] = pki.issued["client-a"].fingerprint
        answer = await http.post(f"{b}/registry", json=body | extra)
    assert (answer.status_code, answer.json()["field"]) == (422, field)


async def test_an_https_hub_card_declares_the_client_certificate_scheme_and_https_urls(pki, tls_hubs):
    a, _ = tls_hubs
    async with httpx.AsyncClient(timeout=15, verify=pki.trusting()) as http:
        card = (await http.get(f"{a}/.well-known/agent-card.json")).json()
    assert "mtlsSecurityScheme" in card["securitySchemes"]["hubCertificate"]
    assert card["supportedInterfaces"][0]["url"].startswith("https://127.0.0.1:")


async def test_an_https_hub_stops_on_sigterm_while_another_hub_keeps_an_idle_connection_to_it(pki):
    with serving("--hub-name", "hub-a", *pki.serve_flags("server-a")) as a, serving(*pki.serve_flags("server-b")) as b:
        async with httpx.AsyncClient(timeout=15, verify=pki.trusting()) as http:
            answer = await http.post(f"{a}/registry", json={"card_url": b, "ca_cert": str(pki.ca.cert)})
            assert answer.status_code == 201, answer.text
        # Hub A's registry client now pools a connection to B that it does not read. Past uvicorn's 5 s
        # keep-alive timeout B starts a TLS close, whose close_notify A answers only when it next reads.
        await asyncio.sleep(6)
    # Leaving the blocks sent SIGTERM to B, then A; each must exit within spawned()'s 10 s (not ~30 s).
