"""The per-run model proxy over its Unix socket, and the in-sandbox TCP relay to it."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchgen.bundles import relay
from benchgen.bundles.proxy import ModelProxy, ProxyRefusal, new_proxy_key

RELAY = Path(relay.__file__)
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "benchgen-model",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "hello from the model"},
            "finish_reason": "stop",
        }
    ],
}
CHAT = {"model": "benchgen-model", "messages": [{"role": "user", "content": "hi"}]}


class FakeModel:
    """A forward function that answers with a canned completion or raises what it is told to."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        if self.error is not None:
            raise self.error
        return COMPLETION


@pytest.fixture
def sock() -> Iterator[Path]:
    # AF_UNIX paths are limited to ~107 bytes; pytest's tmp_path can be longer than that.
    folder = Path(tempfile.mkdtemp(prefix="bgp", dir="/tmp"))
    yield folder / "model.sock"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def key() -> str:
    return new_proxy_key()


def client(path: Path, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    transport = httpx.HTTPTransport(uds=str(path))
    return httpx.Client(transport=transport, base_url="http://proxy", headers=headers)


def test_key_shape() -> None:
    key = new_proxy_key()
    assert key.startswith("bgr_") and len(key) == 44
    assert new_proxy_key() != key


def test_chat_completion_is_forwarded(sock: Path, key: str) -> None:
    model = FakeModel()
    with ModelProxy(sock, key, model) as proxy, client(sock, key) as http:
        assert sock.stat().st_mode & 0o777 == 0o666
        for path in ("/v1/chat/completions", "/chat/completions"):
            reply = http.post(path, json=CHAT)
            assert reply.status_code == 200
            assert reply.json() == COMPLETION
        assert proxy.calls == 2
    assert model.bodies == [CHAT, CHAT]
    assert proxy.calls == 2
    assert not sock.exists()


def test_models_list(sock: Path, key: str) -> None:
    with ModelProxy(sock, key, FakeModel(), model_name="m1"), client(sock, key) as http:
        reply = http.get("/v1/models")
    assert reply.status_code == 200
    assert reply.json() == {
        "object": "list",
        "data": [{"id": "m1", "object": "model", "owned_by": "benchgen"}],
    }


@pytest.mark.parametrize("given", [None, "bgr_wrong", "wrong-length"])
def test_wrong_or_missing_key_is_401(sock: Path, key: str, given: str | None) -> None:
    model = FakeModel()
    with ModelProxy(sock, key, model) as proxy, client(sock, given) as http:
        chat = http.post("/v1/chat/completions", json=CHAT)
        models = http.get("/v1/models")
        assert proxy.calls == 0
    assert chat.status_code == models.status_code == 401
    assert chat.json()["error"]["code"] == "invalid_api_key"
    assert key not in chat.text
    assert model.bodies == []


def test_other_routes_are_404(sock: Path, key: str) -> None:
    with ModelProxy(sock, key, FakeModel()), client(sock, key) as http:
        assert http.post("/v1/completions", json=CHAT).status_code == 404
        assert http.get("/").status_code == 404
        assert http.delete("/v1/chat/completions").status_code == 404


def test_body_limits_and_shape(sock: Path, key: str) -> None:
    model = FakeModel()
    with ModelProxy(sock, key, model, max_body_bytes=1000), client(sock, key) as http:
        big = http.post("/v1/chat/completions", content=b"{" + b" " * 2000 + b"}")
        not_json = http.post("/v1/chat/completions", content=b"not json")
        not_object = http.post("/v1/chat/completions", json=[1, 2])
        stream = http.post("/v1/chat/completions", json={**CHAT, "stream": True})
    assert big.status_code == 413
    assert big.json()["error"]["type"] == "invalid_request_error"
    assert not_json.status_code == not_object.status_code == 400
    assert "not valid JSON" in not_json.json()["error"]["message"]
    assert stream.status_code == 400
    assert stream.json()["error"]["message"] == "streaming is not supported by this proxy"
    assert model.bodies == []


def test_refusal_passes_status_and_message(sock: Path, key: str) -> None:
    refusal = ProxyRefusal(402, "the run's spending cap is reached")
    with ModelProxy(sock, key, FakeModel(refusal)), client(sock, key) as http:
        reply = http.post("/v1/chat/completions", json=CHAT)
    assert reply.status_code == 402
    assert reply.json()["error"]["message"] == "the run's spending cap is reached"


def test_upstream_failure_is_generic_502(sock: Path, key: str) -> None:
    model = FakeModel(RuntimeError("secret-upstream-detail"))
    with ModelProxy(sock, key, model) as proxy, client(sock, key) as http:
        reply = http.post("/v1/chat/completions", json=CHAT)
        assert proxy.calls == 1
    assert reply.status_code == 502
    assert "secret-upstream-detail" not in reply.text
    assert reply.json()["error"]["type"] == "server_error"


def test_concurrent_forwards_are_capped(sock: Path, key: str) -> None:
    lock = threading.Lock()
    active, peak = [0], [0]

    def slow_model(body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        return COMPLETION

    def call() -> int:
        with client(sock, key) as http:
            return http.post("/v1/chat/completions", json=CHAT).status_code

    with ModelProxy(sock, key, slow_model, max_concurrency=2) as proxy:
        with ThreadPoolExecutor(6) as pool:
            statuses = list(pool.map(lambda _: call(), range(6)))
        assert proxy.calls == 6
    assert statuses == [200] * 6
    assert peak[0] <= 2


def test_exit_cuts_idle_keep_alive_connections(sock: Path, key: str) -> None:
    with ModelProxy(sock, key, FakeModel()) as proxy:
        conn = socket.socket(socket.AF_UNIX)
        conn.connect(str(sock))
        request = b"GET /v1/models HTTP/1.1\r\nHost: p\r\nAuthorization: Bearer " + key.encode()
        conn.sendall(request + b"\r\n\r\n")
        conn.settimeout(5)
        head, body = _read_response(conn)
        assert b"200 OK" in head and b"benchgen-model" in body
    assert conn.recv(4096) == b""  # the proxy closed the kept-alive connection on exit
    conn.close()
    assert proxy.calls == 0
    assert not sock.exists()


def _read_response(conn: socket.socket) -> tuple[bytes, bytes]:
    """One whole response (the head, then a body of Content-Length bytes), however it arrives."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(4096)
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += conn.recv(4096)
    return head, body


# The command run behind the relay: a plain urllib client, as an ingestion program might be.
CLIENT_SCRIPT = """
import json, sys, urllib.request
port, key = sys.argv[1], sys.argv[2]
request = urllib.request.Request(
    "http://127.0.0.1:%s/v1/chat/completions" % port,
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"},
)
with urllib.request.urlopen(request, timeout=10) as reply:
    print(json.load(reply)["choices"][0]["message"]["content"])
sys.exit(3)
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def run_relay(sock: Path, port: int, *command: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(RELAY), "--socket", str(sock), "--port", str(port), "--", *command]
    return subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)  # noqa: S603


def relay_processes(sock: Path) -> list[int]:
    """Live processes still running relay.py for this socket (the forked relay child)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if proc.name.isdigit() and str(sock).encode() in cmdline and b"relay.py" in cmdline:
            found.append(int(proc.name))
    return found


def test_relay_end_to_end(sock: Path, key: str) -> None:
    port = free_port()
    with ModelProxy(sock, key, FakeModel()) as proxy:
        done = run_relay(sock, port, sys.executable, "-c", CLIENT_SCRIPT, str(port), key)
        assert proxy.calls == 1
        deadline = time.monotonic() + 5
        while relay_processes(sock) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert relay_processes(sock) == []
    # The command's own output and exit status come through untouched.
    assert done.stdout == "hello from the model\n"
    assert done.returncode == 3
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass


def test_relay_refuses_without_socket(sock: Path) -> None:
    marker = sock.parent / "ran"
    done = run_relay(sock, free_port(), "touch", str(marker))
    assert done.returncode == 2
    assert "no model proxy socket" in done.stderr
    assert not marker.exists()


def test_relay_refuses_when_port_is_taken(sock: Path, key: str) -> None:
    marker = sock.parent / "ran"
    with ModelProxy(sock, key, FakeModel()), socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = run_relay(sock, taken.getsockname()[1], "touch", str(marker))
    assert done.returncode == 2
    assert "cannot listen" in done.stderr
    assert not marker.exists()


def test_relay_reports_missing_command(sock: Path, key: str) -> None:
    with ModelProxy(sock, key, FakeModel()):
        done = run_relay(sock, free_port(), "/nonexistent/benchgen-command")
    assert done.returncode == 127
    assert "cannot run" in done.stderr


def test_relay_usage_errors(sock: Path) -> None:
    assert relay.main(["--socket", str(sock), "--port", "8080"]) == 2
    assert relay.main(["--socket", str(sock), "--port", "99999", "--", "true"]) == 2
    assert relay.main(["--port", "8080", "--", "true"]) == 2


def test_open_connections_are_capped_and_lengths_are_ascii_digits(sock: Path, key: str) -> None:
    """Every connection held a thread of the server's process, without limit; a Content-Length
    of "²" passed the digit check, then int() failed and the connection dropped unanswered."""
    with ModelProxy(sock, key, FakeModel(), max_connections=2):
        # Headers are read as Latin-1: this is "²".
        auth = b"Authorization: Bearer " + key.encode()
        request = b"POST /v1/chat/completions HTTP/1.1\r\n" + auth + b"\r\n"
        answer = _exchange(sock, request + b"Content-Length: \xb2\r\n\r\n{}")
        assert b"400" in answer and b"not a number" in answer
        held = [socket.socket(socket.AF_UNIX) for _ in range(2)]
        for conn in held:
            conn.connect(str(sock))
        refused = _exchange(sock, b"")
        assert b"503" in refused and b"too many open connections" in refused
        for conn in held:
            conn.close()


def _exchange(sock: Path, request: bytes) -> bytes:
    """What the proxy sends for `request` on a new connection, until it closes it."""
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(sock))
        conn.settimeout(5)
        if request:  # a connection refused at once may be closed before anything is sent
            conn.sendall(request)
        return _read_to_end(conn)


def _read_to_end(conn: socket.socket) -> bytes:
    """What the proxy sent before it closed the connection (nothing when it hung up)."""
    data = b""
    while chunk := conn.recv(4096):
        data += chunk
    return data
