"""Hostile endpoints: addresses that hide an internal host, replies built to mislead the client."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator

import pytest

from benchgen.evals.adapters.openai_compat import OpenAICompatAdapter
from benchgen.evals.adapters.transport import MAX_REPLY_TOKENS, HttpPool
from benchgen.evals.netguard import check_endpoint
from benchgen.evals.types import FatalModelError, Item, ModelSpec, RateLimitedError, RetryableError

pytestmark = pytest.mark.anyio

LOOPBACK = frozenset({"127.0.0.1"})
COMPLETION = json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()


@pytest.mark.parametrize("host", ["[fec0::1]", "[fec0:0:0:0:0:0:a00:1]", "[feff::1]"])
def test_ipv6_site_local_addresses_are_refused(host: str) -> None:
    with pytest.raises(FatalModelError, match="non-public"):
        check_endpoint(f"http://{host}:8000/v1", frozenset())


class Canned:
    """A loopback server answering every request with one fixed head and body."""

    def __init__(self) -> None:
        self.reply = b""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        writer.write(self.reply)
        await writer.drain()
        writer.close()

    def answer(self, status: str, body: bytes, *headers: str) -> None:
        lines = [f"HTTP/1.1 {status}", f"content-length: {len(body)}", *headers]
        self.reply = ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.fixture
async def canned() -> AsyncIterator[tuple[Canned, str]]:
    stub = Canned()
    server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
    async with server:
        yield stub, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"


async def _post(url: str) -> dict[str, object]:
    pool = HttpPool(5, 1, {}, (), allowlist=LOOPBACK)
    try:
        return await pool.post_json(url, {"prompt": "q"})
    finally:
        await pool.aclose()


async def test_a_reply_nested_too_deeply_fails_as_a_garbled_reply(
    canned: tuple[Canned, str],
) -> None:
    stub, url = canned
    stub.answer("200 OK", b'{"choices":' + b"[" * 100_000)
    with pytest.raises(RetryableError, match="nests too deeply"):
        await _post(url)


async def test_a_gzip_reply_without_its_end_is_refused_though_it_parses(
    canned: tuple[Canned, str],
) -> None:
    stub, url = canned
    # Cut the 8-byte trailer (checksum and length): what is left inflates to the whole JSON.
    stub.answer("200 OK", gzip.compress(COMPLETION)[:-8], "content-encoding: gzip")
    with pytest.raises(RetryableError, match="ends early"):
        await _post(url)


async def test_a_whole_gzip_reply_is_read(canned: tuple[Canned, str]) -> None:
    stub, url = canned
    stub.answer("200 OK", gzip.compress(COMPLETION), "content-encoding: gzip")
    assert await _post(url) == json.loads(COMPLETION)


async def test_an_error_with_a_cut_gzip_body_keeps_its_status(canned: tuple[Canned, str]) -> None:
    stub, url = canned
    body = gzip.compress(b"slow down")[:-8]
    stub.answer("429 Too Many", body, "content-encoding: gzip", "retry-after: 1e300")
    with pytest.raises(RateLimitedError, match="HTTP 429: slow down"):
        await _post(url)


@pytest.mark.parametrize(
    ("status", "body", "error", "message"),
    [
        ("200 OK", b'{"x": 1', RetryableError, "not valid JSON"),
        ("200 OK", '{"x": "\xe9"}'.encode("latin-1"), RetryableError, "not valid JSON"),
        ("200 OK", b"[1, 2]", FatalModelError, "not a JSON object"),
        ("301 Moved", b"", FatalModelError, "redirect refused"),
        ("307 Moved", b"", FatalModelError, "redirect refused"),
    ],
)
async def test_hostile_replies_fail_the_request_with_a_clear_message(
    canned: tuple[Canned, str],
    status: str,
    body: bytes,
    error: type[Exception],
    message: str,
) -> None:
    stub, url = canned
    stub.answer(status, body, "location: http://127.0.0.1:6379/")
    with pytest.raises(error, match=message):
        await _post(url)


@pytest.mark.parametrize("charset", ["hex", "idna"])
async def test_an_error_labelled_with_a_codec_that_is_no_charset_keeps_its_status(
    canned: tuple[Canned, str], charset: str
) -> None:
    stub, url = canned
    stub.answer("429 Too Many", b"slow\xff down", f"content-type: text/plain; charset={charset}")
    with pytest.raises(RateLimitedError, match="HTTP 429: slow\ufffd down"):
        await _post(url)


@pytest.mark.parametrize(
    "url",
    ["http://93.184.216.34/v 1", "http://93.184.216.34/vé1", "http://93.184.216.34/v1\x00"],
)
def test_an_address_no_request_line_can_carry_is_refused(url: str) -> None:
    with pytest.raises(FatalModelError, match="printable ASCII"):
        check_endpoint(url, frozenset())


@pytest.mark.parametrize("path", ["/v 1", "/vé1", "/v1?a=b c"])
async def test_a_saved_address_that_cannot_be_sent_fails_before_connecting(path: str) -> None:
    connected = asyncio.Event()

    async def note(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected.set()
        writer.close()

    server = await asyncio.start_server(note, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(FatalModelError, match="the address cannot be sent"):
            await _post(f"http://127.0.0.1:{port}{path}/chat/completions")
    assert not connected.is_set()


async def test_token_counts_past_any_reply_are_capped_and_lone_surrogates_pass_through(
    canned: tuple[Canned, str],
) -> None:
    """2**40 failed its run's batch on PostgreSQL (a 32-bit column) at every retry; the lone
    surrogate is valid JSON, replaced where replies are stored (test_sweep_models_replies)."""
    stub, url = canned
    usage = {"prompt_tokens": 2**40, "completion_tokens": True}
    body = {"choices": [{"message": {"content": "\ud800"}}], "usage": usage}
    stub.answer("200 OK", json.dumps(body).encode())
    adapter = OpenAICompatAdapter(ModelSpec("openai_compat", "m", url, host_allowlist=LOOPBACK))
    try:
        completion = await adapter.complete(Item(0, "q"), "q")
    finally:
        await adapter.aclose()
    assert (completion.input_tokens, completion.output_tokens) == (MAX_REPLY_TOKENS, 0)
    assert completion.text == "\ud800"


def test_a_saved_key_no_header_carries_is_refused_without_showing_it() -> None:
    """h11's message quoted the value escaped ("sk-live-abc\\n"), which redaction missed."""
    spec = ModelSpec("openai_compat", "m", "http://127.0.0.1:9/v1", "sk-live-abc\n")
    with pytest.raises(FatalModelError, match="Authorization header cannot be sent") as refused:
        OpenAICompatAdapter(spec)
    assert "sk-live" not in str(refused.value)
