"""The ``webmcp-a2a`` commands (click): ``serve``, and the ones that talk to a running mesh.

Every command but ``serve`` and ``call`` joins the mesh for its run as an agent of its own (a new
``cli-XXXXXXXX`` id, or ``--as`` an id whose credential ``--credential-file`` keeps), says what it
has to say through the router, prints the outcome, and leaves. Arguments are validated by the
same pydantic models as the WebMCP tools, so a bad one is named the same way.

Exit codes, for scripts: 0 done; 1 the router (or the remote agent) refused or failed it;
2 bad usage or arguments; 3 the router (or agent) could not be reached; 4 a message was not
delivered (and not kept for later).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import ssl
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
import websockets
from pydantic import ValidationError

from ..client.agent import Agent, RouterError
from ..client.cpython import WebSocketsTransport, connect
from ..protocol import (
    INBOX_MAX_TAKE,
    INBOX_MAX_WAIT_SECONDS,
    WATCHED_FRAME,
    AgentInfo,
    AgentSeen,
    BroadcastArgs,
    DiscoverArgs,
    ErrorFrame,
    ErrorInfo,
    FanoutResult,
    Hello,
    InboxArgs,
    MeshSeen,
    MessageSeen,
    ReceivedMessage,
    SendMessageArgs,
    SendResult,
    TopicSeen,
    WatchRequest,
    validation_error_info,
)
from . import remote
from . import serve as serve_program

OK, REFUSED, USAGE, UNREACHABLE, NOT_DELIVERED = 0, 1, 2, 3, 4
DEFAULT_ROUTER = "ws://127.0.0.1:8765/a2a"


@dataclass
class MeshOptions:
    """How to join the mesh, from the group's options."""

    router: str
    agent_id: str | None
    agent_type: str
    token: str | None
    credential_file: Path | None
    ca_cert: Path | None
    timeout: float
    as_json: bool

    def hello(self) -> Hello:
        agent_id = self.agent_id or f"cli-{secrets.token_hex(4)}"
        return Hello(agent_id=agent_id, agent_type=self.agent_type, join_token=self.token)

    def ssl_context(self) -> ssl.SSLContext | None:
        return ssl.create_default_context(cafile=str(self.ca_cert)) if self.ca_cert else None


def fail(code: int, message: str) -> NoReturn:
    click.echo(f"webmcp-a2a: {message}", err=True)
    sys.exit(code)


def refused(info: ErrorInfo) -> str:
    return f"{info.code}: {info.message}" + (f" (field: {info.field})" if info.field else "")


T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def validated(model: Callable[..., T], **fields: Any) -> T:
    """The command's arguments as the tool's model; a bad one exits 2 naming its field."""
    try:
        return model(**fields)
    except ValidationError as exc:
        fail(USAGE, refused(validation_error_info(exc, "invalid_arguments")))


def json_object(text: str, name: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(USAGE, f"{name} is not JSON: {exc}")
    if not isinstance(value, dict):
        fail(USAGE, f"{name} must be a JSON object")
    return value


def payload_of(payload: str, text: str | None) -> dict[str, Any]:
    body = json_object(payload, "--payload")
    return {**body, "text": text} if text is not None else body


def in_mesh(options: MeshOptions, action: Callable[[Agent], Awaitable[int]]) -> NoReturn:
    """Join, run ``action``, leave; exit with its code (or with why it could not run)."""
    sys.exit(asyncio.run(_session(options, action)))


async def _session(options: MeshOptions, action: Callable[[Agent], Awaitable[int]]) -> int:
    try:
        agent = await asyncio.wait_for(
            connect(
                options.router,
                options.hello(),
                reconnect=False,
                credential_file=options.credential_file,
                ssl_context=options.ssl_context(),
            ),
            options.timeout,
        )
    except RouterError as exc:
        fail(REFUSED, f"the router refused this agent: {refused(exc.info)}")
    except (OSError, TimeoutError, websockets.WebSocketException) as exc:
        fail(UNREACHABLE, f"cannot reach the router at {options.router}: {exc or type(exc).__name__}")
    try:
        return await action(agent)
    except RouterError as exc:
        fail(REFUSED, refused(exc.info))
    finally:
        transport = agent.transport
        agent.close()
        if isinstance(transport, WebSocketsTransport):  # a clean close, not a dropped connection
            with contextlib.suppress(Exception):
                await asyncio.wait_for(transport.closed, 2)


def show(options: MeshOptions, result: Any, text: str) -> None:
    click.echo(result.model_dump_json(indent=2) if options.as_json else text)


# --- the commands -----------------------------------------------------------------------


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Exit codes: 0 done, 1 refused or failed, 2 bad usage, 3 unreachable, 4 not delivered.",
)
@click.option(
    "--router", envvar="WEBMCP_A2A_ROUTER", default=DEFAULT_ROUTER, show_default=True, help="The router's WebSocket URL"
)
@click.option(
    "--as", "agent_id", envvar="WEBMCP_A2A_AGENT_ID", help="Join as this agent id (default: a new cli-XXXXXXXX)"
)
@click.option("--agent-type", default="cli", show_default=True, help="The agent type this command joins as")
@click.option("--token", envvar="WEBMCP_A2A_TOKEN", help="The router's join token, when it requires one")
@click.option(
    "--credential-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Keeps the --as id's credential: read when present, written when the router issues one",
)
@click.option(
    "--ca-cert",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="CA of a wss:// router's (or an A2A agent's) certificate",
)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds to wait")
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON")
@click.pass_context
def cli(ctx: click.Context, /, **options: Any) -> None:
    """Python agents in web pages, one mesh: run the router, and talk to the mesh from a shell."""
    ctx.obj = MeshOptions(**options)


