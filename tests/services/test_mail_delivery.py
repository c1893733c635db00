"""SMTP delivery against a real (local) STARTTLS server: the certificate and its name are checked
before any password or message is sent, and failures name no recipient."""

from __future__ import annotations

import asyncio
import datetime
import smtplib
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from benchgen.services.accounts import mail
from benchgen.services.accounts.mail import Letter

LETTER = Letter("mail_1", "alice@example.com", "Reset", "http://x/password/reset/SECRET")


def _certificate(ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name, subject: str) -> bytes:
    """A certificate for `subject` (its key is the CA's: enough for a test) signed by the CA."""
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    )
    return builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


class StartTlsServer:
    """A STARTTLS SMTP server on 127.0.0.1 presenting a self-signed certificate for `name`;
    `seen` keeps the commands it received after the handshake."""

    def __init__(self, tmp: Path, name: str) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.ca_file = tmp / "cert.pem"
        self.ca_file.write_bytes(_certificate(key, subject, name))
        (tmp / "key.pem").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(self.ca_file, tmp / "key.pem")
        self.seen: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self.server.sockets[0].getsockname()[1]
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 mx ESMTP\r\n")
        secure = False
        while line := await reader.readline():
            command = line.decode().strip().upper()
            if secure:
                self.seen.append(command)
            if command.startswith("EHLO"):
                writer.write(b"250-mx\r\n250-STARTTLS\r\n250 AUTH PLAIN\r\n")
            elif command == "STARTTLS":
                writer.write(b"220 go\r\n")
                await writer.drain()
                try:
                    await writer.start_tls(self.tls)
                except (OSError, ssl.SSLError):
                    break  # the client refused our certificate
                secure = True
            elif command == "DATA":
                writer.write(b"354 go\r\n")
                await writer.drain()
                while await reader.readline() not in (b".\r\n", b""):
                    pass
                writer.write(b"250 ok\r\n")
            elif command == "QUIT":
                writer.write(b"221 bye\r\n")
                break
            else:
                writer.write(b"235 ok\r\n" if command.startswith("AUTH") else b"250 ok\r\n")
            await writer.drain()
        writer.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[StartTlsServer]:
    started = StartTlsServer(tmp_path, "localhost")
    yield started
    started.close()


def test_starttls_refuses_a_certificate_nobody_trusts(server: StartTlsServer) -> None:
    url = f"smtp+starttls://mailer:S3cret@localhost:{server.port}"
    with pytest.raises(ssl.SSLCertVerificationError):
        mail.smtp_send(url, "bench@example.org", LETTER)
    # Neither the password nor the message went through the untrusted connection.
    assert server.seen == []


def test_starttls_trusts_a_private_ca_named_by_ssl_cert_file(
    server: StartTlsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(server.ca_file))
    mail.smtp_send(f"smtp+starttls://mailer:S3cret@localhost:{server.port}", "b@x.org", LETTER)
    assert any(command.startswith("AUTH PLAIN") for command in server.seen)
    assert "DATA" in server.seen
    # Trusted, but issued for another name than the one connected to: refused.
    server.seen.clear()
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        mail.smtp_send(f"smtp+starttls://127.0.0.1:{server.port}", "b@x.org", LETTER)
    assert server.seen == []


def test_a_refused_recipient_is_reported_by_code_without_the_address() -> None:
    refused = smtplib.SMTPRecipientsRefused({"stranger@victim.org": (550, b"no such user")})
    assert mail.failure(refused) == "SMTPRecipientsRefused: recipient refused (550)"
    data = smtplib.SMTPDataError(554, b"stranger@victim.org: rejected")
    assert mail.failure(data) == "SMTPDataError: SMTP 554"
