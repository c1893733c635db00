"""A local SMTP server for tests (127.0.0.1 only): what it accepted, as sent, and a way to make
it slow."""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
from collections import Counter
from dataclasses import dataclass
from email.message import EmailMessage


@dataclass(frozen=True)
class Received:
    """One accepted message: its envelope recipients and the message as the server read it."""

    recipients: list[str]
    message: EmailMessage


class SmtpStub:
    """Keeps every message it accepts (`received`); answers RCPT TO for an address in
    `replies` with that reply instead, counting what it was asked. `utf8` advertises SMTPUTF8.
    While `open` is clear, a message's end of DATA waits for it (a slow server); `in_data` is
    set once a message's DATA began."""

    def __init__(self, utf8: bool = False) -> None:
        self.utf8 = utf8
        self.received: list[Received] = []
        self.open = threading.Event()
        self.open.set()
        self.in_data = threading.Event()
        self.replies: dict[str, bytes] = {}  # RCPT TO's reply for an address, instead of 250
        self.recipients_asked: Counter[str] = Counter()
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self.server.sockets[0].getsockname()[1]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def sent(self) -> list[tuple[str, str]]:
        """(recipient, subject) for each recipient of each message accepted."""
        return [(to, str(got.message["Subject"])) for got in self.received for to in got.recipients]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 stub ESMTP\r\n")
        recipients: list[str] = []
        while line := await reader.readline():
            verb = line.decode("utf-8", "replace").strip()
            if verb.upper().startswith("EHLO"):
                writer.write(b"250-stub\r\n250-SMTPUTF8\r\n" if self.utf8 else b"250-stub\r\n")
                writer.write(b"250 8BITMIME\r\n")
            elif verb.upper().startswith("RCPT TO:"):
                to = verb[8:].split()[0].strip("<>")
                self.recipients_asked[to] += 1
                reply = self.replies.get(to, b"250 ok")
                recipients += [to] if reply.startswith(b"2") else []
                writer.write(reply + b"\r\n")
            elif verb.upper() == "DATA":
                writer.write(b"354 go on\r\n")
                await writer.drain()
                self.in_data.set()
                data = b""
                while (chunk := await reader.readline()) not in (b".\r\n", b""):
                    data += chunk
                await asyncio.get_running_loop().run_in_executor(None, self.open.wait)
                parsed = email.message_from_bytes(data, policy=email.policy.default)
                assert isinstance(parsed, EmailMessage)
                self.received.append(Received(recipients, parsed))
                recipients = []
                writer.write(b"250 queued\r\n")
            elif verb.upper() == "QUIT":
                writer.write(b"221 bye\r\n")
                await writer.drain()
                break
            else:  # HELO, MAIL FROM, RSET, NOOP
                writer.write(b"250 ok\r\n")
            await writer.drain()
        writer.close()

    def close(self) -> None:
        self.open.set()
        # The server is the loop's: closed from this thread, it raced a connection ending in the
        # loop's (both woke the server's waiters, and the second found none).
        self.loop.call_soon_threadsafe(self._stop)
        self.thread.join(5)

    def _stop(self) -> None:
        self.server.close()
        self.loop.stop()
