"""The a2a-sdk's OpenTelemetry spans: off unless something collects them.

The SDK wraps its request handling, its task machinery and its client in spans whenever the
OpenTelemetry API is importable (google-api-core, one of the SDK's dependencies, brings it), whether
or not a tracer provider collects them. Uncollected, they cost the router about 0.4 ms of CPU per A2A
request, 12 % of it (an A/B of ``serve.py`` with the SDK's switch off and on). The switch,
``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED``, is read once, when the SDK is first imported: the packages
that import it (:mod:`webmcp_a2a.router`, :mod:`webmcp_a2a.cli`) call :func:`off_unless_collected`
before anything else.
"""

from __future__ import annotations

import os

SWITCH = "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"


def off_unless_collected() -> None:
    """Turn the SDK's spans off, unless the switch is set already (``true`` keeps them) or a tracer
    provider is set (as ``opentelemetry-instrument`` does before the program's own imports)."""
    if SWITCH not in os.environ and not _provider_set():
        os.environ[SWITCH] = "false"


def _provider_set() -> bool:
    try:
        from opentelemetry import trace
    except ImportError:
        return False
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
