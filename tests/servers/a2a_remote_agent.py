"""A remote A2A agent for the tests: the plain ``a2a-sdk`` (no mesh code), with a conversation.

    python tests/servers/a2a_remote_agent.py --port P

Like ``bench/baselines/a2a_sdk_echo.py`` (same card and routes), but a message starting ``ask`` is
answered ``input-required`` ("which city?") and the client's next message in that task completes it
("weather in CITY: sunny"); a message starting ``wait`` stays ``working`` until it is cancelled.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import uvicorn
from a2a.helpers.proto_helpers import get_message_text, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import TaskState

from bench.baselines.a2a_sdk_echo import EchoExecutor, create_app


class ConversingExecutor(EchoExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        text = get_message_text(context.message)
        task = context.current_task
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.complete(updater.new_agent_message([new_text_part(f"weather in {text}: sunny")]))
        elif text.startswith(("ask", "wait")):
            task = task or new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            if text.startswith("ask"):
                await updater.requires_input(updater.new_agent_message([new_text_part("which city?")]))
            else:
                await updater.update_status(
                    TaskState.TASK_STATE_WORKING, updater.new_agent_message([new_text_part("waiting")])
                )
                await asyncio.Event().wait()  # until cancelled
        else:
            await super().execute(context, event_queue)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    uvicorn.run(create_app(port, ConversingExecutor()), host="127.0.0.1", port=port, log_level="warning")
