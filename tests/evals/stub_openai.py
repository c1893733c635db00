"""A fast OpenAI- and Anthropic-compatible stub endpoint on 127.0.0.1, with injectable faults."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import socket
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

_CHOICE_LINE = re.compile(r"^\s*\(?([A-Z])[.):]\s+(.+?)\s*$", re.M)
_REASONS = {200: "OK", 302: "Found", 401: "Unauthorized", 429: "Too Many Requests"}


@dataclass(frozen=True)
class Fault:
    """How to misbehave on one request: a status other than 200, a delay, extra headers.

    `body` may contain "{auth}", replaced by the credential the client sent (to test that
    clients redact a key a server echoes back).
    """

    status: int = 200
    delay_s: float = 0.0
    body: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def rate_limited(cls, retry_after: str = "0") -> Fault:
        """429 with a Retry-After header."""
        return cls(429, headers=(("Retry-After", retry_after),), body='{"error": "slow down"}')

    @classmethod
    def server_error(cls) -> Fault:
        """500."""
        return cls(500, body='{"error": "boom"}')

    @classmethod
    def slow(cls, delay_s: float) -> Fault:
        """A correct answer, `delay_s` late (hang: a delay past the client's timeout)."""
        return cls(200, delay_s=delay_s)

    @classmethod
    def completion(
        cls, message: str | dict[str, Any], delay_s: float = 0.0, number: int = 1
    ) -> Fault:
        """A whole OpenAI chat completion of `message` (the assistant's text, or its message
        with tool calls), `delay_s` late; its usage has the `total_tokens` Inspect requires."""
        if isinstance(message, str):
            message = {"role": "assistant", "content": message}
        body = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": "stub-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
        }
        json_type = (("Content-Type", "application/json"),)
        return cls(200, delay_s=delay_s, body=json.dumps(body), headers=json_type)


# Called with (request number from 1, prompt); returns a Fault or None for a normal reply.
FaultHook = Callable[[int, str], Fault | None]


def stub_letter(prompt: str) -> str | None:
    """The letter the stub answers for a prompt: a hash of the choice texts, or None for qa."""
    choices = _CHOICE_LINE.findall(prompt)
    if not choices:
        return None
    digest = hashlib.sha256("\n".join(text for _, text in choices).encode()).digest()
    letter: str = choices[digest[0] % len(choices)][0]
    return letter


class StubOpenAI:
    """`with StubOpenAI(latency_s=0.05) as stub:` serves `stub.base_url` (…/v1) until exit.

    Routes: POST /v1/chat/completions (OpenAI) and POST /v1/messages (Anthropic). Counters:
    `received` (every request, by prompt), `answered` (200 replies, by prompt), `in_flight_seen`
    (requests being handled when each one arrived, in arrival order), `last_headers`, `hosts`
    (requests by their Host header).
    """

    def __init__(self, latency_s: float = 0.0, fail: FaultHook | None = None) -> None:
        self.latency_s = latency_s
        self.fail = fail
        self.received: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.in_flight_seen: list[int] = []
        self.last_headers: dict[str, str] = {}
        self.hosts: Counter[str] = Counter()
        self.base_url = ""
        self._in_flight = 0
        self._requests = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)

    def __enter__(self) -> StubOpenAI:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("stub server did not start")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._loop is not None and self._stopped is not None
        self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(10)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=512)
        port = server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._ready.set()
        async with server:
            await self._stopped.wait()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        # Without NODELAY, Nagle's algorithm holds small replies back (~40 ms per reply).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while request := await _read_request(reader):
                reply = await self._respond(reader, *request)
                if not reply:  # the client gave up waiting (its timeout)
                    break
                writer.write(reply)
                await writer.drain()
        # Shutdown cancels handlers mid-sleep; ending quietly keeps asyncio from logging each one.
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _respond(
        self, reader: asyncio.StreamReader, path: str, headers: dict[str, str], body: bytes
    ) -> bytes:
        payload = json.loads(body or b"{}")
        prompt = str(payload.get("messages", [{}])[-1].get("content", ""))
        self._requests += 1
        self.received[prompt] += 1
        self.last_headers = headers
        self.hosts[headers.get("host", "")] += 1
        self.in_flight_seen.append(self._in_flight)
        self._in_flight += 1
        try:
            fault = (self.fail(self._requests, prompt) if self.fail else None) or Fault()
            await asyncio.sleep(self.latency_s + fault.delay_s)
        finally:
            self._in_flight -= 1
        if reader.at_eof():  # the client hung up while we slept: nothing counts as answered
            return b""
        if fault.status != 200 or fault.body is not None:
            auth = headers.get("authorization") or headers.get("x-api-key", "")
            return _http(fault.status, (fault.body or "").replace("{auth}", auth), fault.headers)
        self.answered[prompt] += 1
        return _http(200, json.dumps(_reply(path, payload, prompt)), fault.headers)


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    path = lines[0].split(" ")[1]
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return path, headers, body


def _reply(path: str, payload: dict[str, Any], prompt: str) -> dict[str, Any]:
    letter = stub_letter(prompt)
    text = f"Thinking it over.\nANSWER: {letter or 'stub'}"
    usage_in, usage_out = len(prompt.split()), len(text.split())
    if path.endswith("/messages"):
        return {
            "type": "message",
            "role": "assistant",
            "model": payload.get("model"),
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": usage_in, "output_tokens": usage_out},
        }
    return {
        "object": "chat.completion",
        "model": payload.get("model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out},
    }


def _http(status: int, body: str, headers: tuple[tuple[str, str], ...]) -> bytes:
    data = body.encode()
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        "Content-Type: application/json",
        f"Content-Length: {len(data)}",
        *(f"{name}: {value}" for name, value in headers),
    ]
    # Headers and body in one write: split writes cost a delayed-ACK round trip each.
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data
