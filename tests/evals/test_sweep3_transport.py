"""The kept-alive connections of the hosted-model adapters facing a server that says too much."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from benchgen.evals.adapters.transport import HttpPool
from benchgen.evals.types import RateLimitedError, RetryableError

pytestmark = pytest.mark.anyio


class Twice:
    """A keep-alive server that answers each request with its own question, the first twice."""

    def __init__(self) -> None:
        self.replies = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError):  # the client closed
            await self.answer(reader, writer)

    async def answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while head := await reader.readuntil(b"\r\n\r\n"):
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            question = json.loads(await reader.readexactly(length))["q"]
            body = json.dumps({"answer_to": question}).encode()
            reply = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body
            self.replies += 1
            writer.write(reply * 2 if self.replies == 1 else reply)
            await writer.drain()


async def test_a_reply_sent_twice_is_not_read_as_the_next_questions_reply() -> None:
    """The second question got the first one's answer, and each later one its predecessor's."""
    stub = Twice()
    server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
    async with server:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        pool = HttpPool(5, 1, {}, (), allowlist=frozenset({"127.0.0.1"}))
        try:
            replies = [await pool.post_json(url, {"q": q}) for q in ("one", "two", "three")]
        finally:
            await pool.aclose()
    assert [reply["answer_to"] for reply in replies] == ["one", "two", "three"]


class Labelled:
    """A server answering every request with one body and content type, then closing."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.head = f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n"
        self.body = body

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        length = f"content-length: {len(self.body)}\r\n\r\n"
        writer.write((self.head + length).encode() + self.body)
        await writer.drain()
        writer.close()


@pytest.mark.parametrize(
    ("encoding", "charset"),
    [("latin-1", "iso-8859-1"), ("cp1252", "windows-1252"), ("utf-8", "iso-8859-1")],
)
async def test_a_json_reply_in_the_charset_it_declares_is_read(encoding: str, charset: str) -> None:
    """Latin-1 JSON failed as "not valid JSON" at every retry; UTF-8 mislabelled as Latin-1
    (a common server default) is still read as UTF-8, not as mojibake."""
    body = json.dumps({"text": "café ± ok"}, ensure_ascii=False).encode(encoding)
    stub = Labelled(body, f"application/json; charset={charset}")
    server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
    async with server:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        pool = HttpPool(5, 1, {}, (), allowlist=frozenset({"127.0.0.1"}))
        try:
            reply = await pool.post_json(url, {"q": "q"})
        finally:
            await pool.aclose()
    assert reply == {"text": "café ± ok"}


@pytest.mark.parametrize("status", ["503 Service Unavailable", "500 Internal Server Error"])
async def test_a_server_error_carries_the_retry_after_it_asked_for(status: str) -> None:
    """Only a 429's was read: a 503 asking for 7 s was retried at 0.5, 1 and 2 s, and failed."""
    stub = Labelled(b"down for a moment", "text/plain")
    stub.head = f"HTTP/1.1 {status}\r\nretry-after: 7\r\n"
    server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
    async with server:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        pool = HttpPool(5, 1, {}, (), allowlist=frozenset({"127.0.0.1"}))
        try:
            with pytest.raises(RetryableError, match="down for a moment") as raised:
                await pool.post_json(url, {"q": "q"})
        finally:
            await pool.aclose()
    assert raised.value.retry_after_s == 7.0


async def test_a_retry_after_date_past_any_calendar_is_ignored() -> None:
    """An eleven-digit year overflowed the date parser: the 429 became "OverflowError", a
    question failed for good instead of waiting its turn."""
    stub = Labelled(b"slow down", "text/plain")
    stub.head = (
        "HTTP/1.1 429 Too Many Requests\r\nretry-after: Sun, 06 Nov 99999999999 08:49:37 GMT\r\n"
    )
    server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
    async with server:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        pool = HttpPool(5, 1, {}, (), allowlist=frozenset({"127.0.0.1"}))
        try:
            with pytest.raises(RateLimitedError, match="slow down") as raised:
                await pool.post_json(url, {"q": "q"})
        finally:
            await pool.aclose()
    assert raised.value.retry_after_s is None
