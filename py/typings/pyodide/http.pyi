"""``pyodide.http``: fetch from Python (what the page agent loader uses)."""

class FetchResponse:
    ok: bool
    status: int
    async def string(self) -> str: ...

async def pyfetch(url: str) -> FetchResponse: ...
