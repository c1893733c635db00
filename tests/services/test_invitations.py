"""Collaborator invitations: the same answer for every address, mail only where someone could
accept, acceptance only by the address's proven holder, once, and limits on sending."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

import benchgen.agent
from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, NotFound, PermissionDenied, RateLimited
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import AuditEvent, CollaboratorInvitation, OutboxEmail
from benchgen.services import deployment
from benchgen.services.accounts import signup
from benchgen.services.benchmarks import invitations, lifecycle, members
from tests.support import MCQ, OPERATOR, World

ANON = Principal.system("signin", frozenset())
SECRET_TITLE = "Quiz <b>project-nightingale</b>"


class Team:
    """Ana owns a private benchmark with a telling title; Bob and Cy have verified accounts."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.ana = world.user("ana@example.com")
        self.bob = world.user("bob@example.com")
        self.cy = world.user("cy@example.com")
        self.bm = world.benchmark(self.ana, {**MCQ, "title": SECRET_TITLE})

    def invite(self, email: str, benchmark_id: str = "") -> invitations.Invitation:
        return self.world.do(
            Principal.web(self.ana), invitations.invite_collaborator, benchmark_id or self.bm, email
        )

    def accept(self, user_id: str, secret: str) -> invitations.Offer:
        return self.world.do(Principal.web(user_id), invitations.accept_invitation, secret)

    def collaborators(self) -> list[str]:
        listed = self.world.do(Principal.web(self.ana), members.list_collaborators, self.bm)
        return [member.user_id for member in listed]


@pytest.fixture
def team(world: World) -> Team:
    return Team(world)


def rows(world: World, table: Any) -> list[Any]:
    return world.ctx_call(OPERATOR, lambda ctx: list(ctx.session.scalars(select(table))))


def mail_to(world: World, email: str) -> list[OutboxEmail]:
    return [row for row in rows(world, OutboxEmail) if row.to_email == email]


@pytest.mark.both_backends
def test_the_owner_cannot_tell_whether_an_address_has_an_account(
    world: World, team: Team, clock: ManualClock
) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")
    # An account whose address is not proven, made through sign-up.
    world.do(ANON, signup.sign_up, "una@example.com", "password123", "", "", "203.0.113.7")
    answers = {
        email: team.invite(email)
        for email in ("bob@example.com", "nobody@example.com", "una@example.com")
    }
    # Every answer has the same shape and says the same: recorded, for this address, until then.
    for email, answer in answers.items():
        assert answer.id.startswith("inv_")
        assert (answer.email, answer.created_at) == (email, clock.now())
        assert answer.expires_at == clock.now() + timedelta(days=7)
    listed = world.do(Principal.web(team.ana), invitations.list_invitations, team.bm)
    assert sorted(listed, key=lambda i: i.email) == sorted(answers.values(), key=lambda i: i.email)
    audited = [
        event.details for event in rows(world, AuditEvent) if event.action == "collaborator.invite"
    ]
    assert sorted(audited, key=lambda d: d["email"]) == [
        {"invitation_id": answers[email].id, "email": email} for email in sorted(answers)
    ]
    # With sign-up open, anyone could accept: every address is mailed the same words.
    bodies = {
        email: [m for m in mail_to(world, email) if "/invitations/" in m.body] for email in answers
    }
    assert all(len(mails) == 1 for mails in bodies.values())
    assert {mails[0].benchmark_id for mails in bodies.values()} == {None}


def test_the_mail_carries_a_single_use_link_and_nothing_the_owner_typed(
    world: World, team: Team
) -> None:
    team.invite("bob@example.com")
    (mail,) = mail_to(world, "bob@example.com")
    assert mail.subject == "An invitation to collaborate on BenchGen"
    assert "nightingale" not in mail.body and "ana" not in mail.body.lower()
    (secret,) = world.invitations("bob@example.com")
    assert f"/invitations/{secret}" in mail.body
    # Only a hash of the link is stored.
    (row,) = rows(world, CollaboratorInvitation)
    assert secret not in (row.token_hash, row.id) and len(row.token_hash) == 64


def test_where_nobody_could_accept_nothing_is_mailed_but_the_answer_is_the_same(
    world: World, team: Team
) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "invite")
    for email in ("bob@example.com", "nobody@example.com"):
        team.invite(email)
    assert len(mail_to(world, "bob@example.com")) == 1
    # No account, and none can be made without an administrator: no mail to a stranger.
    assert mail_to(world, "nobody@example.com") == []
    listed = world.do(Principal.web(team.ana), invitations.list_invitations, team.bm)
    assert [i.email for i in listed] == ["bob@example.com", "nobody@example.com"]


@pytest.mark.both_backends
def test_only_the_invited_address_s_holder_accepts_once(world: World, team: Team) -> None:
    team.invite("bob@example.com")
    (secret,) = world.invitations("bob@example.com")
    with pytest.raises(PermissionDenied, match=r"for bob@example\.com") as refused:
        team.accept(team.cy, secret)
    assert "cy@example.com" in refused.value.message
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(team.cy), invitations.show_invitation, secret)
    assert team.collaborators() == []
    offer = world.do(Principal.web(team.bob), invitations.show_invitation, secret)
    assert (offer.benchmark_id, offer.title, offer.email) == (
        team.bm,
        SECRET_TITLE,
        "bob@example.com",
    )
    assert offer.owner == "ana (ana@example.com)"
    team.accept(team.bob, secret)
    assert team.collaborators() == [team.bob]
    with pytest.raises(Conflict, match="accepted already"):
        team.accept(team.bob, secret)
    with pytest.raises(NotFound, match="not valid"):
        team.accept(team.bob, secret[:-2])