@cli.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def serve(arguments: tuple[str, ...]) -> None:
    """Serve the test page and the router (the flags of serve.py; see serve --help)."""
    serve_program.main(list(arguments))


@cli.command()
@click.option("--type", "agent_type", help="Only agents of this type")
@click.option("--capability", help="Only agents that declared this capability")
@click.option("--offline", is_flag=True, help="Also list agents that are offline now")
@click.pass_obj
def agents(options: MeshOptions, agent_type: str | None, capability: str | None, offline: bool) -> NoReturn:
    """List the agents of the mesh (and the remote A2A agents the router knows)."""
    args = validated(DiscoverArgs, agent_type=agent_type, capability=capability, include_offline=offline)

    async def run(agent: Agent) -> int:
        result = await agent.discover(args)
        result.agents = [info for info in result.agents if info.agent_id != agent.agent_id]
        show(options, result, _table(result.agents))
        return OK

    in_mesh(options, run)


def _table(agents: list[AgentInfo]) -> str:
    if not agents:
        return "no agents"
    now = time.time()
    rows = [("AGENT", "TYPE", "STATUS", "LAST SEEN", "CAPABILITIES / URL")]
    for info in sorted(agents, key=lambda info: (info.remote, info.agent_id)):
        where = info.url if info.remote else ", ".join(info.capabilities)
        rows.append((info.agent_id, info.agent_type, info.status, _ago(now - info.last_seen), where or "-"))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]]) for row in rows
    )


def _ago(seconds: float) -> str:
    if seconds < 60:
        return f"{max(seconds, 0):.0f}s ago"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.1f}h ago"


def _message_options(command: F) -> F:
    for option in (
        click.option("--type", "message_type", default="notification", show_default=True, help="The message type"),
        click.option("--priority", type=int, default=5, show_default=True, help="1 (lowest) to 10 (highest)"),
        click.option("--text", help='Shorthand for a "text" field in the payload'),
        click.option("--payload", default="{}", show_default=True, help="The message body: a JSON object"),
    ):
        command = option(command)
    return command


def _message_fields(payload: str, text: str | None, priority: int, message_type: str) -> dict[str, Any]:
    return {"payload": payload_of(payload, text), "priority": priority, "message_type": message_type}


@cli.command()
@click.argument("target")
@_message_options
@click.option("--correlation-id", help="Ties a task_response to its task_request")
@click.option("--ttl", type=float, help="Drop the message if it is not delivered within this many seconds")
@click.pass_obj
def send(
    options: MeshOptions,
    target: str,
    payload: str,
    text: str | None,
    priority: int,
    message_type: str,
    correlation_id: str | None,
    ttl: float | None,
) -> NoReturn:
    """Send a message to TARGET: an agent id, or a remote A2A agent (registry id or URL)."""
    fields = _message_fields(payload, text, priority, message_type)
    args = validated(SendMessageArgs, target_agent_id=target, correlation_id=correlation_id, ttl_seconds=ttl, **fields)

    async def run(agent: Agent) -> int:
        result = await agent.send_message(args)
        show(options, result, _sent(target, result))
        return OK if result.delivered or result.stored else NOT_DELIVERED

    in_mesh(options, run)


