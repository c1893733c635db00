"""HEAD answered as GET without its body: same status, headers and checks, on every GET route."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# What carries a response's body: its chunks, or a file the server is to send itself.
_BODY = frozenset({"http.response.body", "http.response.pathsend", "http.response.zerocopysend"})


class HeadAsGet:
    """Serve a HEAD request as the GET it mirrors and send only the response's head.

    The routes and the OpenAPI document know GET only (a HEAD operation per route would double
    both the document and the route table). Here a HEAD becomes that GET before the body limit,
    the routes and the token check see it, so it is refused, authenticated and answered exactly
    as the GET would be, and a path without GET still answers 405. The GET's `Content-Length`
    stays: it is what a HEAD reports.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        sent = False

        async def head_only(message: Message) -> None:
            nonlocal sent
            if message["type"] not in _BODY:
                await send(message)  # the head, and what servers' extensions add (debug info)
            elif not sent:
                sent = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def until_sent() -> Message:
            # Once the head is out, a streamed answer (a live log) is told the client left, so
            # it stops rather than produce a body nobody will read.
            if sent:
                return {"type": "http.disconnect"}
            return await receive()

        await self.app({**scope, "method": "GET"}, until_sent, head_only)
