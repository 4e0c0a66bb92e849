"""``mcp_tools``: an MCP server's tools as runport ``Tool``s, over the official SDK's client.

One connection per ``McpToolset``: the SDK's ``Client`` is entered in a worker thread that
runs an event loop of its own (an anyio blocking portal), so a tool is a plain function that
``run`` calls in its thread and ``arun`` on its loop, like any other tool, and the connection
outlives every run that uses it until the set is closed. The server's input schemas are the
tools' ``parameters`` as the server gave them; the run checks a call's arguments against them
before anything is sent.

A call is sent once: an MCP server that dies, goes silent past ``call_timeout`` or refuses the
call makes the tool raise ``PortError(TQX_MCP_SERVER_FAILED)`` (and the run ends
``TQX_TOOL_FAILED`` with it as the cause), and nothing is resent, on this connection or
another. A listing longer than ``max_tools`` is refused (``TQX_MCP_TOO_MANY_TOOLS``), read no
further than that bound, unless ``include`` picks the tools to keep.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import sys
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from concurrent.futures import Future, wait
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AbstractContextManager
from queue import SimpleQueue
from typing import Any, Final, TextIO, overload

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal
from pydantic import JsonValue

from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as McpTool
from runport.application import Tool, ToolSet
from runport.contracts import ErrorCode
from runport.ports import PortError

__all__ = ["DEFAULT_MAX_TOOLS", "McpToolset", "mcp_tools", "model_name", "server_parameters"]

DEFAULT_MAX_TOOLS: Final = 128
"""The most tools ``mcp_tools`` keeps from one server unless told otherwise: the most any of
the providers runport speaks to takes in one request (OpenAI's bound), and far more than a
model chooses among well."""

_NAME_CHARACTER: Final = re.compile(r"[^A-Za-z0-9_-]")

_MAX_PAGES: Final = 1000
"""The most pages of a tool listing read: a server whose cursor never ends cannot hang it."""

Server = str | Sequence[str]
"""An MCP server: an ``http://`` or ``https://`` URL (streamable HTTP), or the command line
that starts it (stdio): one string, split as a shell would, or its words."""


_CLOSE_WAIT: Final = 5.0
"""Seconds ``close`` waits for the client to leave before it cancels the connection."""


def _reason(error: BaseException) -> str:
    """An error as one line; an exception group (anyio's task groups) by its first leaf."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


class _Done:
    """Put in a call's queue once the call ended: no progress comes after it."""


_DONE: Final = _Done()


class _Progress:
    """A call's progress callback: each notification, as the tool's progress value."""

    def __init__(self, put: Callable[[JsonValue | _Done], None]) -> None:
        self._put = put

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        update: dict[str, JsonValue] = {"progress": progress}
        if total is not None:
            update["total"] = total
        if message is not None:
            update["message"] = message
        self._put(update)


def _failed(message: str) -> PortError:
    return PortError(ErrorCode.MCP_SERVER_FAILED, message)


def model_name(name: str) -> str:
    """A tool's name as the model is offered it: what every provider takes,
    ``[A-Za-z0-9_-]{1,64}`` (MCP allows dots and longer names; each other character becomes
    ``_``, and a longer name is cut). The server is still called by its own name."""
    return _NAME_CHARACTER.sub("_", name)[:64] or "_"


def server_parameters(
    server: Server,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> str | StdioServerParameters:
    """What the SDK's ``Client`` connects to for ``server``: the URL itself, or the stdio
    command's parameters (``ValueError`` for an empty command line, or ``env``/``cwd`` given
    with a URL)."""
    if isinstance(server, str):
        stripped = server.strip()
        if stripped.startswith(("http://", "https://")):
            if env is not None or cwd is not None:
                raise ValueError("env= and cwd= are for a server started as a command, not a URL")
            return stripped
        words = shlex.split(stripped)
    else:
        words = [str(word) for word in server]
    if not words or not words[0]:
        raise ValueError(f"an MCP server is a command line or an http(s) URL, not {server!r}")
    return StdioServerParameters(
        command=words[0], args=words[1:], env=None if env is None else dict(env), cwd=cwd
    )


def _errlog() -> TextIO:
    """Where a stdio server's stderr goes: this process's, unless it is no file (a notebook's,
    a test's capture), then the one the process started with."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ or sys.stderr
    return sys.stderr


def _described(server: str | StdioServerParameters) -> str:
    if isinstance(server, str):
        return server
    return shlex.join([server.command, *server.args])


def _result_value(result: CallToolResult) -> JsonValue:
    """What the model reads of a call: the structured result when the server gave one, else
    its text (its parts joined), else every part as JSON. An error result (``isError``) is a
    string ``error: …``, for the model to read and correct itself, as MCP means it."""
    if result.is_error:
        return "error: " + _content_text(result)
    if result.structured_content is not None:
        return result.structured_content  # type: ignore[no-any-return]
    return _content_text(result)


def _content_text(result: CallToolResult) -> str:
    if all(isinstance(part, TextContent) for part in result.content):
        return "\n".join(part.text for part in result.content if isinstance(part, TextContent))
    return json.dumps(
        [part.model_dump(mode="json", exclude_none=True) for part in result.content],
        ensure_ascii=False,
        sort_keys=True,
    )


class McpToolset(ToolSet):
    """An MCP server's tools for any run, and the one connection they are called over.

    A sequence of :class:`~runport.application.Tool` (pass it as ``tools=``, or add it to a
    list of your own) and a context manager: leaving the ``with`` block, or :meth:`close`,
    ends the connection (and the server's process, for a stdio server). Made by
    :func:`mcp_tools`.
    """

    def __init__(
        self,
        server: Server,
        *,
        include: Collection[str] | None = None,
        prefix: str = "",
        max_tools: int = DEFAULT_MAX_TOOLS,
        timeout: float = 30.0,
        call_timeout: float | None = 300.0,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        needs_approval: bool | Collection[str] = False,
    ) -> None:
        if isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 1:
            raise ValueError(f"max_tools must be an integer of at least 1, not {max_tools!r}")
        if isinstance(include, str):
            raise TypeError("include is a collection of tool names, not one string")
        if isinstance(needs_approval, str):
            raise TypeError("needs_approval is True, False or a collection of tool names")
        self._approval = needs_approval
        self._target = server_parameters(server, env, cwd)
        self.server: str = _described(self._target)
        """The server, as its URL or its command line."""
        self._call_timeout = call_timeout
        self._closed = False
        self._portal_context: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self._portal = self._portal_context.__enter__()
        target = self._target
        self._client = Client(
            target if isinstance(target, str) else stdio_client(target, errlog=_errlog()),
            read_timeout_seconds=call_timeout,
        )
        self._ready: Future[None] = Future()
        self._stop: anyio.Event | None = None
        self._held = self._portal.start_task_soon(self._hold)
        try:
            self._opened(timeout)
            listed = self._portal.call(self._listing, include, max_tools, timeout)
        except BaseException:
            self.close()
            raise
        tools = [self._tool(spec, prefix) for spec in listed]
        seen: dict[str, str] = {}
        for tool, spec in zip(tools, listed, strict=True):
            other = seen.setdefault(tool.name, spec.name)
            if other != spec.name:
                self.close()
                raise PortError(
                    ErrorCode.TOOL_NAME_CLASH,
                    f"MCP server {self.server}'s tools {other!r} and {spec.name!r} are both "
                    f"{tool.name!r} as a model sees them: pick one with include=",
                )
        self._tools = tuple(tools)

    async def _hold(self) -> None:
        """The connection's task: enters the client, then waits until the set is closed."""
        self._stop = anyio.Event()
        try:
            async with self._client:
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as error:
            if not self._ready.done():
                self._ready.set_exception(error)
            raise

    def _opened(self, timeout: float) -> None:
        try:
            self._ready.result(timeout)
        except FutureTimeout:
            raise _failed(f"MCP server {self.server} did not answer within {timeout:g} s") from None
        except PortError:
            raise
        except Exception as error:
            raise _failed(
                f"cannot connect to MCP server {self.server}: {_reason(error)}"
            ) from error

    async def _listing(
        self, include: Collection[str] | None, max_tools: int, timeout: float
    ) -> list[McpTool]:
        wanted = None if include is None else set(include)
        kept: dict[str, McpTool] = {}
        cursor: str | None = None
        try:
            with anyio.fail_after(timeout):
                for _ in range(_MAX_PAGES):
                    page = await self._client.list_tools(cursor=cursor)
                    for tool in page.tools:
                        if wanted is not None and tool.name not in wanted:
                            continue
                        if tool.name in kept:
                            raise _failed(
                                f"MCP server {self.server} lists tool {tool.name!r} twice"
                            )
                        kept[tool.name] = tool
                        if len(kept) > max_tools:
                            raise PortError(
                                ErrorCode.MCP_TOO_MANY_TOOLS,
                                f"MCP server {self.server} lists more than max_tools={max_tools}"
                                " tools: pick the ones to offer with include=, or raise "
                                "max_tools",
                            )
                    cursor = page.next_cursor
                    if cursor is None or (wanted is not None and len(kept) == len(wanted)):
                        break  # the end, or every tool asked for is found
                else:
                    raise _failed(
                        f"MCP server {self.server}'s tool listing passed {_MAX_PAGES} pages"
                    )
        except TimeoutError:
            raise _failed(
                f"MCP server {self.server} did not list its tools within {timeout:g} s"
            ) from None
        except MCPError as error:
            raise _failed(
                f"MCP server {self.server} refused to list its tools: {error.message}"
            ) from error
        missing = sorted((wanted or set()) - set(kept))
        if missing:
            raise _failed(f"MCP server {self.server} has no tool {', '.join(map(repr, missing))}")
        return list(kept.values())

    def _tool(self, spec: McpTool, prefix: str) -> Tool:
        name = spec.name
        parameters: Mapping[str, JsonValue] = dict(spec.input_schema)
        return Tool(
            name=model_name(prefix + name),
            description=spec.description or spec.title or "",
            parameters=parameters,
            function=self._caller(name),
            needs_approval=(
                self._approval if isinstance(self._approval, bool) else name in self._approval
            ),
        )

    def _caller(self, name: str) -> Callable[..., Generator[Any, None, Any] | AsyncIterator[Any]]:
        def call(**arguments: Any) -> Generator[Any, None, Any] | AsyncIterator[Any]:
            try:
                asyncio.get_running_loop()
            except RuntimeError:  # a run in a thread of its own: the call is waited for
                return self.stream(name, arguments)
            return self.astream(name, arguments)  # on a loop (arun, a server): awaited

        call.__name__ = call.__qualname__ = name
        return call

    def call(self, name: str, arguments: Mapping[str, Any]) -> JsonValue:
        """Call the server's tool ``name`` once (its own name, without ``prefix``): its value
        as the model reads it, or ``PortError(TQX_MCP_SERVER_FAILED)``; its progress is not
        kept."""
        calling = self.stream(name, arguments)
        while True:
            try:
                next(calling)
            except StopIteration as done:
                value: JsonValue = done.value
                return value

    def stream(
        self, name: str, arguments: Mapping[str, Any]
    ) -> Generator[JsonValue, None, JsonValue]:
        """``call`` as a generator tool: each progress notification the server sends for the
        call is yielded as it arrives (``{"progress": …, "total": …, "message": …}``, the
        fields it gave), then the value is returned. Closing the generator before the end
        cancels the call on the server (MCP's cancellation), and nothing is resent."""
        arrived: SimpleQueue[JsonValue | _Done] = SimpleQueue()
        pending = self._start(name, arguments, arrived.put)
        try:
            while not isinstance(update := arrived.get(), _Done):
                yield update
            return _result_value(pending.result())
        finally:
            if not pending.done():
                pending.cancel()

    async def astream(self, name: str, arguments: Mapping[str, Any]) -> AsyncIterator[Any]:
        """``stream`` as an async generator, for a run on an event loop: waiting for the server
        holds no loop. Its last value is the call's (``Tool.output``)."""
        loop = asyncio.get_running_loop()
        arrived: asyncio.Queue[JsonValue | _Done] = asyncio.Queue()

        def put(update: JsonValue | _Done) -> None:
            loop.call_soon_threadsafe(arrived.put_nowait, update)

        pending = self._start(name, arguments, put)
        try:
            while not isinstance(update := await arrived.get(), _Done):
                yield update
            yield Tool.output(_result_value(pending.result()))
        finally:
            if not pending.done():
                pending.cancel()

    def _start(
        self, name: str, arguments: Mapping[str, Any], put: Callable[[JsonValue | _Done], None]
    ) -> Future[CallToolResult]:
        """Send the call on the connection's loop; its progress and its end go to ``put``."""
        if self._closed:
            raise _failed(f"the connection to MCP server {self.server} is closed")
        try:
            pending = self._portal.start_task_soon(
                self._call, name, dict(arguments), _Progress(put)
            )
        except RuntimeError as error:  # the portal's loop is gone
            raise _failed(f"the connection to MCP server {self.server} is gone: {error}") from None
        pending.add_done_callback(lambda _: put(_DONE))
        return pending

    async def _call(
        self, name: str, arguments: dict[str, Any], progress: _Progress
    ) -> CallToolResult:
        try:
            return await self._client.call_tool(name, arguments, progress_callback=progress)
        except MCPError as error:
            raise _failed(
                f"MCP server {self.server} failed the call of {name!r}: {error.message}; it "
                "was not sent again"
            ) from error
        except Exception as error:
            raise _failed(
                f"MCP server {self.server} failed the call of {name!r}: "
                f"{type(error).__name__}: {error}; it was not sent again"
            ) from error

    def close(self) -> None:
        """End the connection (a stdio server's process with it). Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            stop = self._stop
            if self._ready.done() and stop is not None:
                self._portal.call(stop.set)
                wait(  # the client leaves in its own task; a server gone leaves at once
                    [self._held], timeout=_CLOSE_WAIT
                )
            if not self._held.done():
                self._held.cancel()
        finally:
            self._portal_context.__exit__(None, None, None)

    @overload
    def __getitem__(self, index: int) -> Tool: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Tool]: ...

    def __getitem__(self, index: int | slice) -> Tool | Sequence[Tool]:
        return self._tools[index]

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __repr__(self) -> str:
        names = ", ".join(tool.name for tool in self._tools)
        return f"McpToolset({self.server!r}: {names})"


def mcp_tools(
    server: Server,
    *,
    include: Collection[str] | None = None,
    prefix: str = "",
    max_tools: int = DEFAULT_MAX_TOOLS,
    timeout: float = 30.0,
    call_timeout: float | None = 300.0,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    needs_approval: bool | Collection[str] = False,
) -> McpToolset:
    """Connect to an MCP server and offer its tools to any run (docs/runs.md, "Tools from an
    MCP server").

    ``server``: an ``http://``/``https://`` URL (streamable HTTP), or the command line that
    starts a stdio server (a string split as a shell would, or its words). ``include``: the
    names of the tools to keep (each must exist; default all). ``prefix``: put before each
    name the model sees, to keep two servers' tools apart (there a name's characters other
    than letters, digits, ``_`` and ``-`` become ``_``, and it is cut at 64, as every provider
    needs; two names that become one are ``PortError(TQX_TOOL_NAME_CLASH)``). ``max_tools``:
    a listing with more tools (of those ``include`` keeps) is refused,
    ``PortError(TQX_MCP_TOO_MANY_TOOLS)``.
    ``timeout``: seconds to connect and list; ``call_timeout``: seconds one call may take
    (``None``: no bound). ``env``, ``cwd``: a stdio server's environment variables (over the
    few the SDK passes on: ``PATH``, ``HOME``, …; not this process's whole environment) and
    working folder. ``needs_approval``: ``True`` (every tool) or the server's names of the
    tools whose calls wait for a person's approval (docs/runs.md, "A person in the loop").
    A server that cannot be started or reached, or answers no listing in
    time, is ``PortError(TQX_MCP_SERVER_FAILED)``.

    Use it as a context manager, which closes the connection::

        with mcp_tools("python my_server.py") as tools:
            result = run(contract, adapter, tools=[*tools, my_local_tool])
    """
    return McpToolset(
        server,
        include=include,
        prefix=prefix,
        max_tools=max_tools,
        timeout=timeout,
        call_timeout=call_timeout,
        env=env,
        cwd=cwd,
        needs_approval=needs_approval,
    )