def _sent(target: str, result: SendResult) -> str:
    if result.delivered:
        return f"delivered to {target} ({result.target_status}), message {result.message_id}"
    if result.stored:
        return f"kept for {target} ({result.target_status}): delivered when it is back, message {result.message_id}"
    return f"not delivered to {target} ({result.target_status}): {result.reason}"


@cli.command()
@_message_options
@click.option("--to-type", "agent_type", default="all", show_default=True, help="Only agents of this type")
@click.pass_obj
def broadcast(
    options: MeshOptions, payload: str, text: str | None, priority: int, agent_type: str, message_type: str
) -> NoReturn:
    """Send a message to every agent (of a type) online now."""
    args = validated(BroadcastArgs, agent_type=agent_type, **_message_fields(payload, text, priority, message_type))

    async def run(agent: Agent) -> int:
        result = await agent.broadcast(args)
        show(options, result, _fanout("broadcast", result))
        return OK

    in_mesh(options, run)


@cli.command()
@click.argument("topic")
@click.option("--text", help='Shorthand for a "text" field in the payload')
@click.option("--payload", default="{}", show_default=True, help="The event body: a JSON object")
@click.pass_obj
def publish(options: MeshOptions, topic: str, payload: str, text: str | None) -> NoReturn:
    """Publish an event on TOPIC to its subscribers."""
    body = payload_of(payload, text)

    async def run(agent: Agent) -> int:
        result = await agent.publish(topic, body)
        show(options, result, _fanout(f"published on {topic}", result))
        return OK

    in_mesh(options, run)


def _fanout(what: str, result: FanoutResult) -> str:
    names = f": {', '.join(result.recipient_ids)}" if result.recipient_ids else ""
    return f"{what}: delivered to {result.delivered_count} of {result.recipients}{names}"


@cli.command()
@click.option("--topic", "topics", multiple=True, help="Also follow this topic (repeatable)")
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many messages")
@click.option("--seconds", type=click.FloatRange(min=0), help="Stop after this many seconds")
@click.option("--mesh", is_flag=True, help="Watch the whole mesh instead: agents and every message's route")
@click.option("--watch-token", help="The router's watch token (default: --token), when it has one")
@click.pass_obj
def tail(
    options: MeshOptions,
    topics: tuple[str, ...],
    count: int | None,
    seconds: float | None,
    mesh: bool,
    watch_token: str | None,
) -> NoReturn:
    """Print the messages this agent receives (with --as: that agent's, kept mail first), and topics' events;
    with --mesh, what the whole mesh does (who comes and goes, every message's route, no payloads)."""

    async def run(agent: Agent) -> int:
        for topic in topics:
            await agent.subscribe(topic)
        if not options.as_json:
            following = ", ".join([agent.agent_id, *(f"topic {topic}" for topic in topics)])
            click.echo(f"following {following} (Ctrl-C stops)", err=True)
        stop = Stop(count, seconds)  # counted once joined and following
        # Taken from the inbox, not caught on arrival: mail kept while the agent was away arrives
        # with the welcome, before any command could listen; and what is taken is printed, no more.
        while not stop.reached():
            wait = stop.seconds_left(INBOX_MAX_WAIT_SECONDS)
            taken = await agent.inbox(InboxArgs(wait_seconds=wait, max_messages=stop.items_left(INBOX_MAX_TAKE)))
            for message in taken.messages:
                click.echo(message.model_dump_json() if options.as_json else _line(message))
            stop.seen += len(taken.messages)
        return OK

    with contextlib.suppress(KeyboardInterrupt):
        if mesh:
            sys.exit(asyncio.run(_watch(options, watch_token or options.token, count, seconds)))
        in_mesh(options, run)
    sys.exit(OK)


