"""An agent of the mesh that answers every A2A task: one ``working`` update, then ``echo: <text>``.

    python examples/echo_agent.py --router ws://127.0.0.1:8765/a2a --id echo

With the router running (``make run``), any A2A client reaches it at
``http://127.0.0.1:8765/agents/echo`` (card: ``/agents/echo/.well-known/agent-card.json``).
Its credential is kept in ``ID.credential`` (``--credential-file``), so a restart is the same agent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

from webmcp_a2a.client.cpython import connect
from webmcp_a2a.client.tasks import InboundTask
from webmcp_a2a.protocol import Hello


async def echo(task: InboundTask) -> None:
    await task.update(f"echoing {len(task.text)} characters")
    await task.complete(f"echo: {task.text}")


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--router", default="ws://127.0.0.1:8765/a2a", help="the router's WebSocket URL")
    parser.add_argument("--id", default="echo", help="this agent's id (default: %(default)s)")
    parser.add_argument("--token", help="the router's join token, when it has one")
    parser.add_argument(
        "--credential-file", type=Path, help="where the agent keeps its credential (default: ID.credential)"
    )
    args = parser.parse_args(argv)
    hello = Hello(agent_id=args.id, agent_type="echo", capabilities=["echo"], join_token=args.token)
    credential_file = args.credential_file or Path(f"{args.id}.credential")
    await connect(args.router, hello, credential_file=credential_file, on_task=echo)
    print(f"echo agent {args.id!r} is in the mesh at {args.router}", flush=True)
    await asyncio.Event().wait()  # until interrupted


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
