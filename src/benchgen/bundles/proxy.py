"""A per-run OpenAI-compatible model proxy on a Unix socket, so sandboxed programs reach a model."""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import socket
import socketserver
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import Any

Forward = Callable[[dict[str, Any]], dict[str, Any]]

_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MODELS_PATHS = frozenset({"/v1/models", "/models"})
# OpenAI's error `type` and `code` per status, so SDK clients raise their usual exception classes.
_ERROR_KINDS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    402: ("insufficient_quota", "insufficient_quota"),
    403: ("permission_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    411: ("invalid_request_error", "length_required"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}
# A slow or idle client may hold a connection thread this long between reads, no longer.
_SOCKET_TIMEOUT_S = 120.0
# Past this many open connections a new one is answered 503 at once: each holds a thread of the
# server's own process, and a program could otherwise open connections until it ran out of them.
_MAX_CONNECTIONS = 128


class ProxyRefusal(Exception):
    """Raised by a forward function to refuse a call with an HTTP status and a readable message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def new_proxy_key() -> str:
    """A fresh per-run key: `bgr_` and 40 URL-safe random characters."""
    return "bgr_" + secrets.token_urlsafe(30)


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind, code = _ERROR_KINDS.get(status, ("server_error", "server_error"))
    return {"error": {"message": message, "type": kind, "code": code}}


def _too_many_connections() -> bytes:
    status = 503
    message = "too many open connections to the model proxy: close some, then retry"
    body = json.dumps(_error_body(status, message)).encode()
    head = f"HTTP/1.1 {status} Service Unavailable\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


_TOO_MANY_CONNECTIONS = _too_many_connections()


class _ProxyServer(socketserver.ThreadingUnixStreamServer):
    """The socket server plus the per-run state its handlers share."""

    daemon_threads = True
    # Exit must not wait on a forward that is still talking to the model; see ModelProxy.__exit__.
    block_on_close = False

    def __init__(
        self, path: Path, key: str, forward: Forward, model_name: str, limits: tuple[int, int, int]
    ) -> None:
        self.key = key.encode()
        self.forward = forward
        self.model_name = model_name
        self.max_body_bytes, max_concurrency, max_connections = limits
        self.gate = threading.BoundedSemaphore(max_concurrency)
        self.slots = threading.BoundedSemaphore(max_connections)
        self.lock = threading.Lock()
        self.calls = 0
        self.closed = False
        self.connections: set[socket.socket] = set()
        super().__init__(str(path), _ProxyHandler)

    def count_call(self) -> None:
        with self.lock:
            self.calls += 1

    def cut_connections(self) -> None:
        with self.lock:
            self.closed = True
            open_now = list(self.connections)
        for conn in open_now:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        if self.slots.acquire(blocking=False):
            return True
        with contextlib.suppress(OSError):
            request.sendall(_TOO_MANY_CONNECTIONS)  # a few hundred bytes: the buffer takes them
        return False

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-reply is routine; stay quiet rather than print tracebacks.
        return None


class _ProxyHandler(BaseHTTPRequestHandler):
    """One connection: routes, the key check, body limits, and the call to forward."""

    protocol_version = "HTTP/1.1"
    server_version = "benchgen-model-proxy"
    sys_version = ""
    timeout = _SOCKET_TIMEOUT_S
    server: _ProxyServer

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        # Request lines and errors could carry the key or prompt text: the proxy never logs.
        return None

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # http.server's own errors (bad request line, oversized headers) in the same JSON shape.
        self.close_connection = True
        self._reply(code, _error_body(code, message or "bad request"))

    def do_GET(self) -> None:
        if self._path() not in _MODELS_PATHS:
            self._fail(404, "no such route")
        elif self._authorized():
            model = {"id": self.server.model_name, "object": "model", "owned_by": "benchgen"}
            self._reply(200, {"object": "list", "data": [model]})

    def do_POST(self) -> None:
        if self._path() not in _CHAT_PATHS:
            self._fail(404, "no such route")
            return
        if not self._authorized():
            return
        body = self._read_json()
        if body is None:
            return
        if body.get("stream") is True:
            self._fail(400, "streaming is not supported by this proxy")
            return
        self._forward(body)

    def _reject_method(self) -> None:
        self._fail(404, "no such route")

    do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _reject_method

    def _path(self) -> str:
        return self.path.split("?", 1)[0]

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        # Constant-time comparison so the key cannot be guessed one character at a time.
        if scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), self.server.key
        ):
            return True
        self._fail(401, "a valid API key is required (Authorization: Bearer <key>)")
        return False

    def _read_json(self) -> dict[str, Any] | None:
        raw_length = self.headers.get("Content-Length")
        if raw_length is None:
            self._fail(411, "a Content-Length header is required")
            return None
        # isdigit alone takes "²", which int() refuses.
        if not (raw_length.isascii() and raw_length.isdigit()):
            self._fail(400, "the Content-Length header is not a number")
            return None
        length = int(raw_length)
        if length > self.server.max_body_bytes:
            self._fail(413, f"the request body is over {self.server.max_body_bytes} bytes")
            return None
        try:
            body = json.loads(self.rfile.read(length))
        except (UnicodeDecodeError, ValueError):
            self._fail(400, "the request body is not valid JSON")
            return None
        if not isinstance(body, dict):
            self._fail(400, "the request body must be a JSON object")
            return None
        return body

    def _forward(self, body: dict[str, Any]) -> None:
        with self.server.gate:
            if self.server.closed:
                self._fail(503, "the run's model proxy is closed")
                return
            self.server.count_call()
            try:
                reply = json.dumps(self.server.forward(body)).encode()
            except ProxyRefusal as refusal:
                self._fail(refusal.status, refusal.message)
                return
            except Exception:
                # Upstream errors can quote request headers, URLs or provider keys; the sandboxed
                # program is untrusted, so it gets a generic message and nothing of the exception.
                self._fail(502, "the model call failed upstream")
                return
        self._send(200, reply)

    def _fail(self, status: int, message: str) -> None:
        # After an error the unread rest of a body may still be in the stream: do not reuse it.
        self.close_connection = True
        self._reply(status, _error_body(status, message))

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        self._send(status, json.dumps(payload).encode())

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


class ModelProxy:
    """Serves one run's model calls on a Unix socket while it is entered; counts forwarded calls."""

    def __init__(
        self,
        socket_path: Path,
        key: str,
        forward: Forward,
        *,
        model_name: str = "benchgen-model",
        max_body_bytes: int = 4 << 20,
        max_concurrency: int = 8,
        max_connections: int = _MAX_CONNECTIONS,
    ) -> None:
        self.socket_path = socket_path
        self._key = key
        self._forward = forward
        self._model_name = model_name
        self._limits = (max_body_bytes, max_concurrency, max_connections)
        self._server: _ProxyServer | None = None
        self._thread: threading.Thread | None = None
        self._final_calls = 0

    @property
    def calls(self) -> int:
        """How many times forward was called (refused and failed calls included)."""
        return self._server.calls if self._server is not None else self._final_calls

    def __enter__(self) -> ModelProxy:
        server = _ProxyServer(
            self.socket_path, self._key, self._forward, self._model_name, self._limits
        )
        # The sandboxed program runs as another uid, so the socket must be world-connectable.
        # What guards it is the per-run key every request must carry, not file permissions.
        os.chmod(self.socket_path, 0o666)  # noqa: S103
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._server = server
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.shutdown()
        thread.join()
        server.server_close()
        # Connections left open (idle keep-alive, or a forward still running) are cut so nothing
        # reaches the model after the run is over; a forward already under way still completes.
        server.cut_connections()
        self.socket_path.unlink(missing_ok=True)
        self._final_calls = server.calls
        self._server = self._thread = None
