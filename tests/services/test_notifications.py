"""Run notifications: settings only the user (or their token) sets, a signed webhook sent once
through the egress guard, never following redirects, and mail through the outbox."""

from __future__ import annotations

import hashlib
import hmac
import json
import smtplib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import select

from benchgen.agent.brains.offline.never_words import never_action
from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput, PermissionDenied
from benchgen.core.permissions import Action, PrincipalKind, Scope
from benchgen.db.tables import NotificationSetting, OutboxEmail, RunNotification, User
from benchgen.jobs import handlers
from benchgen.jobs.worker import push_outbox
from benchgen.services.queue import Claimed
from benchgen.services.runs import launch, notifications, run_log
from benchgen.services.runtime import Runtime
from tests.services.test_runs import work_all
from tests.smtp_stub import SmtpStub
from tests.support import MCQ, OPERATOR, World

FIRST = "mdl_builtin_first"
WORKER = handlers.WORKER


@dataclass
class Receiver:
    """A local HTTP server that records each request and answers with `status`."""

    status: int = 204
    location: str = ""
    seen: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def receivers() -> Iterator[list[Receiver]]:
    made: list[tuple[ThreadingHTTPServer, threading.Thread]] = []
    found: list[Receiver] = []

    def start() -> Receiver:
        receiver = Receiver()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                receiver.seen.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "5")
                self.end_headers()
                self.wfile.write(b"hello")

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Polled often: shutdown() waits out one poll, half a second each by default.
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        made.append((server, thread))
        receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        found.append(receiver)
        return receiver

    yield [start(), start()]
    for server, thread in made:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def open_local(runtime: Runtime) -> Runtime:
    # The operator's allow-list opens 127.0.0.1, as it would for a local model server.
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    return runtime


def _finished_run(world: World, runtime: Runtime, user_id: str) -> str:
    bm = world.benchmark(user_id, MCQ)
    run_id = world.do(Principal.web(user_id), launch.start_run, bm, FIRST).id
    work_all(runtime)
    return run_id


def _log(world: World, user_id: str, run_id: str) -> list[str]:
    return [line.line for line in world.do(Principal.web(user_id), run_log.read_log, run_id)]


def _redeliver(runtime: Runtime, run_id: str) -> None:
    """The same job handed out again (a lost lease): the run is already final."""
    handlers.execute_run(runtime, Claimed("job_again", "run", {"run_id": run_id}, 2, False))


