"""The page side, for Pyodide only: the browser WebSocket transport, tool registration, start-up.

:mod:`.tools` is plain Python (and tested under CPython); :mod:`.websocket` and
:mod:`.page` need Pyodide's ``js`` module.
"""
