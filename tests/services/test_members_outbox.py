"""Members and mail: collaborators, the join whitelist, joining, and emailing participants."""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage
from typing import Any, ClassVar

import pytest
from sqlalchemy import func, select

from benchgen.core.clock import ManualClock
from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import (
    AuditEvent,
    Collaborator,
    CollaboratorInvitation,
    OutboxEmail,
    Participant,
    User,
    WhitelistEntry,
)
from benchgen.jobs.worker import push_outbox
from benchgen.services.accounts import _mail_queue, users
from benchgen.services.benchmarks import invitations, lifecycle, members, outbox, outbox_delivery
from tests.support import MCQ, World

OPERATOR = Principal.cli()
COUNTED = (
    Collaborator,
    CollaboratorInvitation,
    WhitelistEntry,
    Participant,
    OutboxEmail,
    AuditEvent,
)


def counts(world: World) -> dict[str, int]:
    """Rows in every table a membership or mail change could write to."""

    def read(ctx: Context) -> dict[str, int]:
        return {
            table.__tablename__: int(ctx.session.scalar(select(func.count()).select_from(table)))
            for table in COUNTED
        }

    return world.ctx_call(OPERATOR, read)


def outbox_rows(world: World) -> list[tuple[str, str, str, str, str | None]]:
    """(to, subject, body, status, sender) of every recorded message, by recipient."""

    def read(ctx: Context) -> list[tuple[str, str, str, str, str | None]]:
        rows = ctx.session.scalars(select(OutboxEmail).order_by(OutboxEmail.to_email))
        return [(r.to_email, r.subject, r.body, r.status, r.sender_user_id) for r in rows]

    return world.ctx_call(OPERATOR, read)


