"""Baseline A2A server: the official ``a2a-sdk`` alone, answering in-process like the echo agent.

    python bench/baselines/a2a_sdk_echo.py --port P

The SDK's own route factories at the root (card at ``/.well-known/agent-card.json``, JSON-RPC at
``/``, 0.3 compatibility on), its ``InMemoryTaskStore``, and an executor that does what
``examples/echo_agent.py`` does through the mesh: one ``working`` update ("echoing N characters"),
then ``completed`` with ``echo: <text>``. No router, no mesh, no store on disk: what the A2A
benchmark and the TCK run compare the router's ``/agents/echo`` against.
"""

from __future__ import annotations

import argparse

import uvicorn
from a2a.helpers.proto_helpers import get_message_text, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)
from starlette.applications import Starlette


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = get_message_text(context.message)
        working = updater.new_agent_message([new_text_part(f"echoing {len(text)} characters")])
        await updater.update_status(TaskState.TASK_STATE_WORKING, working)
        await updater.complete(updater.new_agent_message([new_text_part(f"echo: {text}")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def create_app(port: int, executor: AgentExecutor | None = None) -> Starlette:
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="echo",
        description="the a2a-sdk alone: an in-process echo executor (baseline)",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes the text it is sent", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=executor or EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True)]
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(create_app(args.port), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
