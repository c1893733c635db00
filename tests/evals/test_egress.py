"""Egress at connect time: checked addresses only (DNS rebinding), replies read up to a cap."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import socket
import ssl
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from benchgen.evals.adapters import build_adapter
from benchgen.evals.adapters.transport import HttpPool
from benchgen.evals.engine import run_items
from benchgen.evals.netguard import check_endpoint
from benchgen.evals.scorers.judge import judge_answer
from benchgen.evals.types import (
    Answer,
    FatalModelError,
    Item,
    Key,
    ModelSpec,
    RetryableError,
)
from tests.evals.stub_openai import StubOpenAI

pytestmark = pytest.mark.anyio

KEY = "sk-live-abcdefghijklmnop0123"
PUBLIC = "93.184.216.34"
MiB = 1 << 20
_REAL_GETADDRINFO = socket.getaddrinfo


class Resolver:
    """Stands in for DNS: each made-up name answers its lists of addresses in turn (the last
    one from then on); every other name goes to the real resolver."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.calls: Counter[str] = Counter()

    def __call__(self, host: str | bytes | None, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in self.answers:
            return _REAL_GETADDRINFO(host, port, *args, **kwargs)
        self.calls[name] += 1
        turns = self.answers[name]
        addresses = turns[min(self.calls[name], len(turns)) - 1]
        return [_info(address, int(port)) for address in addresses]


def _info(address: str, port: int) -> tuple[Any, ...]:
    if ":" in address:
        return (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))
    return (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[str, list[list[str]]]], Resolver]:
    def install(answers: dict[str, list[list[str]]]) -> Resolver:
        resolver = Resolver(answers)
        monkeypatch.setattr(socket, "getaddrinfo", resolver)
        return resolver

    return install


class Listener:
    """A loopback service that only records whether anyone connected or sent it a byte."""

    def __init__(self) -> None:
        self.contacts = 0
        self.received = b""
        self.port = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.contacts += 1
        with contextlib.suppress(TimeoutError):
            self.received += await asyncio.wait_for(reader.read(1024), 1)
        writer.close()


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    target = Listener()
    server = await asyncio.start_server(target.serve, "127.0.0.1", 0)
    target.port = server.sockets[0].getsockname()[1]
    async with server:
        yield target


async def ask(spec: ModelSpec) -> str:
    adapter = build_adapter(spec)
    try:
        return (await adapter.complete(Item(0, "q"), "Say hi")).text
    finally:
        await adapter.aclose()


def openai(url: str, allowlist: frozenset[str] = frozenset(), **params: Any) -> ModelSpec:
    return ModelSpec("openai_compat", "m", url, KEY, dict(params), allowlist)


# ---------------------------------------------------------------- DNS rebinding


async def test_a_name_that_rebinds_to_loopback_is_refused_when_connecting(
    dns: Callable[..., Resolver], listener: Listener
) -> None:
    resolver = dns({"rebind.test": [[PUBLIC], ["127.0.0.1"]]})
    url = f"http://rebind.test:{listener.port}/v1"
    check_endpoint(url, frozenset())  # at registration the name looked public
    with pytest.raises(FatalModelError) as raised:
        await ask(openai(url))
    message = str(raised.value)
    assert "connection refused" in message and "127.0.0.1" in message and "non-public" in message
    assert KEY not in message
    assert resolver.calls["rebind.test"] == 2  # resolved once more, to connect
    assert listener.contacts == 0 and listener.received == b""


async def test_the_engine_fails_the_question_at_once_without_retrying(
    dns: Callable[..., Resolver], listener: Listener
) -> None:
    dns({"rebind.test": [["127.0.0.1"]]})
    adapter = build_adapter(openai(f"http://rebind.test:{listener.port}/v1"))
    answers: list[Answer] = []
    try:
        await run_items(adapter, [(Item(0, "q"), "q")], max_attempts=4, on_batch=answers.extend)
    finally:
        await adapter.aclose()
    [answer] = answers
    assert answer.attempts == 1 and answer.raw is None
    assert answer.error is not None and "non-public" in answer.error
    assert listener.contacts == 0


