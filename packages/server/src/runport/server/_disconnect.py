"""A streamed response that ends when its client goes away.

Every route that runs an adapter for one connection (``/executions``, ``/chat``, ``/agui``)
answers through :func:`respond_until_disconnected`: the response runs as a task beside one that
waits for ``http.disconnect``, and whichever ends first ends the other. A client that leaves
cancels the response's task **once**, and cancellation is the async port's caller stop: the
adapter closes its upstream. Plain asyncio tasks, not an anyio cancel scope: a cancelled scope
cancels every await inside it again and again, the adapter's closing of its upstream included,
while one ``task.cancel()`` lets that cleanup run to its end
(``tests/test_server_openai.py::test_a_client_that_goes_away_mid_answer_closes_the_openai_upstream``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

from starlette.types import Receive


async def respond_until_disconnected(respond: Coroutine[Any, Any, None], receive: Receive) -> None:
    """Run ``respond`` until it ends or the client disconnects, whichever is first; a
    disconnect cancels it once and waits for its cleanup to end."""
    responding = asyncio.ensure_future(respond)
    watch = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({responding, watch}, return_when=asyncio.FIRST_COMPLETED)
        if not responding.done():
            responding.cancel()
        # OSError: the client went away while we wrote, a caller stop too
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await responding
    finally:
        watch.cancel()
        if not responding.done():
            # This task itself was cancelled while it waited (the server stopping): the
            # response goes with it, cancelled once like any other stop.
            responding.cancel()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