def test_webhook_is_signed_and_sent_once_even_when_redelivered(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    hook = receivers[0]
    ana = world.user("ana@example.com")
    saved = world.do(
        Principal.web(ana), notifications.update_notification_settings, False, hook.url
    )
    assert saved.webhook_secret and saved.webhook_secret.startswith("whsec_")
    shown = world.do(Principal.web(ana), notifications.get_notification_settings)
    assert shown.has_webhook_secret and shown.webhook_secret is None  # shown once only

    run_id = _finished_run(world, open_local, ana)
    assert len(hook.seen) == 1
    headers, body = hook.seen[0]
    timestamp = headers["x-benchgen-timestamp"]
    expected = hmac.new(
        saved.webhook_secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(headers["x-benchgen-signature"], f"sha256={expected}")
    payload = json.loads(body)
    assert payload["event"] == "run.finished" and payload["run_id"] == run_id
    assert payload["status"] == "completed" and "accuracy" in payload["scores"]
    assert set(payload) == {"event", "run_id", "benchmark_id", "status", "scores", "finished_at"}

    # Notified again, and the job run again: the claim is taken, nothing is sent twice.
    world.do(WORKER, notifications.notify_run_finished, run_id)
    _redeliver(open_local, run_id)
    assert len(hook.seen) == 1
    assert "Notification: webhook sent" in _log(world, ana, run_id)


def test_a_claim_left_pending_by_a_crash_is_sent_by_the_redelivered_job(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    hook = receivers[0]
    ana = world.user("ana@example.com")
    run_id = _finished_run(world, open_local, ana)  # no settings yet: nothing claimed
    world.do(Principal.web(ana), notifications.update_notification_settings, False, hook.url)
    # The finishing transaction claimed the webhook, then the worker died before sending.
    world.do(WORKER, notifications.notify_run_finished, run_id)
    assert hook.seen == []
    _redeliver(open_local, run_id)
    _redeliver(open_local, run_id)
    assert len(hook.seen) == 1


def test_redirects_are_not_followed_and_failures_go_to_the_run_log(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    redirecting, target = receivers
    redirecting.status, redirecting.location = 302, target.url
    ana = world.user("ana@example.com")
    world.do(Principal.web(ana), notifications.update_notification_settings, False, redirecting.url)
    run_id = _finished_run(world, open_local, ana)
    assert len(redirecting.seen) == 1 and target.seen == []
    log = _log(world, ana, run_id)
    assert "Notification: webhook failed: HTTP 302: redirect not followed" in log
    assert any(line.startswith("Completed") for line in log)  # the run itself is fine

    redirecting.status, redirecting.location = 404, ""
    second = _finished_run(world, open_local, ana)
    assert "Notification: webhook failed: HTTP 404" in _log(world, ana, second)


def test_a_private_address_is_refused_at_connect_time(
    world: World, runtime: Runtime, receivers: list[Receiver]
) -> None:
    hook = receivers[0]
    ana = world.user("ana@example.com")
    # DNS may answer differently when the hook is used than when it was saved: a name saved
    # while the operator allowed it is checked again, by the address it leads to, on use.
    by_name = hook.url.replace("127.0.0.1", "localhost")
    closed = runtime.settings
    runtime.settings = closed.model_copy(update={"model_host_allowlist": "localhost"})
    world.do(Principal.web(ana), notifications.update_notification_settings, False, by_name)
    runtime.settings = closed
    run_id = _finished_run(world, runtime, ana)
    assert hook.seen == []
    failed = [line for line in _log(world, ana, run_id) if "webhook failed" in line]
    assert failed and "connection refused" in failed[0] and "non-public" in failed[0]
    # A literal internal address is refused when saved already.
    with pytest.raises(InvalidInput):
        world.do(
            Principal.web(ana),
            notifications.update_notification_settings,
            False,
            "http://10.0.0.7/hook",
        )


@pytest.mark.parametrize(
    "host", ["127.1", "0x7f000001", "2130706433", "localhost", "[::ffff:127.0.0.1]"]
)
def test_an_internal_host_in_any_spelling_is_refused_when_saved(world: World, host: str) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(InvalidInput, match="non-public address"):
        world.do(
            Principal.web(ana),
            notifications.update_notification_settings,
            False,
            f"http://{host}:8799/h",
        )


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/x", "https://user:pw@example.com/x", "http:///nohost", "javascript:x"],
)
def test_bad_addresses_are_refused(world: World, url: str) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), notifications.update_notification_settings, False, url)


def test_mail_lands_in_the_outbox_once(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    world.do(Principal.web(ana), notifications.update_notification_settings, True, None)
    run_id = _finished_run(world, runtime, ana)
    world.do(WORKER, notifications.notify_run_finished, run_id)
    _redeliver(runtime, run_id)

    def outbox(ctx: Context) -> list[tuple[str, str, str]]:
        rows = ctx.session.scalars(select(OutboxEmail).where(OutboxEmail.to_email.like("ana@%")))
        return [(row.to_email, row.subject, row.body) for row in rows]

    letters = world.ctx_call(WORKER, outbox)
    assert len(letters) == 1
    to, subject, body = letters[0]
    assert to == "ana@example.com" and "completed" in subject and run_id in body

    def claims(ctx: Context) -> list[str]:
        rows = ctx.session.scalars(select(RunNotification).where(RunNotification.run_id == run_id))
        return [row.channel for row in rows]

    assert world.ctx_call(WORKER, claims) == ["mail"]


def test_who_may_set_notifications(world: World) -> None:
    ana = world.user("ana@example.com")
    allowed = [
        Principal.web(ana),
        Principal.cli(ana),
        world.principal(PrincipalKind.API, ana, frozenset({Scope.RUNS})),
    ]
    for principal in allowed:
        world.do(principal, notifications.update_notification_settings, True, None)
    refused = [
        world.principal(PrincipalKind.API, ana, frozenset(Scope) - {Scope.RUNS}),
        # The agent, whatever scopes its turn carries, never.
        world.principal(PrincipalKind.AGENT, ana, frozenset(Scope)),
        WORKER,
    ]
    for principal in refused:
        with pytest.raises(PermissionDenied):
            world.do(principal, notifications.update_notification_settings, True, "https://x.io")
        with pytest.raises(PermissionDenied):
            world.do(principal, notifications.get_notification_settings)


def test_only_the_worker_notifies(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    run_id = _finished_run(world, runtime, ana)
    for principal in (Principal.web(ana), world.principal(PrincipalKind.API, ana)):
        with pytest.raises(PermissionDenied):
            world.do(principal, notifications.notify_run_finished, run_id)


def test_the_offline_agent_refuses_and_points_to_the_page() -> None:
    for text in ("set up a webhook for my runs", "notify me when my run finishes"):
        assert never_action(text) is Action.NOTIFICATIONS_MANAGE


def _unverify(world: World, user_id: str) -> None:
    """The account's address as after a change of email: not verified (yet)."""

    def clear(ctx: Context) -> None:
        user = ctx.session.get(User, user_id)
        assert user is not None
        user.email_verified_at = None

    world.ctx_call(WORKER, clear)


def _claims(world: World, run_id: str) -> list[tuple[str, str, str]]:
    def read(ctx: Context) -> list[tuple[str, str, str]]:
        rows = ctx.session.scalars(select(RunNotification).where(RunNotification.run_id == run_id))
        return [(row.channel, row.status, row.detail) for row in rows]

    return world.ctx_call(WORKER, read)


def test_run_mail_goes_only_to_a_verified_address(world: World, runtime: Runtime) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    _unverify(world, bob)
    # Turning it on is refused with the reason, through every door (the service says it).
    with pytest.raises(InvalidInput, match="verified email address"):
        world.do(Principal.web(bob), notifications.update_notification_settings, True, None)
    # On while verified, then the address changed: the run's mail is dropped, not queued.
    world.do(Principal.web(ana), notifications.update_notification_settings, True, None)
    _unverify(world, ana)
    run_id = _finished_run(world, runtime, ana)
    letters = world.ctx_call(
        WORKER, lambda ctx: list(ctx.session.scalars(select(OutboxEmail.to_email)))
    )
    assert "ana@example.com" not in letters
    assert _claims(world, run_id) == [("mail", "dropped", "the email address is not verified")]


class RefusingSMTP:
    """Stands in for smtplib.SMTP: the server refuses every recipient, naming it."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        pass

    def __enter__(self) -> RefusingSMTP:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def send_message(self, message: EmailMessage) -> None:
        raise smtplib.SMTPRecipientsRefused({str(message["To"]): (550, b"no such user")})


def test_a_bounced_mail_leaves_no_address_in_the_run_log(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("smtplib.SMTP", RefusingSMTP)
    runtime.settings = runtime.settings.model_copy(update={"smtp_url": "smtp://mail.test"})
    ana = world.user("ana.private@example.com")
    world.do(Principal.web(ana), notifications.update_notification_settings, True, None)
    run_id = _finished_run(world, runtime, ana)
    failed = [line for line in _log(world, ana, run_id) if line.startswith("Notification")]
    assert failed == ["Notification: mail failed: SMTPRecipientsRefused: recipient refused (550)"]


def test_a_webhook_address_that_is_not_ascii_is_refused_when_saved(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    ana = world.user("ana@example.com")
    for url in (receivers[0].url + "/ü", "http://bücher.example/hook"):
        with pytest.raises(InvalidInput, match="plain ASCII"):
            world.do(Principal.web(ana), notifications.update_notification_settings, False, url)


def test_a_non_ascii_address_saved_earlier_fails_the_delivery_not_the_job(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    hook = receivers[0]
    ana = world.user("ana@example.com")
    world.do(Principal.web(ana), notifications.update_notification_settings, False, hook.url)

    def older_rules(ctx: Context) -> None:  # saved before addresses had to be ASCII
        setting = ctx.session.get(NotificationSetting, ana)
        assert setting is not None
        setting.webhook_url = hook.url + "/ü"

    world.ctx_call(WORKER, older_rules)
    run_id = _finished_run(world, open_local, ana)
    assert hook.seen == []
    error = "the address cannot be sent: UnicodeEncodeError"
    assert _claims(world, run_id) == [("webhook", "failed", error)]
    assert f"Notification: webhook failed: {error}" in _log(world, ana, run_id)


def test_a_run_mail_the_worker_claimed_is_not_sent_again_by_the_operators_push(
    world: World, runtime: Runtime
) -> None:
    """The worker claimed its notification but left the letter queued in the outbox, so the
    operator's push (or the mail thread) sent it too: the owner got every run mail twice."""
    ana = world.user("ana@example.com")
    world.do(Principal.web(ana), notifications.update_notification_settings, True, None)
    run_id = _finished_run(world, runtime, ana)  # no SMTP yet: the letter waits in the outbox
    stub = SmtpStub()
    try:
        runtime.settings = runtime.settings.model_copy(update={"smtp_url": stub.url})
        deliveries = world.do(WORKER, notifications.claim_deliveries, run_id)
        assert [d.channel for d in deliveries] == ["mail"]
        assert push_outbox(runtime, OPERATOR).sent == 0  # the worker's to send
        for delivery in deliveries:
            sent = notifications.send_delivery(runtime.settings, delivery)
            world.do(WORKER, notifications.record_delivery, delivery, sent)
        assert push_outbox(runtime, OPERATOR).sent == 0  # recorded as sent
    finally:
        stub.close()
    assert [sent.recipients for sent in stub.received] == [["ana@example.com"]]
    statuses = world.ctx_call(
        WORKER, lambda ctx: list(ctx.session.scalars(select(OutboxEmail.status)))
    )
    assert statuses == ["sent"]
