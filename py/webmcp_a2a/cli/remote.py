"""``webmcp-a2a call``: one message to a standard A2A agent with the official a2a-sdk client.

The agent is found by its card (its URL, or its base URL + the well-known card path), the message
is sent blocking (the agent answers when its task is done, or needs input), and the answer is
summarised in the mesh's terms: state, text, data, artifacts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2AClientError, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, StreamResponse

from ..protocol import new_message_id
from ..router.a2a.tasks import state_name
from ..router.remotes.cards import CardError, card_url, fetch_card

FAILED_STATES = {"failed", "rejected", "canceled"}


class Unreachable(Exception):
    """No answer from the agent's host, or no card where it should be."""


class Refused(Exception):
    """The agent (or its host) answered with an error."""


@dataclass
class Request:
    url: str
    text: str | None = None
    data: dict[str, Any] | None = None
    context_id: str | None = None
    task_id: str | None = None


@dataclass
class Answer:
    state: str
    task_id: str | None
    context_id: str | None
    texts: list[str] = field(default_factory=list)
    data: list[Any] = field(default_factory=list)
    artifacts: dict[str, list[str]] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.state not in FAILED_STATES

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        lines = [f"{self.state} (task {self.task_id or '-'}, context {self.context_id or '-'})"]
        lines += self.texts
        lines += [f"data: {item}" for item in self.data]
        for name, texts in self.artifacts.items():
            lines += [f"artifact {name}: {text}" for text in texts]
        if self.state == "input-required":
            lines.append(f"(answer with: call URL TEXT --task-id {self.task_id} --context-id {self.context_id})")
        return "\n".join(lines)


async def call(request: Request, timeout: float, ca_cert: Path | None = None) -> Answer:
    parts = ([new_text_part(request.text)] if request.text is not None else []) + (
        [new_data_part(request.data)] if request.data is not None else []
    )
    message = Message(role=Role.ROLE_USER, message_id=new_message_id(), parts=parts)
    if request.context_id:
        message.context_id = request.context_id
    if request.task_id:
        message.task_id = request.task_id
    verify: str | bool = str(ca_cert) if ca_cert else True
    async with httpx.AsyncClient(timeout=timeout, verify=verify) as http:
        try:
            card = (await fetch_card(http, card_url(request.url))).card
        except CardError as error:
            raise Unreachable(f"no usable agent card: {error}") from error
        assert card is not None  # only a conditional fetch comes back without one
        client = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
        try:
            events = [event async for event in client.send_message(SendMessageRequest(message=message))]
        except httpx.TransportError as error:
            raise Unreachable(f"{card.name} did not answer: {error}") from error
        except (A2AClientError, httpx.HTTPError) as error:
            raise Refused(f"{card.name} refused the message: {error}") from error
    if not events:
        raise Refused(f"{card.name} sent no answer")
    return _answer(events[-1])


def _answer(event: StreamResponse) -> Answer:
    if event.HasField("message"):
        message = event.message
        return Answer("completed", message.task_id or None, message.context_id or None, *_content(message.parts))
    task = event.task
    texts, data = _content(task.status.message.parts)
    artifacts = {artifact.name or "artifact": get_text_parts(list(artifact.parts)) for artifact in task.artifacts}
    for artifact in task.artifacts:
        data += get_data_parts(list(artifact.parts))
    return Answer(state_name(task.status.state), task.id, task.context_id, texts, data, artifacts)


def _content(parts: Any) -> tuple[list[str], list[Any]]:
    listed: list[Part] = list(parts)
    return get_text_parts(listed), get_data_parts(listed)