async def test_the_judge_is_refused_too(dns: Callable[..., Resolver], listener: Listener) -> None:
    dns({"judge.test": [[PUBLIC], ["127.0.0.1"]]})
    url = f"http://judge.test:{listener.port}/v1"
    check_endpoint(url, frozenset())
    judge = build_adapter(ModelSpec("anthropic", "claude-x", url, KEY))
    try:
        with pytest.raises(FatalModelError, match="non-public"):
            await judge_answer(judge, Item(0, "2+2?"), "ANSWER: 4", Key(("4",)))
    finally:
        await judge.aclose()
    assert listener.contacts == 0


async def test_every_address_is_checked_not_only_the_first(
    dns: Callable[..., Resolver], listener: Listener
) -> None:
    dns({"mixed.test": [[PUBLIC, "127.0.0.1"]]})
    with pytest.raises(FatalModelError, match=r"127\.0\.0\.1"):
        await ask(openai(f"http://mixed.test:{listener.port}/v1"))
    assert listener.contacts == 0


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "0.0.0.0", "[::ffff:127.0.0.1]", "embedded.test"],  # noqa: S104
)
async def test_internal_addresses_are_refused_however_written(
    host: str, dns: Callable[..., Resolver], listener: Listener
) -> None:
    # A spec that never met check_endpoint is still guarded; 0.0.0.0 reaches loopback on Linux.
    dns({"embedded.test": [["::ffff:127.0.0.1"]]})
    with pytest.raises(FatalModelError, match="non-public"):
        await ask(openai(f"http://{host}:{listener.port}/v1"))
    assert listener.contacts == 0


async def test_an_allow_listed_loopback_endpoint_still_works(dns: Callable[..., Resolver]) -> None:
    dns({"model.test": [["127.0.0.1"]]})
    with StubOpenAI() as stub:
        port = stub.base_url.split(":")[2].split("/")[0]
        url = f"http://model.test:{port}/v1"
        assert "ANSWER" in await ask(openai(url, frozenset({"model.test"})))
        # The address was connected to, but the request still names the host it was sent to.
        # (Counted by Host rather than read off the last request: a stray request of an earlier
        # test to a port this stub now holds once landed in between.)
        assert stub.hosts[f"model.test:{port}"] == 1
        assert "ANSWER" in await ask(openai(url, frozenset({f"127.0.0.1:{port}"})))
        assert "ANSWER" in await ask(openai(stub.base_url, frozenset({"127.0.0.1"})))
        with pytest.raises(FatalModelError, match="non-public"):
            await ask(openai(url, frozenset({"127.0.0.1:1"})))  # another port only
        assert sum(stub.received.values()) == 3


async def test_the_next_address_is_tried_when_one_refuses(dns: Callable[..., Resolver]) -> None:
    # The stub listens on 127.0.0.1 only: 127.0.0.2 (loopback too) refuses the connection.
    dns({"two.test": [["127.0.0.2", "127.0.0.1"]]})
    with StubOpenAI() as stub:
        port = stub.base_url.split(":")[2].split("/")[0]
        allowed = frozenset({"two.test"})
        assert "ANSWER" in await ask(openai(f"http://two.test:{port}/v1", allowed))


# ---------------------------------------------------------------- TLS keeps the name