class Site:
    """A private benchmark, its owner, and a few other accounts."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.owner = world.user("owner@example.com")
        self.bob = world.user("bob@example.com")
        self.cat = world.user("cat@partner.org")
        self.dan = world.user("dan@partner.org")
        self.eve = world.user("eve@elsewhere.net")
        self.bm = world.benchmark(self.owner, MCQ)

    def as_owner(self, fn: Any, *args: Any) -> Any:
        return self.world.do(Principal.web(self.owner), fn, self.bm, *args)

    def as_user(self, user: str, fn: Any, *args: Any) -> Any:
        return self.world.do(Principal.web(user), fn, self.bm, *args)


@pytest.fixture
def site(world: World) -> Site:
    return Site(world)


# --- collaborators ----------------------------------------------------------------------------


@pytest.mark.both_backends
def test_an_accepted_invitation_gives_edit_rights(
    world: World, site: Site, clock: ManualClock
) -> None:
    sent = site.as_owner(invitations.invite_collaborator, "  BOB@Example.com ")
    assert (sent.email, sent.created_at) == ("bob@example.com", clock.now())
    assert site.as_owner(invitations.list_invitations) == [sent]
    # Invited is not yet a collaborator: nothing changes until Bob accepts.
    assert site.as_owner(members.list_collaborators) == []
    with pytest.raises(NotFound):
        site.as_user(site.bob, lifecycle.edit_benchmark, {"title": "Not yet"})
    (secret,) = world.invitations("bob@example.com")
    clock.advance(minutes=5)
    accepted = world.do(Principal.web(site.bob), invitations.accept_invitation, secret)
    assert (accepted.benchmark_id, accepted.email) == (site.bm, "bob@example.com")
    listed = site.as_owner(members.list_collaborators)
    assert [(m.user_id, m.email, m.status, m.since) for m in listed] == [
        (site.bob, "bob@example.com", "active", clock.now())
    ]
    assert site.as_owner(invitations.list_invitations) == []
    view, _ = site.as_user(site.bob, lifecycle.edit_benchmark, {"title": "Bob's now"})
    assert (view.title, view.roles, view.can_see_key) == ("Bob's now", ["collaborator"], True)


@pytest.mark.both_backends
def test_invitation_conflicts_and_bad_addresses(world: World, site: Site) -> None:
    world.collaborator(site.owner, site.bm, "bob@example.com")
    site.as_owner(invitations.invite_collaborator, "cat@partner.org")
    before = counts(world)
    with pytest.raises(Conflict, match="already a collaborator"):
        site.as_owner(invitations.invite_collaborator, "bob@example.com")
    with pytest.raises(Conflict, match="your own address"):
        site.as_owner(invitations.invite_collaborator, "owner@example.com")
    with pytest.raises(Conflict, match="invited already"):
        site.as_owner(invitations.invite_collaborator, "Cat@Partner.org")
    with pytest.raises(InvalidInput):
        site.as_owner(invitations.invite_collaborator, "not an email")
    assert counts(world) == before


@pytest.mark.both_backends
def test_remove_collaborator_takes_the_rights_away(world: World, site: Site) -> None:
    world.collaborator(site.owner, site.bm, "bob@example.com")
    world.collaborator(site.owner, site.bm, "cat@partner.org")
    site.as_owner(members.remove_collaborator, site.bob)
    assert [m.user_id for m in site.as_owner(members.list_collaborators)] == [site.cat]
    with pytest.raises(NotFound):
        site.as_user(site.bob, lifecycle.edit_benchmark, {"title": "x"})
    with pytest.raises(NotFound):
        site.as_owner(members.remove_collaborator, site.bob)


def test_only_the_owner_manages_collaborators(world: World, site: Site) -> None:
    world.collaborator(site.owner, site.bm, "bob@example.com")
    pending = site.as_owner(invitations.invite_collaborator, "dan@partner.org")
    doors = [world.principal(kind, site.owner) for kind in (PrincipalKind.API, PrincipalKind.AGENT)]
    before = counts(world)
    with pytest.raises(PermissionDenied):
        site.as_user(site.bob, invitations.invite_collaborator, "cat@partner.org")
    with pytest.raises(PermissionDenied):
        site.as_user(site.bob, invitations.revoke_invitation, pending.id)
    with pytest.raises(PermissionDenied):
        site.as_user(site.bob, invitations.list_invitations)
    with pytest.raises(PermissionDenied):
        site.as_user(site.bob, members.remove_collaborator, site.bob)
    with pytest.raises(NotFound):
        site.as_user(site.eve, invitations.invite_collaborator, "eve@elsewhere.net")
    # Changing collaborators is never delegated: not to a token, never to the agent (A13).
    for door in doors:
        with pytest.raises(PermissionDenied) as refused:
            world.do(door, invitations.invite_collaborator, site.bm, "cat@partner.org")
        assert refused.value.details["page"] == f"/benchmarks/{site.bm}/settings/access"
        with pytest.raises(PermissionDenied):
            world.do(door, invitations.revoke_invitation, site.bm, pending.id)
    assert counts(world) == before
    assert [m.user_id for m in site.as_owner(members.list_collaborators)] == [site.bob]


# --- whitelist and joining --------------------------------------------------------------------


@pytest.mark.both_backends
def test_whitelist_admits_exact_emails_and_domains(world: World, site: Site) -> None:
    added = site.as_owner(
        members.add_whitelist_entries, [" Bob@Example.com ", "@Partner.org", "@partner.org"]
    )
    assert added == ["bob@example.com", "@partner.org"]
    assert site.as_owner(members.add_whitelist_entries, ["@partner.org"]) == []
    assert site.as_owner(members.list_whitelist) == ["@partner.org", "bob@example.com"]
    for user in (site.bob, site.cat, site.dan):
        joined = site.as_user(user, members.join_benchmark, True)
        assert (joined.user_id, joined.status) == (user, "active")
        view = site.as_user(user, lifecycle.get_benchmark)
        assert (view.roles, view.can_see_key) == (["participant"], False)
    with pytest.raises(NotFound):
        site.as_user(site.eve, members.join_benchmark, True)
    listed = site.as_owner(members.list_participants)
    assert [(m.email, m.status) for m in listed] == [
        ("bob@example.com", "active"),
        ("cat@partner.org", "active"),
        ("dan@partner.org", "active"),
    ]


@pytest.mark.parametrize(
    ("entries", "index"),
    [
        (["bob@example.com", "not an email"], 1),
        (["@"], 0),
        (["@localhost"], 0),
        (["@a@b.org"], 0),
        (["@bad domain.org"], 0),
        (["", "@ok.org"], 0),
    ],
    ids=["not an email", "bare at", "no dot", "two ats", "space", "empty"],
)
def test_an_invalid_whitelist_entry_adds_nothing(
    world: World, site: Site, entries: list[str], index: int
) -> None:
    before = counts(world)
    with pytest.raises(InvalidInput) as err:
        site.as_owner(members.add_whitelist_entries, entries)
    assert [e["loc"] for e in err.value.errors] == [["entries", index]]
    assert counts(world) == before
    assert site.as_owner(members.list_whitelist) == []


def test_removing_a_whitelist_entry_stops_new_joins_only(world: World, site: Site) -> None:
    site.as_owner(members.add_whitelist_entries, ["@partner.org"])
    site.as_user(site.cat, members.join_benchmark, True)
    site.as_owner(members.remove_whitelist_entry, " @PARTNER.org ")
    assert site.as_owner(members.list_whitelist) == []
    with pytest.raises(NotFound):
        site.as_user(site.dan, members.join_benchmark, True)
    assert site.as_user(site.cat, lifecycle.get_benchmark).roles == ["participant"]
    with pytest.raises(NotFound):
        site.as_owner(members.remove_whitelist_entry, "@partner.org")


def test_private_benchmark_refuses_non_whitelisted_joiners(world: World, site: Site) -> None:
    site.as_owner(members.add_whitelist_entries, ["bob@example.com"])
    before = counts(world)
    for user in (site.cat, site.eve):
        with pytest.raises(NotFound):
            site.as_user(user, members.join_benchmark, True)
    with pytest.raises(NotFound):
        world.do(Principal.web(site.bob), members.join_benchmark, "bm_doesnotexist", True)
    assert counts(world) == before


def test_published_benchmark_lets_anyone_join(world: World, site: Site) -> None:
    site.as_owner(lifecycle.publish_benchmark)
    joined = site.as_user(site.eve, members.join_benchmark, True)
    assert (joined.user_id, joined.email, joined.status) == (
        site.eve,
        "eve@elsewhere.net",
        "active",
    )
    assert site.as_user(site.eve, lifecycle.get_benchmark).roles == ["participant", "public"]


@pytest.mark.both_backends
@pytest.mark.parametrize("published", [False, True], ids=["private", "published"])
def test_joining_twice_is_a_conflict(world: World, site: Site, published: bool) -> None:
    site.as_owner(members.add_whitelist_entries, ["bob@example.com"])
    if published:
        site.as_owner(lifecycle.publish_benchmark)
    site.as_user(site.bob, members.join_benchmark, True)
    api = world.principal(PrincipalKind.API, site.bob)
    before = counts(world)
    with pytest.raises(Conflict) as err:
        site.as_user(site.bob, members.join_benchmark, True)
    assert err.value.message == "You are already a participant."
    with pytest.raises(Conflict):
        world.do(Principal.cli(site.bob), members.join_benchmark, site.bm, True)
    # Tokens and the agent never join; they learn nothing about the membership either.
    with pytest.raises(PermissionDenied):
        world.do(api, members.join_benchmark, site.bm, True)
    assert counts(world) == before


@pytest.mark.both_backends
@pytest.mark.parametrize("published", [False, True], ids=["private", "published"])
def test_a_removed_participant_cannot_rejoin(world: World, site: Site, published: bool) -> None:
    site.as_owner(members.add_whitelist_entries, ["bob@example.com"])
    if published:
        site.as_owner(lifecycle.publish_benchmark)
    site.as_user(site.bob, members.join_benchmark, True)
    site.as_owner(members.set_participant_status, site.bob, "removed")
    before = counts(world)
    with pytest.raises(Conflict) as err:
        site.as_user(site.bob, members.join_benchmark, True)
    assert "removed you" in err.value.message
    assert counts(world) == before
    [member] = site.as_owner(members.list_participants)
    assert (member.user_id, member.status) == (site.bob, "removed")
    if not published:
        with pytest.raises(NotFound):
            site.as_user(site.bob, lifecycle.get_benchmark)


def test_joining_a_deleted_benchmark_is_not_found(world: World, site: Site) -> None:
    site.as_owner(lifecycle.publish_benchmark)
    site.as_user(site.bob, members.join_benchmark, True)
    site.as_owner(lifecycle.delete_benchmark)
    for user in (site.bob, site.eve):
        with pytest.raises(NotFound):
            site.as_user(user, members.join_benchmark, True)


def test_the_owner_can_let_a_removed_participant_back(world: World, site: Site) -> None:
    site.as_owner(members.add_whitelist_entries, ["bob@example.com"])
    site.as_user(site.bob, members.join_benchmark, True)
    site.as_owner(members.set_participant_status, site.bob, "removed")
    site.as_owner(members.set_participant_status, site.bob, "active")
    assert site.as_user(site.bob, lifecycle.get_benchmark).roles == ["participant"]
    with pytest.raises(InvalidInput) as err:
        site.as_owner(members.set_participant_status, site.bob, "banned")
    assert [e["loc"] for e in err.value.errors] == [["status"]]
    with pytest.raises(NotFound):
        site.as_owner(members.set_participant_status, site.eve, "removed")


def test_joining_is_done_in_the_web_app_only(world: World, site: Site) -> None:
    site.as_owner(lifecycle.publish_benchmark)
    for kind in (PrincipalKind.API, PrincipalKind.AGENT):
        with pytest.raises(PermissionDenied):
            world.do(world.principal(kind, site.eve), members.join_benchmark, site.bm, True)
    assert site.as_owner(members.list_participants) == []


# --- emailing participants --------------------------------------------------------------------


@pytest.fixture
def crowd(world: World, site: Site) -> Site:
    """Bob and Dan active, Cat removed."""
    site.as_owner(members.add_whitelist_entries, ["bob@example.com", "@partner.org"])
    for user in (site.bob, site.cat, site.dan):
        site.as_user(user, members.join_benchmark, True)
    site.as_owner(members.set_participant_status, site.cat, "removed")
    return site


@pytest.mark.both_backends
def test_preview_lists_only_participants_with_the_chosen_statuses(
    world: World, crowd: Site
) -> None:
    before = counts(world)
    preview = crowd.as_owner(outbox.preview_participant_email, " Hello ", " Body text \n")
    assert (preview.benchmark_id, preview.subject, preview.body) == (crowd.bm, "Hello", "Body text")
    assert preview.recipients == ["bob@example.com", "dan@partner.org"]
    assert preview.statuses == ["active"]
    removed = crowd.as_owner(outbox.preview_participant_email, "Hi", "B", ("removed",))
    assert removed.recipients == ["cat@partner.org"]
    both = crowd.as_owner(outbox.preview_participant_email, "Hi", "B", ("active", "removed"))
    assert both.recipients == ["bob@example.com", "cat@partner.org", "dan@partner.org"]
    assert counts(world) == before


@pytest.mark.both_backends
def test_send_writes_one_queued_row_per_recipient(
    world: World, crowd: Site, clock: ManualClock
) -> None:
    sent = crowd.as_owner(outbox.send_participant_email, "Round two", "It starts Monday.")
    assert sent.recipients == ["bob@example.com", "dan@partner.org"]
    assert outbox_rows(world) == [
        ("bob@example.com", "Round two", "It starts Monday.", "queued", crowd.owner),
        ("dan@partner.org", "Round two", "It starts Monday.", "queued", crowd.owner),
    ]
    batches = world.ctx_call(
        OPERATOR,
        lambda ctx: [
            (r.batch_id, r.benchmark_id, r.created_at, r.sent_at)
            for r in ctx.session.scalars(select(OutboxEmail))
        ],
    )
    assert len({batch for batch, *_ in batches}) == 1
    assert {(bm, sent_at) for _, bm, _, sent_at in batches} == {(crowd.bm, None)}
    listed = world.do(OPERATOR, outbox.list_outbox)
    assert sorted((line.to_email, line.status, line.error) for line in listed) == [
        ("bob@example.com", "queued", ""),
        ("dan@partner.org", "queued", ""),
    ]


@pytest.mark.parametrize(
    ("subject", "body", "statuses", "loc"),
    [
        ("", "Body", ("active",), ["subject"]),
        ("   ", "Body", ("active",), ["subject"]),
        ("Two\nlines", "Body", ("active",), ["subject"]),
        ("s" * 301, "Body", ("active",), ["subject"]),
        ("Hi", "  ", ("active",), ["body"]),
        ("Hi", "b" * 50_001, ("active",), ["body"]),
        ("Hi", "Body", ("banned",), ["statuses"]),
        ("Hi", "Body", (), ["statuses"]),
    ],
    ids=["empty", "blank", "newline", "long subject", "blank body", "long body", "status", "none"],
)
def test_a_bad_message_is_refused_and_nothing_is_recorded(
    world: World,
    crowd: Site,
    subject: str,
    body: str,
    statuses: tuple[str, ...],
    loc: list[str],
) -> None:
    before = counts(world)
    for call in (outbox.preview_participant_email, outbox.send_participant_email):
        with pytest.raises(InvalidInput) as err:
            crowd.as_owner(call, subject, body, statuses)
        assert [e["loc"] for e in err.value.errors] == [loc]
    assert counts(world) == before


def test_no_recipients_is_invalid_input(world: World, site: Site) -> None:
    before = counts(world)
    for call in (outbox.preview_participant_email, outbox.send_participant_email):
        with pytest.raises(InvalidInput) as err:
            site.as_owner(call, "Hello", "Body")
        assert [e["loc"] for e in err.value.errors] == [["statuses"]]
    assert counts(world) == before


def test_only_the_owner_emails_participants(world: World, crowd: Site) -> None:
    world.collaborator(crowd.owner, crowd.bm, "eve@elsewhere.net")
    before = outbox_rows(world)
    with pytest.raises(PermissionDenied):
        crowd.as_user(crowd.eve, outbox.send_participant_email, "Hi", "Body")
    with pytest.raises(PermissionDenied):
        crowd.as_user(crowd.bob, outbox.send_participant_email, "Hi", "Body")
    api = world.principal(PrincipalKind.API, crowd.owner)
    with pytest.raises(PermissionDenied):
        world.do(api, outbox.send_participant_email, crowd.bm, "Hi", "Body")
    assert outbox_rows(world) == before


def test_participant_mail_goes_only_to_verified_addresses(world: World, crowd: Site) -> None:
    def unverify(ctx: Context) -> None:  # Dan signed up with an address nobody proved
        user = ctx.session.get(User, crowd.dan)
        assert user is not None
        user.email_verified_at = None

    world.ctx_call(OPERATOR, unverify)
    preview = crowd.as_owner(outbox.preview_participant_email, "Wire transfer", "Pay now")
    assert (preview.recipients, preview.not_mailed) == (["bob@example.com"], ["dan@partner.org"])
    crowd.as_owner(outbox.send_participant_email, "Wire transfer", "Pay now")
    assert [row[0] for row in outbox_rows(world)] == ["bob@example.com"]
    # Nobody verified left among the chosen statuses: nothing would be sent, and it says why.
    crowd.as_owner(members.set_participant_status, crowd.bob, "removed")
    with pytest.raises(InvalidInput, match="verified email"):
        crowd.as_owner(outbox.preview_participant_email, "Wire transfer", "Pay now")


def test_participant_mail_leaves_disabled_accounts_out(world: World, crowd: Site) -> None:
    # Dan's account was disabled (it may be in the wrong hands): the owner's text is not for it,
    # and Dan is not listed as waiting to verify either.
    world.do(OPERATOR, users.set_active, crowd.dan, False)
    preview = crowd.as_owner(outbox.preview_participant_email, "Results", "Out now")
    assert (preview.recipients, preview.not_mailed) == (["bob@example.com"], [])
    crowd.as_owner(outbox.send_participant_email, "Results", "Out now")
    assert [row[0] for row in outbox_rows(world)] == ["bob@example.com"]


def test_deliver_without_smtp_sends_nothing(world: World, crowd: Site) -> None:
    crowd.as_owner(outbox.send_participant_email, "Hello", "Body")
    assert world.rt.settings.smtp_url is None
    assert push_outbox(world.rt, OPERATOR) == outbox_delivery.Delivered(0, 0)
    assert [row[3] for row in outbox_rows(world)] == ["queued", "queued"]


class FakeSMTP:
    """Stands in for smtplib.SMTP and records what it is asked to do."""

    connections: ClassVar[list[dict[str, Any]]] = []
    refuse: ClassVar[set[str]] = set()

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.record: dict[str, Any] = {
            "host": host,
            "port": port,
            "timeout": timeout,
            "starttls": False,
            "login": None,
            "messages": [],
        }

    def __enter__(self) -> FakeSMTP:
        return self

    def __exit__(self, *exc: object) -> None:
        FakeSMTP.connections.append(self.record)

    def starttls(self, context: ssl.SSLContext | None = None) -> None:
        # True only when the server's certificate and name would be checked.
        self.record["starttls"] = (
            context is not None
            and context.check_hostname
            and context.verify_mode == ssl.CERT_REQUIRED
        )

    def login(self, user: str, password: str) -> None:
        self.record["login"] = (user, password)

    def send_message(self, message: EmailMessage) -> None:
        if message["To"] in FakeSMTP.refuse:
            raise ConnectionRefusedError(111, "Connection refused")
        if "bounce" in message["To"]:
            raise smtplib.SMTPRecipientsRefused({message["To"]: (550, b"no such user")})
        self.record["messages"].append(
            (message["From"], message["To"], message["Subject"], message.get_content().strip())
        )


@pytest.fixture
def smtp(world: World, monkeypatch: pytest.MonkeyPatch) -> type[FakeSMTP]:
    monkeypatch.setattr(FakeSMTP, "connections", [])
    monkeypatch.setattr(FakeSMTP, "refuse", set())
    monkeypatch.setattr("smtplib.SMTP", FakeSMTP)
    monkeypatch.setattr(world.rt.settings, "mail_from", "bench@example.org")
    return FakeSMTP


@pytest.mark.both_backends
def test_deliver_with_smtp_sends_each_message_and_marks_it_sent(
    world: World, crowd: Site, smtp: type[FakeSMTP], clock: ManualClock, monkeypatch: Any
) -> None:
    monkeypatch.setattr(
        world.rt.settings, "smtp_url", "smtp+starttls://mailer%40x:p%2Fss@mail.example.org:2525"
    )
    crowd.as_owner(outbox.send_participant_email, "Round two", "It starts Monday.")
    clock.advance(minutes=3)
    assert push_outbox(world.rt, OPERATOR) == outbox_delivery.Delivered(2, 0)
    assert sorted(m for c in smtp.connections for m in c["messages"]) == [
        ("bench@example.org", "bob@example.com", "Round two", "It starts Monday."),
        ("bench@example.org", "dan@partner.org", "Round two", "It starts Monday."),
    ]
    assert {(c["host"], c["port"], c["starttls"], c["login"]) for c in smtp.connections} == {
        ("mail.example.org", 2525, True, ("mailer@x", "p/ss"))
    }
    assert [row[3] for row in outbox_rows(world)] == ["sent", "sent"]
    sent_at = world.ctx_call(
        OPERATOR, lambda ctx: set(ctx.session.scalars(select(OutboxEmail.sent_at)))
    )
    assert {moment.replace(tzinfo=None) for moment in sent_at} == {clock.now().replace(tzinfo=None)}
    # Sent messages are not sent again.
    assert push_outbox(world.rt, OPERATOR) == outbox_delivery.Delivered(0, 0)
    assert sum(len(c["messages"]) for c in smtp.connections) == 2


@pytest.mark.both_backends
def test_deliver_records_a_failure_on_the_message_and_goes_on(
    world: World, crowd: Site, smtp: type[FakeSMTP], monkeypatch: Any
) -> None:
    monkeypatch.setattr(world.rt.settings, "smtp_url", "smtp://localhost")
    smtp.refuse = {"bob@example.com"}
    crowd.as_owner(outbox.send_participant_email, "Hello", "Body")
    assert push_outbox(world.rt, OPERATOR) == outbox_delivery.Delivered(1, 1)
    assert {(c["host"], c["port"], c["starttls"], c["login"]) for c in smtp.connections} == {
        ("localhost", 25, False, None)
    }

    def lines() -> list[tuple[str, str, str]]:
        listed = world.do(OPERATOR, outbox.list_outbox)
        return sorted((line.to_email, line.status, line.error) for line in listed)

    assert lines() == [
        ("bob@example.com", "failed", "ConnectionRefusedError: Connection refused"),
        ("dan@partner.org", "sent", ""),
    ]
    # Once the server takes it, the next round sends what failed, and only that.
    smtp.refuse = set()
    assert push_outbox(world.rt, OPERATOR) == outbox_delivery.Delivered(1, 0)
    assert lines() == [("bob@example.com", "sent", ""), ("dan@partner.org", "sent", "")]


def _queue(world: World, *addresses: str) -> None:
    def record(ctx: Context) -> None:
        for address in addresses:
            _mail_queue.record_mail(ctx, address, "S", "B")

    world.ctx_call(OPERATOR, record)


def _statuses(world: World) -> dict[str, tuple[str, str]]:
    listed = world.do(OPERATOR, outbox.list_outbox)
    return {line.to_email: (line.status, line.error) for line in listed}


def test_new_mail_goes_before_retries_and_refusals_for_good_are_not_retried(
    world: World, smtp: type[FakeSMTP], clock: ManualClock, monkeypatch: Any
) -> None:
    monkeypatch.setattr(world.rt.settings, "smtp_url", "smtp://localhost")
    smtp.refuse = {"down1@example.com", "down2@example.com"}
    _queue(world, "down1@example.com", "down2@example.com", "bounce@example.com")
    assert push_outbox(world.rt, OPERATOR) == outbox_delivery.Delivered(0, 2, 1)
    refused = "SMTPRecipientsRefused: recipient refused (550)"
    assert _statuses(world)["bounce@example.com"] == ("bounced", refused)
    # A reset link queued after them is sent first, even when the round has room for one.
    clock.advance(minutes=1)
    _queue(world, "alice@example.com")
    assert push_outbox(world.rt, OPERATOR, 1) == outbox_delivery.Delivered(1, 0, 0)
    assert _statuses(world)["alice@example.com"] == ("sent", "")
    # The bounced message is never offered to the server again; the others are, for a while.
    assert push_outbox(world.rt, OPERATOR) == outbox_delivery.Delivered(0, 2, 0)
    clock.advance(days=3)
    assert push_outbox(world.rt, OPERATOR) == outbox_delivery.Delivered(0, 0, 0)
    assert {status for status, _ in _statuses(world).values()} == {"sent", "bounced", "expired"}


def test_only_the_operator_or_an_admin_reads_and_delivers_the_outbox(
    world: World, crowd: Site
) -> None:
    admin = world.user("root@example.com", admin=True)
    assert world.do(Principal.web(admin), outbox.list_outbox) == []
    for call in (outbox.list_outbox, outbox_delivery.claim_for_operator):
        with pytest.raises(PermissionDenied):
            world.do(Principal.web(crowd.owner), call)


def test_joining_without_accepting_the_terms_joins_nothing(site: Site) -> None:
    site.as_owner(members.add_whitelist_entries, ["bob@example.com"])
    with pytest.raises(InvalidInput):
        site.as_user(site.bob, members.join_benchmark, False)
    assert site.as_owner(members.list_participants) == []
    assert site.as_user(site.bob, members.join_benchmark, True).status == "active"
