"""Property-based fuzzing (Hypothesis): whatever arrives, the router and the tools answer with an error
naming the problem, and never raise.

The router is driven in process, through its real :class:`Connection` queue (whose writer collects
the frames instead of a socket), so thousands of inputs run in seconds; the socket layer is covered by
the real-socket tests.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from webmcp_a2a.browser.tools import TOOLS
from webmcp_a2a.client.agent import Agent
from webmcp_a2a.protocol import (
    CLIENT_FRAME,
    ROUTER_FRAME,
    Envelope,
    ErrorFrame,
    Hello,
    validation_error_info,
)
from webmcp_a2a.router.connection import Connection
from webmcp_a2a.router.limits import RateLimit
from webmcp_a2a.router.routing import Router
from webmcp_a2a.router.settings import RouterSettings

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=30,
)
FRAME_TYPES = ["hello", "send", "broadcast", "subscribe", "unsubscribe", "heartbeat", "discover", "lock", "barrier",
               "ack", "relay", "unrelay", "nope"]  # fmt: skip


@st.composite
def frame_like(draw: st.DrawFn) -> dict[str, Any]:
    """Objects shaped like client frames: a known type, some of the right keys, values of any kind."""
    frame: dict[str, Any] = {"type": draw(st.sampled_from(FRAME_TYPES))}
    keys = ["id", "agent_id", "agent_type", "envelope", "topic", "filter", "name", "action", "message_id", "frame",
            "subscription_id", "status", "credential", "count", "expected_agents"]  # fmt: skip
    for key in draw(st.lists(st.sampled_from(keys), max_size=6, unique=True)):
        frame[key] = draw(json_values)
    if draw(st.booleans()):
        frame["envelope"] = {"to_agent": draw(st.text(max_size=8)), "message_type": draw(json_values),
                             "payload": draw(json_values), "priority": draw(json_values)}  # fmt: skip
    return frame


texts = (
    st.text(max_size=200)
    | frame_like().map(json.dumps)
    | json_values.map(json.dumps)
    | st.integers(min_value=1, max_value=5000).map(lambda depth: "[" * depth + "]" * depth)
    | st.integers(min_value=1, max_value=5000).map(lambda depth: '{"a":' * depth + "1" + "}" * depth)
)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


class Wire:
    """A connection's far end: what the router wrote to it."""

    def __init__(self) -> None:
        self.frames: list[str] = []

    async def send(self, text: str) -> None:
        self.frames.append(text)

    async def close(self, code: int, reason: str) -> None:
        pass


def connection(router: Router, wire: Wire) -> Connection:
    return Connection(wire.send, wire.close, 1000, remote="fuzz", rate=RateLimit(router.settings))


async def exchange(router: Router, conn: Connection, wire: Wire, text: str) -> list[dict[str, Any]]:
    router.receive(conn, text)
    await conn.flushed()
    frames = [json.loads(frame) for frame in wire.frames]
    wire.frames.clear()
    return frames


@FUZZ
@given(text=texts)
def test_any_text_from_an_unregistered_connection_gets_error_frames_never_an_exception(loop, text):
    router = Router(RouterSettings(rate_frames=1e9))
    wire = Wire()
    conn = connection(router, wire)
    frames = loop.run_until_complete(exchange(router, conn, wire, text))
    for frame in frames:
        ROUTER_FRAME.validate_python(frame)  # every answer is a valid router frame
    try:
        parsed = CLIENT_FRAME.validate_json(text)
    except ValidationError:
        parsed = None
    if parsed is None:
        (only,) = frames
        assert only["type"] == "error"
        assert only["error"]["code"] in {"malformed_frame", "invalid_frame", "frame_too_deep", "frame_too_large"}


@FUZZ
@given(texts=st.lists(texts, min_size=1, max_size=5))
def test_any_text_from_a_registered_agent_is_answered_and_the_router_keeps_serving(loop, texts):
    router = Router(RouterSettings(rate_frames=1e9))
    wire = Wire()
    conn = connection(router, wire)
    hello = Hello(agent_id="fuzzed", agent_type="executor").model_dump_json()
    (welcome, *_) = loop.run_until_complete(exchange(router, conn, wire, hello))
    assert welcome["type"] == "welcome"
    for text in texts:
        for frame in loop.run_until_complete(exchange(router, conn, wire, text)):
            parsed = ROUTER_FRAME.validate_python(frame)
            if isinstance(parsed, ErrorFrame) and parsed.error.field is not None:
                assert parsed.error.message  # a named field comes with a sentence
    # still serving: a heartbeat is answered
    (answer,) = loop.run_until_complete(exchange(router, conn, wire, json.dumps({"type": "heartbeat", "id": 99})))
    assert (answer["type"], answer["ref"]) == ("result", 99)


@FUZZ
@given(data=st.dictionaries(st.sampled_from(list(Envelope.model_fields)) | st.text(max_size=5), json_values))
def test_an_invalid_envelope_is_a_validation_error_naming_a_field(data):
    try:
        Envelope.model_validate(data)
    except ValidationError as exc:
        info = validation_error_info(exc)
        assert info.code == "invalid_frame"
        assert info.message


def tool_arguments(tool_name: str) -> st.SearchStrategy[dict[str, Any]]:
    tool = next(tool for tool in TOOLS if tool.name == tool_name)
    names = [*tool.arguments.model_fields, "unknown_field"]
    return st.dictionaries(st.sampled_from(names), json_values, max_size=len(names))


@FUZZ
@given(data=st.data(), tool_name=st.sampled_from([tool.name for tool in TOOLS]))
def test_any_tool_arguments_give_a_result_or_an_error_naming_the_field(loop, data, tool_name):
    tool = next(tool for tool in TOOLS if tool.name == tool_name)
    arguments = data.draw(tool_arguments(tool_name))
    agent = Agent(Hello(agent_id="offline-agent", agent_type="executor"), request_timeout=0.05)  # never connected

    async def call() -> str | None:
        try:
            return await asyncio.wait_for(tool.call(agent, json.dumps(arguments)), 0.5)
        except TimeoutError:
            return None  # valid arguments that wait (an inbox, a request): nothing to check

    text = loop.run_until_complete(call())
    if text is None:
        tool.arguments.model_validate(arguments)  # only valid arguments may wait
        return
    result = json.loads(text)
    if result.get("isError"):
        error = result["structuredContent"]["error"]
        assert error["code"] in {"invalid_arguments", "not_connected"}
        if error["code"] == "invalid_arguments":
            assert error["field"] is None or error["field"] in result["content"][0]["text"]
    else:
        assert "structuredContent" in result
