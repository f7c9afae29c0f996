"""The bridge to the standard A2A protocol: every agent of the mesh is an A2A agent.

* ``cards.py`` builds the Agent Cards: the router's own (the hub) and one per agent, dual-stack
  (A2A 1.0 ``supportedInterfaces`` and the 0.3 fields).
* ``bridge.py`` is the mesh side: an agent of the mesh inside the router process (``a2a``, on an
  in-process link), and the SDK ``AgentExecutor`` that turns an A2A request into a task message
  for the agent and its answers into task events.
* ``routes.py`` serves the cards and JSON-RPC at ``/agents/X`` through the official ``a2a-sdk``:
  the JSON-RPC, version and SSE layers are the SDK's.
"""

from .routes import A2AService

__all__ = ["A2AService"]