def _certificates(name: str) -> tuple[bytes, bytes, bytes]:
    """A CA (PEM) and a key and certificate (PEM) it signed for `name`."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, leaf_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = leaf_key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ca.public_bytes(pem), key_pem, leaf.public_bytes(pem)


async def test_tls_verifies_the_certificate_for_the_name_and_sends_it_as_sni(
    dns: Callable[..., Resolver], tmp_path: Any
) -> None:
    ca_pem, key_pem, cert_pem = _certificates("model.test")
    (tmp_path / "key.pem").write_bytes(key_pem)
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    sni: list[str | None] = []
    server_tls.sni_callback = lambda sock, name, context: sni.append(name)

    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    dns({"model.test": [["127.0.0.1"]], "other.test": [["127.0.0.1"]]})
    client_tls = ssl.create_default_context(cadata=ca_pem.decode())
    allowed = frozenset({"model.test", "other.test"})
    server = await asyncio.start_server(reply, "127.0.0.1", 0, ssl=server_tls)
    port = server.sockets[0].getsockname()[1]
    async with server:
        pool = HttpPool(10, 4, {}, (), allowlist=allowed, tls=client_tls)
        try:
            # The handshake and the request went through; "ok" is just not a JSON object.
            with pytest.raises(RetryableError, match="HTTP 200 reply is not valid JSON"):
                await pool.post_json(f"https://model.test:{port}/", {})
            assert sni == ["model.test"]
            # The certificate is checked against the name asked for, not the address used; a
            # refused certificate is final, as asking again would meet the same one.
            with pytest.raises(FatalModelError, match="certificate was refused: Hostname mismatch"):
                await pool.post_json(f"https://other.test:{port}/", {})
        finally:
            await pool.aclose()


async def test_a_private_ca_named_by_ssl_cert_file_is_trusted(
    dns: Callable[..., Resolver], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only certifi's CAs were read: a model server behind the operator's own CA was refused
    whatever SSL_CERT_FILE said, though the deploy guide names it for private CAs."""
    ca_pem, key_pem, cert_pem = _certificates("model.test")
    (tmp_path / "key.pem").write_bytes(key_pem)
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    (tmp_path / "ca.pem").write_bytes(ca_pem)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")

    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()
        writer.close()

    dns({"model.test": [["127.0.0.1"]]})
    server = await asyncio.start_server(reply, "127.0.0.1", 0, ssl=server_tls)
    port = server.sockets[0].getsockname()[1]
    async with server:
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
        pool = HttpPool(10, 4, {}, (), allowlist=frozenset({"model.test"}))
        try:
            assert await pool.post_json(f"https://model.test:{port}/", {}) == {}
        finally:
            await pool.aclose()
        monkeypatch.delenv("SSL_CERT_FILE")
        pool = HttpPool(10, 4, {}, (), allowlist=frozenset({"model.test"}))
        try:
            with pytest.raises(FatalModelError, match="unable to get local issuer"):
                await pool.post_json(f"https://model.test:{port}/", {})
        finally:
            await pool.aclose()


# ---------------------------------------------------------------- replies with a byte cap


class Flood:
    """Answers with `status` and a chunked body (no Content-Length) of up to `limit` bytes,
    counting what it managed to hand to the network before the client hung up."""

    def __init__(self, status: int, limit: int = 256 * MiB) -> None:
        self.status = status
        self.limit = limit
        self.sent = 0
        self.finished = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = b"x" * 65536
        frame = f"{len(data):x}\r\n".encode() + data + b"\r\n"
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            start = f"HTTP/1.1 {self.status} Whatever\r\nTransfer-Encoding: chunked\r\n\r\n"
            writer.write(start.encode())
            while self.sent < self.limit:
                writer.write(frame)
                await writer.drain()
                self.sent += len(data)
        except ConnectionError:
            pass  # the client hung up: what we want
        finally:
            writer.close()
            self.finished.set()


async def _flooded(status: int) -> tuple[Exception, Flood, float]:
    flood = Flood(status)
    server = await asyncio.start_server(flood.serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    started = time.perf_counter()
    async with server:
        with pytest.raises((FatalModelError, RetryableError)) as raised:
            await ask(openai(url, frozenset({"127.0.0.1"})))
        elapsed = time.perf_counter() - started
        await asyncio.wait_for(flood.finished.wait(), 10)
    return raised.value, flood, elapsed


async def test_a_reply_past_the_cap_fails_without_reading_the_rest() -> None:
    error, flood, elapsed = await _flooded(200)
    assert isinstance(error, FatalModelError)
    assert str(error) == "reply larger than 4 MiB"
    # Socket buffers hold a few MiB beyond what was read; the body would have been 256 MiB.
    assert flood.sent < 64 * MiB and elapsed < 10


async def test_an_error_body_is_read_only_a_little() -> None:
    error, flood, _ = await _flooded(500)
    assert isinstance(error, RetryableError) and str(error).startswith("HTTP 500: xxx")
    assert len(str(error)) < 400
    assert flood.sent < 64 * MiB


async def test_the_cap_is_a_parameter_and_fails_the_question_once() -> None:
    with StubOpenAI() as stub:
        spec = openai(stub.base_url, frozenset({"127.0.0.1"}), max_reply_bytes=100)
        adapter = build_adapter(spec)
        answers: list[Answer] = []
        try:
            await run_items(adapter, [(Item(0, "q"), "q")], max_attempts=4, on_batch=answers.extend)
        finally:
            await adapter.aclose()
        assert "ANSWER" in await ask(openai(stub.base_url, frozenset({"127.0.0.1"})))
    [answer] = answers
    assert (answer.error, answer.attempts) == ("reply larger than 100 bytes", 1)