def test_tokens_and_the_agent_can_neither_invite_nor_accept(world: World, team: Team) -> None:
    team.invite("bob@example.com")
    (secret,) = world.invitations("bob@example.com")
    (pending,) = world.do(Principal.web(team.ana), invitations.list_invitations, team.bm)
    for kind in (PrincipalKind.API, PrincipalKind.AGENT):
        owner, bob = world.principal(kind, team.ana), world.principal(kind, team.bob)
        calls = [
            (owner, invitations.invite_collaborator, (team.bm, "cy@example.com")),
            (owner, invitations.list_invitations, (team.bm,)),
            (owner, invitations.revoke_invitation, (team.bm, pending.id)),
            (bob, invitations.show_invitation, (secret,)),
            (bob, invitations.accept_invitation, (secret,)),
        ]
        for principal, call, args in calls:
            with pytest.raises(PermissionDenied):
                world.do(principal, call, *args)
    assert team.collaborators() == []
    assert len(rows(world, CollaboratorInvitation)) == 1
    team.accept(team.bob, secret)  # still pending: the refusals changed nothing


@pytest.mark.both_backends
def test_revoked_expired_and_deleted_invitations_are_refused_clearly(
    world: World, team: Team, clock: ManualClock
) -> None:
    revoked = team.invite("bob@example.com")
    world.do(Principal.web(team.ana), invitations.revoke_invitation, team.bm, revoked.id)
    (secret,) = world.invitations("bob@example.com")
    with pytest.raises(Conflict, match="revoked"):
        team.accept(team.bob, secret)
    assert world.do(Principal.web(team.ana), invitations.list_invitations, team.bm) == []
    revoke_again = (invitations.revoke_invitation, team.bm, revoked.id)
    with pytest.raises(Conflict, match="revoked"):
        world.do(Principal.web(team.ana), *revoke_again)

    team.invite("cy@example.com")
    (late,) = world.invitations("cy@example.com")
    clock.advance(days=7)
    with pytest.raises(Conflict, match="expired"):
        team.accept(team.cy, late)

    gone = world.benchmark(team.ana, MCQ)
    team.invite("bob@example.com", gone)
    fresh = (set(world.invitations("bob@example.com")) - {secret}).pop()
    world.do(Principal.web(team.ana), lifecycle.delete_benchmark, gone)
    with pytest.raises(NotFound, match="deleted"):
        team.accept(team.bob, fresh)
    assert team.collaborators() == []


def test_revoking_needs_the_invitation_s_own_benchmark(world: World, team: Team) -> None:
    other = world.benchmark(team.ana, MCQ)
    invited = team.invite("bob@example.com", other)
    with pytest.raises(NotFound):
        world.do(Principal.web(team.ana), invitations.revoke_invitation, team.bm, invited.id)
    (secret,) = world.invitations("bob@example.com")
    team.accept(team.bob, secret)
    with pytest.raises(Conflict, match="accepted"):
        world.do(Principal.web(team.ana), invitations.revoke_invitation, other, invited.id)


@pytest.mark.both_backends
def test_an_owner_cannot_mail_bomb_an_address(world: World, team: Team, clock: ManualClock) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")  # strangers are mailed
    web = Principal.web(team.ana)
    for _ in range(invitations.PER_ADDRESS_PER_DAY):
        sent = team.invite("target@example.com")
        world.do(web, invitations.revoke_invitation, team.bm, sent.id)
        clock.advance(minutes=1)
    with pytest.raises(RateLimited, match="to one address") as limited:
        team.invite("target@example.com")
    assert limited.value.retry_at == clock.now() - timedelta(minutes=3) + timedelta(days=1)
    mailed = len(mail_to(world, "target@example.com"))
    assert mailed == invitations.PER_ADDRESS_PER_DAY
    # Every invitation counts towards the owner's daily total, refused ones never.
    for n in range(invitations.PER_DAY - invitations.PER_ADDRESS_PER_DAY):
        team.invite(f"person{n}@example.com")
    with pytest.raises(RateLimited, match=f"{invitations.PER_DAY} invitations a day"):
        team.invite("one-more@example.com")
    clock.advance(days=1)
    team.invite("one-more@example.com")


def test_no_agent_module_reaches_the_invitations() -> None:
    # A13: the agent has no tool for changing collaborators, not merely a refusal: no module of
    # the agent reaches the invitation service (the credential check above is the backstop).
    agent = Path(benchgen.agent.__file__).parent
    reaching = [
        str(path.relative_to(agent))
        for path in agent.rglob("*.py")
        if "invitations" in path.read_text() or "remove_collaborator" in path.read_text()
    ]
    assert reaching == []


def _at_once(calls: list[Callable[[], object]]) -> list[str]:
    """Run the calls in threads released together; each one's outcome: 'ok' or its error."""
    gate = threading.Barrier(len(calls))
    outcomes: list[str] = []

    def attempt(call: Callable[[], object]) -> None:
        gate.wait()
        try:
            call()
            outcomes.append("ok")
        except (Conflict, RateLimited) as exc:
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=attempt, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return sorted(outcomes)


@pytest.mark.parametrize("backend", ["postgres"])  # SQLite runs one writer at a time
def test_invitations_sent_and_accepted_at_once_count_once(world: World, team: Team) -> None:
    sent = _at_once([lambda: team.invite("bob@example.com") for _ in range(6)])
    assert sent == ["Conflict"] * 5 + ["ok"]
    (secret,) = world.invitations("bob@example.com")
    accepted = _at_once([lambda: team.accept(team.bob, secret) for _ in range(6)])
    assert accepted == ["Conflict"] * 5 + ["ok"]
    assert team.collaborators() == [team.bob]
