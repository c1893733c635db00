"""Account links and what hangs on them: sign-up modes, invites, email verification (and what a
verified address unlocks), password change and reset, deactivation, the sign-up mode setting."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from benchgen.core.clock import ManualClock
from benchgen.core.context import Context, Principal
from benchgen.core.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PermissionDenied,
    RateLimited,
    Unauthenticated,
)
from benchgen.core.permissions import Action, PrincipalKind, Scope
from benchgen.db.tables import AuditEvent, Benchmark, OutboxEmail, User, WebSession
from benchgen.services import access, deployment
from benchgen.services.accounts import links, passwords, sessions, signup, tokens, users
from benchgen.services.benchmarks import invitations, lifecycle, members
from tests.support import MCQ, OPERATOR, World

ANON = Principal.system("signin", frozenset())
ADDRESS = "203.0.113.7"


def mails_to(world: World, email: str) -> list[str]:
    """Bodies of the mail recorded for `email`, oldest first."""

    def read(ctx: Context) -> list[str]:
        rows = ctx.session.scalars(
            select(OutboxEmail.body)
            .where(OutboxEmail.to_email == email)
            .order_by(OutboxEmail.created_at, OutboxEmail.id)
        )
        return list(rows)

    return world.ctx_call(OPERATOR, read)


def token_in(body: str, path: str) -> str:
    """The secret of the link to `path` ('/account/verify/', …) in a mail body."""
    found = re.search(re.escape(path) + r"([A-Za-z0-9_-]+)", body)
    assert found is not None, body
    return found.group(1)


def set_mode(world: World, mode: str) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", mode)


def sign_up(world: World, email: str, invite: str = "", address: str = ADDRESS) -> str:
    made = world.do(ANON, signup.sign_up, email, "password123", "", invite, address)
    return made.id


def verified_at(world: World, user_id: str) -> object:
    return world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(User, user_id).email_verified_at)


def actions(world: World, user_id: str) -> list[tuple[str, str | None, str]]:
    def read(ctx: Context) -> list[tuple[str, str | None, str]]:
        rows = ctx.session.scalars(
            select(AuditEvent).where(AuditEvent.object_id == user_id).order_by(AuditEvent.at)
        )
        return [(row.action, row.user_id, row.door) for row in rows]

    return world.ctx_call(OPERATOR, read)


# --- the sign-up mode setting ---------------------------------------------------------------


def test_signup_mode_is_closed_by_default_and_takes_only_its_three_words(world: World) -> None:
    assert world.do(ANON, signup.signup_mode) == "closed"
    assert world.do(OPERATOR, deployment.set_setting, "signup_mode", " Invite ") == "invite"
    assert world.do(ANON, signup.signup_mode) == "invite"
    assert world.do(OPERATOR, deployment.list_settings)["signup_mode"] == "invite"
    for bad in ("maybe", "", "opened", "1"):
        with pytest.raises(InvalidInput):
            world.do(OPERATOR, deployment.set_setting, "signup_mode", bad)
    assert world.do(ANON, signup.signup_mode) == "invite"


# --- sign-up --------------------------------------------------------------------------------


def test_closed_refuses_everyone_and_creates_nothing(world: World) -> None:
    with pytest.raises(PermissionDenied):
        sign_up(world, "bob@example.com")
    assert world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalar(select(User.id))) is None


def test_open_sign_up_is_unverified_mailed_a_link_and_audited_as_the_person(world: World) -> None:
    set_mode(world, "open")
    bob = sign_up(world, "Bob@Example.com")
    assert verified_at(world, bob) is None
    [body] = mails_to(world, "bob@example.com")
    assert "/account/verify/" in body and "BENCHGEN_PUBLIC_URL" in body
    assert ("user.signup", bob, "web") in actions(world, bob)
    assert world.do(ANON, signup.sign_up, "bob@example.com", "password123") is None  # taken


def test_sign_ups_from_one_address_are_throttled(world: World) -> None:
    set_mode(world, "open")
    for n in range(signup.SIGNUPS_PER_WINDOW):
        sign_up(world, f"user{n}@example.com")
    with pytest.raises(RateLimited):
        sign_up(world, "one-more@example.com")
    sign_up(world, "elsewhere@example.com", address="198.51.100.1")


def test_taken_emails_use_the_sign_up_budget_too(world: World) -> None:
    """Refused sign-ups were never counted: one address probed which emails have accounts
    as fast as it liked."""
    set_mode(world, "open")
    world.user("ana@example.com")
    for _ in range(signup.SIGNUPS_PER_WINDOW):
        assert (
            world.do(ANON, signup.sign_up, "ana@example.com", "password123", "", "", ADDRESS)
            is None
        )
    with pytest.raises(RateLimited):
        world.do(ANON, signup.sign_up, "ana@example.com", "password123", "", "", ADDRESS)
    with pytest.raises(RateLimited):
        sign_up(world, "new@example.com")


def test_invite_mode_needs_a_live_unused_invite_for_its_own_address(
    world: World, clock: ManualClock
) -> None:
    set_mode(world, "invite")
    with pytest.raises(PermissionDenied):
        sign_up(world, "bob@example.com")
    made = world.do(OPERATOR, signup.create_invite, "Bob@Example.com")
    [body] = mails_to(world, "bob@example.com")
    secret = token_in(body, "/signup?invite=")
    assert made.link.endswith(secret) and made.invite.email == "bob@example.com"
    assert world.do(ANON, signup.invite_email, secret) == "bob@example.com"
    with pytest.raises(PermissionDenied):
        sign_up(world, "bob@example.com", invite=secret + "x")
    # The invite decides the address, whatever was typed; the invite proved it, so verified.
    bob = sign_up(world, "mallory@example.com", invite=secret)
    assert world.do(Principal.web(bob), users.get_me).email == "bob@example.com"
    assert verified_at(world, bob) is not None
    assert mails_to(world, "mallory@example.com") == []
    with pytest.raises(PermissionDenied):
        sign_up(world, "other@example.com", invite=secret)
    late = world.do(OPERATOR, signup.create_invite, "late@example.com")
    # A second invite while the first is open (a reloaded form) mails nothing more.
    with pytest.raises(Conflict, match="already invited; that link works until"):
        world.do(OPERATOR, signup.create_invite, "Late@example.com")
    assert len(mails_to(world, "late@example.com")) == 1
    clock.advance(days=7, seconds=1)
    with pytest.raises(PermissionDenied):
        sign_up(world, "late@example.com", invite=late.link.rsplit("=", 1)[1])
    again = world.do(OPERATOR, signup.create_invite, "late@example.com")  # the first expired
    sign_up(world, "late@example.com", invite=again.link.rsplit("=", 1)[1])


def test_invites_are_for_admins_and_not_for_taken_addresses_or_a_closed_door(
    world: World,
) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(Conflict):
        world.do(OPERATOR, signup.create_invite, "new@example.com")  # closed
    set_mode(world, "invite")
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(ana), signup.create_invite, "new@example.com")
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(ana), signup.list_invites)
    with pytest.raises(Conflict):
        world.do(OPERATOR, signup.create_invite, "ana@example.com")
    with pytest.raises(InvalidInput):
        world.do(OPERATOR, signup.create_invite, "not an email")
    world.do(OPERATOR, signup.create_invite, "new@example.com")
    listed = world.do(OPERATOR, signup.list_invites)
    assert [(i.email, i.status_at(i.created_at)) for i in listed] == [("new@example.com", "open")]


# --- verification and what it unlocks -------------------------------------------------------


def test_created_accounts_are_trusted_as_verified(world: World) -> None:
    assert verified_at(world, world.user("ana@example.com")) is not None


@pytest.mark.both_backends
def test_only_a_verified_email_matches_the_whitelist(world: World) -> None:
    owner = world.user("owner@example.com")
    bm = world.benchmark(owner, MCQ)
    world.do(Principal.web(owner), members.add_whitelist_entries, bm, ["@partner.org"])
    set_mode(world, "open")
    bob = sign_up(world, "bob@partner.org")
    me = Principal.web(bob)

    def joinable(ctx: Context) -> list[str]:
        # The list twin of the single decision: both must change together.
        query = select(Benchmark.id).where(access.visible_benchmarks(ctx, Action.BENCHMARK_JOIN))
        return list(ctx.session.scalars(query))

    with pytest.raises(NotFound):
        world.do(me, lifecycle.get_invitation, bm)
    assert world.ctx_call(me, joinable) == []
    with pytest.raises(NotFound):
        world.do(me, members.join_benchmark, bm, True)
    secret = token_in(mails_to(world, "bob@partner.org")[0], "/account/verify/")
    assert world.do(ANON, links.verification_is_live, secret)
    world.do(me, links.verify_email, secret)
    assert world.do(me, lifecycle.get_invitation, bm).id == bm
    assert world.ctx_call(me, joinable) == [bm]
    world.do(me, members.join_benchmark, bm, True)
    assert ("email.verify", bob, "web") in actions(world, bob)
    with pytest.raises(NotFound):
        world.do(me, links.verify_email, secret)  # once only


def test_only_a_verified_email_can_accept_a_collaborator_invitation(world: World) -> None:
    owner = world.user("owner@example.com")
    bm = world.benchmark(owner, MCQ)
    set_mode(world, "open")
    bob = sign_up(world, "bob@example.com")
    world.do(Principal.web(owner), invitations.invite_collaborator, bm, "bob@example.com")
    (secret,) = world.invitations("bob@example.com")
    with pytest.raises(PermissionDenied, match="Verify your email"):
        world.do(Principal.web(bob), invitations.accept_invitation, secret)
    assert world.do(Principal.web(owner), members.list_collaborators, bm) == []
    (verify,) = [body for body in mails_to(world, "bob@example.com") if "/verify/" in body]
    world.do(Principal.web(bob), links.verify_email, token_in(verify, "/verify/"))
    accepted = world.do(Principal.web(bob), invitations.accept_invitation, secret)
    assert accepted.benchmark_id == bm
    listed = world.do(Principal.web(owner), members.list_collaborators, bm)
    assert [m.user_id for m in listed] == [bob]


def test_verification_links_expire_and_resends_replace_them_up_to_three_an_hour(
    world: World, clock: ManualClock
) -> None:
    set_mode(world, "open")
    bob = sign_up(world, "bob@example.com")
    first = token_in(mails_to(world, "bob@example.com")[0], "/account/verify/")
    clock.advance(hours=48, seconds=1)
    with pytest.raises(NotFound):
        world.do(ANON, links.verify_email, first)
    me = Principal.web(bob)
    assert world.do(me, links.send_verification) == "bob@example.com"
    second = token_in(mails_to(world, "bob@example.com")[-1], "/account/verify/")
    for _ in range(2):
        clock.advance(minutes=1)
        world.do(me, links.send_verification)
    with pytest.raises(RateLimited):
        world.do(me, links.send_verification)
    with pytest.raises(NotFound):
        world.do(me, links.verify_email, second)  # replaced by the newer link
    world.do(me, links.verify_email, token_in(mails_to(world, "bob@example.com")[-1], "/verify/"))
    with pytest.raises(Conflict):
        world.do(me, links.send_verification)


def test_tokens_and_the_agent_cannot_ask_for_links_or_change_passwords(world: World) -> None:
    ana = world.user("ana@example.com")
    for kind in (PrincipalKind.API, PrincipalKind.AGENT):
        principal = world.principal(kind, ana)
        with pytest.raises(PermissionDenied):
            world.do(principal, links.send_verification)
        with pytest.raises(PermissionDenied):
            world.do(principal, passwords.change_password, "password123", "new-password")
    with pytest.raises(PermissionDenied):
        world.do(OPERATOR, passwords.change_password, "password123", "new-password")


# --- password change ------------------------------------------------------------------------


def open_session(world: World, user_id: str) -> str:
    """A new live session of `user_id`; returns its id."""
    before = live_sessions(world, user_id)
    view = world.do(Principal.web(user_id), users.get_me)
    world.do(OPERATOR, sessions.open_session, view, ADDRESS)
    [made] = live_sessions(world, user_id) - before
    return made


def test_a_session_is_ended_by_its_cookie_not_by_its_id(world: World) -> None:
    """A session id shows in audit records and admin pages; ending one took just that."""
    ana = world.user("ana@example.com")
    view = world.do(Principal.web(ana), users.get_me)
    before = live_sessions(world, ana)
    cookie = world.do(OPERATOR, sessions.open_session, view, ADDRESS).secret
    [made] = live_sessions(world, ana) - before
    world.do(Principal.web(ana, made), sessions.end_session, made)
    assert made in live_sessions(world, ana)
    world.do(Principal.web(ana, made), sessions.end_session, cookie)
    assert made not in live_sessions(world, ana)


def live_sessions(world: World, user_id: str) -> set[str]:
    return set(
        world.ctx_call(
            OPERATOR,
            lambda ctx: ctx.session.scalars(
                select(WebSession.id).where(
                    WebSession.user_id == user_id, WebSession.revoked_at.is_(None)
                )
            ),
        )
    )


def turn_credential(world: World, user_id: str) -> str:
    return world.do(
        Principal.web(user_id),
        tokens.mint_turn_credential,
        "turn_x",
        frozenset({Scope.READ}),
        timedelta(minutes=5),
    )


def turn_is_live(world: World, secret: str) -> bool:
    try:
        world.do(OPERATOR, tokens.authenticate_turn_credential, secret)
    except Unauthenticated:
        return False
    return True


def test_password_change_ends_other_sessions_and_agent_turns_but_not_this_one(
    world: World,
) -> None:
    ana = world.user("ana@example.com")
    here, elsewhere = open_session(world, ana), open_session(world, ana)
    turn = turn_credential(world, ana)
    me = Principal.web(ana, here)
    assert world.do(me, passwords.change_password, "wrong-password", "new-password") is None
    with pytest.raises(InvalidInput):
        world.do(me, passwords.change_password, "password123", "short")
    assert live_sessions(world, ana) == {here, elsewhere} and turn_is_live(world, turn)
    assert world.do(me, passwords.change_password, "password123", "new-password") == 1
    assert live_sessions(world, ana) == {here}
    assert not turn_is_live(world, turn)
    assert world.do(OPERATOR, users.authenticate, "ana@example.com", "new-password").id == ana
    assert ("password.change", ana, "web") in actions(world, ana)


def test_wrong_current_passwords_count_with_failed_sign_ins(world: World) -> None:
    ana = world.user("ana@example.com")
    me = Principal.web(ana, open_session(world, ana))
    for _ in range(world.rt.settings.signin_failures_per_account):
        assert world.do(me, passwords.change_password, "guess-guess", "new-password", "x") is None
    with pytest.raises(RateLimited):
        world.do(me, passwords.change_password, "password123", "new-password", "x")
    with pytest.raises(RateLimited):
        world.do(ANON, sessions.sign_in, "ana@example.com", "password123", "x")


# --- password reset -------------------------------------------------------------------------


def request_reset(world: World, email: str, address: str = ADDRESS) -> None:
    world.do(ANON, passwords.request_password_reset, email, address)


def test_reset_mail_goes_only_to_active_accounts_and_says_nothing_else(
    world: World,
) -> None:
    world.user("ana@example.com")
    gone = world.user("gone@example.com")
    world.do(OPERATOR, users.set_active, gone, False)
    set_mode(world, "open")
    sign_up(world, "fresh@example.com")
    for email in ("ana@example.com", "nobody@example.com", "fresh@example.com", "gone@example.com"):
        assert request_reset(world, email) is None
    [body] = mails_to(world, "ana@example.com")
    assert "/password/reset/" in body and "30 minutes" in body
    assert mails_to(world, "nobody@example.com") == []
    # Its verification link, then the reset that lets the mailbox's owner take it over.
    assert len(mails_to(world, "fresh@example.com")) == 2
    assert mails_to(world, "gone@example.com") == []
    with pytest.raises(InvalidInput):
        request_reset(world, "not an email")


def test_reset_links_are_absolute_only_from_the_public_url(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.user("ana@example.com")
    monkeypatch.setattr(world.rt.settings, "public_url", "https://bench.example.org/")
    request_reset(world, "ana@example.com")
    [body] = mails_to(world, "ana@example.com")
    assert re.search(r"https://bench\.example\.org/password/reset/[\w-]+", body)
    assert "BENCHGEN_PUBLIC_URL" not in body


def test_reset_requests_are_throttled_alike_for_known_and_unknown_addresses(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.user("ana@example.com")
    monkeypatch.setattr(world.rt.settings, "signin_failures_per_address", 5)
    for email in ("ana@example.com", "nobody@example.com"):
        for _ in range(5):
            request_reset(world, email, address=f"addr-{email}")
        with pytest.raises(RateLimited):
            request_reset(world, email, address=f"addr-{email}")
        request_reset(world, email, address="another-address")
    assert len(mails_to(world, "ana@example.com")) == passwords.LIVE_RESETS


def test_a_reset_link_works_once_within_30_minutes_and_signs_out_everywhere(
    world: World, clock: ManualClock
) -> None:
    ana = world.user("ana@example.com")
    request_reset(world, "ana@example.com")
    stale = token_in(mails_to(world, "ana@example.com")[0], "/password/reset/")
    clock.advance(minutes=31)
    assert not world.do(ANON, passwords.reset_is_live, stale)
    with pytest.raises(NotFound):
        world.do(ANON, passwords.reset_password, stale, "brand-new-pass")
    open_session(world, ana)
    turn = turn_credential(world, ana)
    request_reset(world, "ana@example.com")
    secret = token_in(mails_to(world, "ana@example.com")[-1], "/password/reset/")
    with pytest.raises(InvalidInput):
        world.do(ANON, passwords.reset_password, secret, "short")
    assert world.do(ANON, passwords.reset_password, secret, "brand-new-pass").id == ana
    assert live_sessions(world, ana) == set()
    assert not turn_is_live(world, turn)
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, users.authenticate, "ana@example.com", "password123")
    with pytest.raises(NotFound):
        world.do(ANON, passwords.reset_password, secret, "another-pass")
    assert ("password.reset", ana, "web") in actions(world, ana)


def test_a_newer_reset_link_leaves_the_older_working_until_one_is_used(
    world: World, clock: ManualClock
) -> None:
    world.user("ana@example.com")
    request_reset(world, "ana@example.com")
    clock.advance(minutes=1)
    request_reset(world, "ana@example.com")
    older, newer = (token_in(b, "/password/reset/") for b in mails_to(world, "ana@example.com"))
    assert world.do(ANON, passwords.reset_is_live, older)
    world.do(ANON, passwords.reset_password, older, "brand-new-pass")
    assert not world.do(ANON, passwords.reset_is_live, newer)


# --- deactivation ---------------------------------------------------------------------------


def test_deactivation_ends_sessions_and_agent_turns_for_good(world: World) -> None:
    ana = world.user("ana@example.com")
    session = open_session(world, ana)
    turn = turn_credential(world, ana)
    world.do(OPERATOR, users.set_active, ana, False)
    assert live_sessions(world, ana) == set()
    assert not turn_is_live(world, turn)
    world.do(OPERATOR, users.set_active, ana, True)
    assert live_sessions(world, ana) == set()  # re-enabling brings no old session back
    assert session not in live_sessions(world, ana)


@pytest.mark.parametrize("backend", ["postgres"])  # SQLite runs one writer at a time
def test_a_reset_link_sent_eight_times_at_once_works_once(world: World) -> None:
    world.user("ana@example.com")
    request_reset(world, "ana@example.com")
    secret = token_in(mails_to(world, "ana@example.com")[0], "/password/reset/")
    gate = threading.Barrier(8)
    outcomes: list[str] = []

    def reset(n: int) -> None:
        gate.wait()
        try:
            world.do(ANON, passwords.reset_password, secret, f"new-password-{n}")
            outcomes.append("reset")
        except NotFound:
            outcomes.append("refused")

    threads = [threading.Thread(target=reset, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["refused"] * 7 + ["reset"]


def test_an_account_stored_before_the_look_alike_rules_can_still_reset(world: World) -> None:
    """The look-alike rules refused the address of an account made before them: its owner
    could no longer ask for a reset."""
    ana = world.user("ana@example.com")
    legacy = "осе@example.com"  # all-Cyrillic letters that each look Latin: refused today

    def rename(ctx: Context) -> None:
        ctx.session.get(User, ana).email = legacy  # type: ignore[union-attr]

    world.ctx_call(OPERATOR, rename)
    request_reset(world, legacy)
    [body] = mails_to(world, legacy)
    assert "/password/reset/" in body
    with pytest.raises(InvalidInput):  # no account's: refused as before
        request_reset(world, "оса@example.com")
