"""Inside the sandbox: relay 127.0.0.1:PORT to the model proxy's Unix socket, then run a command."""

# This file runs with the sandbox's own Python (possibly older than BenchGen's), as a script:
# stdlib only, no benchgen imports, and no syntax newer than Python 3.7 at run time.

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import stat
import sys
import threading

_PR_SET_PDEATHSIG = 1
_CHUNK = 65536
_PARENT_POLL_S = 0.5


def _usage_error(message: str) -> int:
    print("relay: " + message, file=sys.stderr)
    return 2


def _parse(argv: list[str]) -> tuple[str, int, list[str]] | str:
    """Returns (socket path, port, command) or an error message."""
    if "--" not in argv:
        return "usage: relay.py --socket PATH --port PORT -- COMMAND [ARGS...]"
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    values = {options[i]: options[i + 1] for i in range(0, len(options) - 1, 2)}
    if len(options) != 4 or set(values) != {"--socket", "--port"} or not command:
        return "usage: relay.py --socket PATH --port PORT -- COMMAND [ARGS...]"
    port = values["--port"]
    if not port.isdigit() or not 0 < int(port) < 65536:
        return "--port must be a number from 1 to 65535"
    return values["--socket"], int(port), command


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def _listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        # Loopback only: the relay exists for programs inside this sandbox, nobody else.
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
    except OSError:
        listener.close()
        raise
    return listener


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copies one direction until end of stream, then half-closes the sink; cuts both on error."""
    try:
        while True:
            data = source.recv(_CHUNK)
            if not data:
                break
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _serve_connection(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        upstream.close()
        client.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    upstream.close()
    client.close()


def _die_with_parent() -> None:
    """Asks the kernel to SIGTERM this process when its parent (the command) ends."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass  # Not Linux or no ctypes: the getppid() poll in _accept_loop still ends us.


def _accept_loop(listener: socket.socket, socket_path: str, parent: int) -> None:
    with selectors.DefaultSelector() as selector:
        selector.register(listener, selectors.EVENT_READ)
        # Also the fallback for prctl: once the command is gone we are re-parented.
        while os.getppid() == parent:
            if not selector.select(_PARENT_POLL_S):
                continue
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(
                target=_serve_connection, args=(client, socket_path), daemon=True
            ).start()


def _detach_stdio() -> None:
    # The command's output pipes must reach end of file when the command ends, so the relay
    # child must not hold them open; it has nothing to say there anyway.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _run_relay(listener: socket.socket, socket_path: str, parent: int) -> None:
    _die_with_parent()
    if os.getppid() != parent:
        os._exit(0)  # The command already ended before prctl took effect.
    _detach_stdio()
    try:
        _accept_loop(listener, socket_path, parent)
    finally:
        # _exit: never run the parent's inherited cleanup (atexit, buffered output) a second time.
        os._exit(0)


def main(argv: list[str] | None = None) -> int:
    """Checks the socket, binds the port, forks the relay, and becomes the command."""
    parsed = _parse(sys.argv[1:] if argv is None else argv)
    if isinstance(parsed, str):
        return _usage_error(parsed)
    socket_path, port, command = parsed
    if not _is_socket(socket_path):
        return _usage_error("no model proxy socket at " + socket_path)
    try:
        listener = _listen(port)
    except OSError as exc:
        return _usage_error(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    if os.fork() == 0:
        _run_relay(listener, socket_path, parent)
    # The listener is close-on-exec: after exec only the relay child holds the port.
    # exec, not a child process, so the command's exit status is the sandbox's exit status.
    try:
        # Running the organiser's command is this script's job; it is already sandboxed.
        os.execvp(command[0], command)  # noqa: S606
    except OSError as exc:
        listener.close()
        print(f"relay: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
