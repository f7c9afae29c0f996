"""Several routers, one mesh: routers that share a Redis (``--redis URL``) serve one mesh.

* :mod:`.cluster` - a router's membership: its lease, who is online where, the events channel;
* :mod:`.links` - frames for agents at another router, and their acknowledgements back;
* :mod:`.bus` - Redis pub/sub, batched;
* :mod:`.redis_store` - the shared store (kept messages, agents, credentials, subscriptions);
* :mod:`.scripts` - the Lua scripts that make each change atomic, and the keys they use.
"""

from .cluster import CLOSE_TRY_AGAIN, AgentIdElsewhere, Cluster
from .links import NodeLink

__all__ = ["CLOSE_TRY_AGAIN", "AgentIdElsewhere", "Cluster", "NodeLink"]
