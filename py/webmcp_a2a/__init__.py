"""webmcp-a2a: Python agents in a web page, meshed through a router, offered to AI agents as WebMCP tools.

Layers, each depending only on the ones before it:

* :mod:`webmcp_a2a.protocol` - the envelope, frames, tool arguments and results;
* :mod:`webmcp_a2a.client` - the transport-independent router client;
* :mod:`webmcp_a2a.router` - the backend (CPython only);
* :mod:`webmcp_a2a.browser` - the page side (Pyodide only).
"""

__version__ = "0.1.0"
