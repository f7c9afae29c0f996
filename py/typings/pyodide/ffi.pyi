"""``pyodide.ffi``: only what the project uses (proxies are destroyed explicitly)."""

from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

class JsProxy:
    def __getattr__(self, name: str) -> Any: ...

class JsCallable(JsProxy, Generic[_P, _R]):
    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...
    def destroy(self) -> None: ...

def create_proxy(obj: Callable[_P, _R]) -> JsCallable[_P, _R]: ...
