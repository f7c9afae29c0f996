"""A page agent: open the test page with ``?agent=/page-agents/greeter.py&agent_id=greeter``.

It offers AI agents a tool of its own (``greet``, its input schema made from the ``Greeting``
model), answers every direct message with a greeting back to its sender, and answers A2A tasks
(``webmcp-a2a call http://127.0.0.1:8765/agents/greeter "Ada"``).
"""

from pydantic import BaseModel, Field

from webmcp_a2a.browser.user_agent import tool
from webmcp_a2a.client.agent import Agent
from webmcp_a2a.client.tasks import InboundTask
from webmcp_a2a.protocol import ReceivedMessage, SendMessageArgs

SUBSCRIBE = ["greetings"]


class Greeting(BaseModel):
    name: str = Field(min_length=1, max_length=64, description="Who to greet")
    excited: bool = Field(False, description="End with an exclamation mark")


class Greeted(BaseModel):
    text: str


def greeting_for(name: str, excited: bool = False) -> str:
    return f"Hello, {name}{'!' if excited else '.'}"


@tool(Greeting, read_only=True)
def greet(agent: Agent, args: Greeting) -> Greeted:
    """Make a greeting for someone (this page agent's own tool)."""
    return Greeted(text=greeting_for(args.name, args.excited))


TOOLS = [greet]


async def on_message(agent: Agent, message: ReceivedMessage) -> None:
    if message.subscription_id or "greeting" in message.payload:
        return  # the topic's events, and other greeters' greetings: nothing to answer
    name = str(message.payload.get("name", message.from_agent))
    await agent.send_message(
        SendMessageArgs(
            target_agent_id=message.from_agent,
            message_type="notification",
            payload={"greeting": greeting_for(name), "in_reply_to": message.message_id},
        )
    )


async def on_task(agent: Agent, task: InboundTask) -> None:
    await task.complete(greeting_for(task.text.strip() or "stranger", excited=True))