@dataclass
class Stop:
    """When a following command (tail) stops: after ``count`` items or ``seconds``, whichever comes first."""

    count: int | None
    seconds: float | None
    seen: int = 0
    deadline: float | None = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = None if self.seconds is None else time.monotonic() + self.seconds

    def seconds_left(self, at_most: float | None = None) -> float | None:
        """How long to wait now (never below 0, at most ``at_most``); None: without limit."""
        if self.deadline is None:
            return at_most
        left = max(self.deadline - time.monotonic(), 0.0)
        return left if at_most is None else min(left, at_most)

    def items_left(self, unbounded: int) -> int:
        return unbounded if self.count is None else min(self.count - self.seen, unbounded)

    def reached(self) -> bool:
        return (self.count is not None and self.seen >= self.count) or self.seconds_left() == 0


async def _watch(options: MeshOptions, token: str | None, count: int | None, seconds: float | None) -> int:
    url = options.router.removesuffix("/a2a") + "/watch"
    try:
        socket = await asyncio.wait_for(websockets.connect(url, ssl=options.ssl_context()), options.timeout)
    except (OSError, TimeoutError, websockets.WebSocketException) as exc:
        fail(UNREACHABLE, f"cannot reach the router at {url}: {exc or type(exc).__name__}")
    async with socket:
        await socket.send(WatchRequest(token=token).model_dump_json())
        stop = Stop(count, seconds)
        while not stop.reached():
            try:
                text = await asyncio.wait_for(socket.recv(), stop.seconds_left())
            except TimeoutError:
                break
            except websockets.ConnectionClosed:
                fail(REFUSED, "the router closed the watch")
            frame = WATCHED_FRAME.validate_json(text)
            if isinstance(frame, ErrorFrame):
                fail(REFUSED, f"the router refused to be watched: {refused(frame.error)}")
            click.echo(frame.model_dump_json() if options.as_json else _seen(frame))
            stop.seen += not isinstance(frame, MeshSeen)
    return OK


def _seen(frame: MeshSeen | AgentSeen | TopicSeen | MessageSeen) -> str:
    if isinstance(frame, MeshSeen):
        online = [info.agent_id for info in frame.agents if info.status != "offline"]
        return f"mesh: {len(online)} online ({', '.join(online) or 'none'}), {len(frame.topics)} topics"
    if isinstance(frame, AgentSeen):
        info = frame.agent
        return f"agent {info.agent_id} ({info.agent_type}, {info.where or 'remote'}) is {info.status}"
    if isinstance(frame, TopicSeen):
        return f"topic {frame.topic}: {', '.join(frame.subscribers) or 'no subscribers'}"
    at = time.strftime("%H:%M:%S", time.localtime(frame.at))
    correlation = f" [{frame.correlation_id}]" if frame.correlation_id else ""
    recipients = ", ".join(frame.recipients)
    return f"{at} {frame.from_agent} -> {frame.to_agent}: {frame.message_type}{correlation} to {recipients}"


def _line(message: ReceivedMessage) -> str:
    at = time.strftime("%H:%M:%S", time.localtime(message.received_at))
    via = f" [{message.subscription_id}]" if message.subscription_id else ""
    payload = json.dumps(message.payload, ensure_ascii=False)
    return f"{at} {message.from_agent} -> {message.to_agent}{via} {message.message_type}: {payload}"


@cli.command()
@click.argument("url")
@click.argument("text", required=False)
@click.option("--data", help="A data part: a JSON object")
@click.option("--context-id", help="Continue this conversation")
@click.option("--task-id", help="Continue this task (one that asked for input)")
@click.pass_obj
def call(
    options: MeshOptions, url: str, text: str | None, data: str | None, context_id: str | None, task_id: str | None
) -> NoReturn:
    """Send TEXT (and --data) to the A2A agent at URL (its card's URL or its base URL); print its answer."""
    if text is None and data is None:
        fail(USAGE, "give TEXT, --data, or both")
    request = remote.Request(
        url=url,
        text=text,
        data=json_object(data, "--data") if data is not None else None,
        context_id=context_id,
        task_id=task_id,
    )
    try:
        answer = asyncio.run(remote.call(request, options.timeout, options.ca_cert))
    except remote.Unreachable as exc:
        fail(UNREACHABLE, str(exc))
    except remote.Refused as exc:
        fail(REFUSED, str(exc))
    click.echo(json.dumps(answer.as_dict(), indent=2) if options.as_json else answer.text())
    sys.exit(OK if answer.succeeded else REFUSED)


def main() -> None:
    cli(prog_name="webmcp-a2a")
