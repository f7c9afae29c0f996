"""A standard A2A client gives a task to an agent in a page; the AI in the page answers with a2a_reply."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import httpx


def take_a2a_task(mesh, page, text: str, wait: float = 20) -> dict[str, Any]:
    """The inbound A2A task saying ``text``, from the page's inbox (as an AI agent reads it)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        result = mesh.call(page, "a2a_inbox", {"wait_seconds": 2, "max_messages": 100})
        for message in result["structuredContent"]["messages"]:
            task = message["payload"].get("a2a_task")
            if message["message_type"] == "task_request" and task and task["text"] == text:
                return task
    raise AssertionError(f"no A2A task saying {text!r} reached {page.agent_id}")


def test_a_page_agent_answers_an_a2a_client_with_a2a_reply(mesh, alice, server_url):
    question = f"what time is it? {uuid.uuid4()}"
    answer: dict[str, Any] = {}
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",  # an A2A 0.3 client
        "params": {"message": {"role": "user", "parts": [{"kind": "text", "text": question}],
                               "messageId": str(uuid.uuid4()), "kind": "message"}},
    }  # fmt: skip

    def client() -> None:
        answer.update(httpx.post(f"{server_url}/agents/{alice.agent_id}", json=request, timeout=60).json())

    caller = threading.Thread(target=client)
    caller.start()
    task = take_a2a_task(mesh, alice, question)
    for arguments in (
        {"task_id": task["task_id"], "state": "working", "text": "looking at the clock"},
        {"task_id": task["task_id"], "state": "working", "text": "12:00", "artifact_name": "time"},
        {"task_id": task["task_id"], "text": "it is noon"},  # state defaults to completed
    ):
        result = mesh.call(alice, "a2a_reply", arguments)
        assert result["structuredContent"]["delivered"] is True, result
    caller.join(30)
    outcome = answer["result"]
    assert outcome["status"]["state"] == "completed"
    assert outcome["status"]["message"]["parts"] == [{"kind": "text", "text": "it is noon"}]
    (artifact,) = outcome["artifacts"]
    assert (artifact["name"], artifact["parts"]) == ("time", [{"kind": "text", "text": "12:00"}])


def test_a2a_reply_names_a_bad_argument(mesh, alice):
    result = mesh.call(alice, "a2a_reply", {"task_id": "t-1", "state": "done"})
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["field"] == "state"
