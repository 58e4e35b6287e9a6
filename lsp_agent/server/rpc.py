"""Handlers by construction: `@routes.rpc(METHOD, Params)` names a method once, and the route
does the rest — registration with pygls, params parsed into the pydantic model (explicitly
converted from whatever pygls structured), the result model turned into wire JSON, and every
failure mapped onto the documented JSON-RPC errors.

A handler is `(ls, params) -> Result` (or a coroutine of one). Plain functions stay plain: pygls
answers them in the same loop turn, which keeps agent/status fast while a run streams.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel
from pygls.exceptions import JsonRpcException

from lsp_agent.core.errors import AgentError
from lsp_agent.domain.wire import WireModel
from lsp_agent.protocol.errors import INTERNAL, ProtocolError, from_core
from lsp_agent.server.agent_server import AgentServer  # at run time: pygls reads the endpoints' annotations
from lsp_agent.server.convert import parse

log = logging.getLogger(__name__)

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=WireModel)
Handler = Callable[[AgentServer, P], R | Awaitable[R]]
F = TypeVar("F", bound=Callable[..., Any])


def translate(method: str, exc: Exception) -> JsonRpcException:
    """Any failure of a handler as a JSON-RPC error the client can act on. Internal errors name
    the exception class only; the traceback goes to the log, never to the client."""
    if isinstance(exc, JsonRpcException):
        return exc
    if isinstance(exc, ProtocolError):
        return JsonRpcException(exc.message, exc.code, exc.wire_data())
    if isinstance(exc, AgentError):
        error = from_core(exc)
        return JsonRpcException(error.message, error.code, error.wire_data())
    log.error("%s failed", method, exc_info=exc)
    error = ProtocolError(INTERNAL, f"{method}: internal error ({type(exc).__name__}; details in the server log)")
    return JsonRpcException(error.message, error.code, error.wire_data())


def mapped(method: str, call: Callable[..., Any]) -> Callable[..., Any]:
    """`call` with its failures translated, staying sync when it is sync."""
    if inspect.iscoroutinefunction(call):
        @functools.wraps(call)
        async def run_async(*args: Any) -> Any:
            try:
                return await call(*args)
            except Exception as exc:
                raise translate(method, exc) from None

        return run_async

    @functools.wraps(call)
    def run(*args: Any) -> Any:
        try:
            return call(*args)
        except Exception as exc:
            raise translate(method, exc) from None

    return run


class Kind(Enum):
    RPC = "rpc"  # a custom request or notification: params parsed into the pydantic model
    COMMAND = "command"  # a workspace/executeCommand command: `arguments` is `[params]`
    LSP = "lsp"  # a standard LSP method: pygls structures the lsprotocol params, results are lsprotocol's


@dataclass(frozen=True)
class Route:
    method: str
    params: type[BaseModel] | None
    handler: Callable[..., Any]
    kind: Kind
    options: Any = None


@dataclass
class Routes:
    """The handlers of one module; `install` hands them to pygls."""

    routes: list[Route] = field(default_factory=list)

    def rpc(self, method: str, params: type[P]) -> Callable[[Handler[P, R]], Handler[P, R]]:
        def add(handler: Handler[P, R]) -> Handler[P, R]:
            self.routes.append(Route(method, params, handler, Kind.RPC))
            return handler

        return add

    def command(self, name: str, params: type[P]) -> Callable[[Handler[P, R]], Handler[P, R]]:
        def add(handler: Handler[P, R]) -> Handler[P, R]:
            self.routes.append(Route(name, params, handler, Kind.COMMAND))
            return handler

        return add

    def lsp(self, method: str, options: Any = None) -> Callable[[F], F]:
        """A standard LSP method (lifecycle, documents, code actions): registered once, here."""
        def add(handler: F) -> F:
            self.routes.append(Route(method, None, handler, Kind.LSP, options))
            return handler

        return add


def _single(arguments: tuple[Any, ...]) -> Any:
    """A command's single argument (an object), or what was sent instead (validation names it)."""
    return arguments[0] if len(arguments) == 1 else list(arguments)


def _endpoint(route: Route) -> Callable[..., Any]:
    method, model, handler = route.method, route.params, route.handler
    if model is None:
        return mapped(method, handler)

    def params_of(raw: tuple[Any, ...]) -> BaseModel:
        assert model is not None
        return parse(model, _single(raw) if route.kind is Kind.COMMAND else (raw[0] if raw else None), method)

    if inspect.iscoroutinefunction(handler):
        async def answer_async(ls: AgentServer, *raw: Any) -> dict[str, object]:
            result: WireModel = await handler(ls, params_of(raw))
            return result.wire()

        return mapped(method, answer_async)

    def answer(ls: AgentServer, *raw: Any) -> dict[str, object]:
        result: WireModel = handler(ls, params_of(raw))
        return result.wire()

    return mapped(method, answer)


def install(server: AgentServer, *tables: Routes) -> None:
    for table in tables:
        for route in table.routes:
            endpoint = _endpoint(route)
            if route.kind is Kind.COMMAND:
                server.command(route.method)(endpoint)
            elif route.options is not None:
                server.feature(route.method, route.options)(endpoint)
            else:
                server.feature(route.method)(endpoint)
