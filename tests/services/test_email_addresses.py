"""Every door that stores an email address refuses one that mail could not be sent to as it is
written (an RFC 2047 encoded word in it) or that reads as another (full-width letters), naming
the field, and stores nothing; sign-in finds an account however sign-up took its address."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput, RateLimited
from benchgen.db.tables import (
    AccountLink,
    CollaboratorInvitation,
    OutboxEmail,
    SigninAttempt,
    User,
    WhitelistEntry,
)
from benchgen.services import deployment
from benchgen.services.accounts import mail, passwords, sessions, signup, users
from benchgen.services.benchmarks import invitations, members
from tests.smtp_stub import SmtpStub
from tests.support import OPERATOR, World

ANON = Principal.system("signin", frozenset())
# Each would reach mail programs (and Python's own email package) as another address: the
# first decodes to "a@b.c", the second to "eve@evil.example," plus whatever follows.
ENCODED = ("=?utf-8?b?YUBiLmM=?=@example.com", "x=?UTF-8?Q?eve=40evil.example=2C?=@example.com")
# Reads as ana@example.com: a second account that looks like hers in every list of members.
LOOK_ALIKE = "ａｎａ@example.com"
LOOKS_LIKE = "has look-alike characters (full-width, ligatures): write "
STORED = (User, AccountLink, CollaboratorInvitation, WhitelistEntry, OutboxEmail, SigninAttempt)


def _counts(world: World) -> list[int]:
    def read(ctx: Context) -> list[int]:
        return [ctx.session.scalar(select(func.count()).select_from(t)) or 0 for t in STORED]

    return world.ctx_call(OPERATOR, read)


def _doors(world: World) -> dict[str, tuple[Principal, Callable[..., object], list[str | int]]]:
    """Each door that takes an address from someone: who calls it, how, and the field named."""
    owner = world.user("owner@example.com", admin=True)
    benchmark = world.benchmark(owner)
    me = Principal.web(owner)
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")
    pw, ip = "password123", "203.0.113.7"
    return {
        "sign-up": (ANON, lambda ctx, a: signup.sign_up(ctx, a, pw), ["email"]),
        "create user": (OPERATOR, lambda ctx, a: users.create_user(ctx, a, pw), ["email"]),
        "invite": (me, signup.create_invite, ["email"]),
        "collaborator": (
            me,
            lambda ctx, a: invitations.invite_collaborator(ctx, benchmark, a),
            ["email"],
        ),
        "whitelist": (
            me,
            lambda ctx, a: members.add_whitelist_entries(ctx, benchmark, [a]),
            ["entries", 0],
        ),
        "reset": (ANON, lambda ctx, a: passwords.request_password_reset(ctx, a, ip), ["email"]),
    }


@pytest.mark.parametrize("address", [*ENCODED, LOOK_ALIKE, "eve@ex\u0430mple.com"])
@pytest.mark.parametrize(
    "door", ["sign-up", "create user", "invite", "collaborator", "whitelist", "reset"]
)
def test_every_door_refuses_an_unsendable_or_look_alike_address(
    world: World, door: str, address: str
) -> None:
    principal, call, field = _doors(world)[door]
    before = _counts(world)
    with pytest.raises(InvalidInput) as refused:
        world.do(principal, call, address)
    assert [error["loc"] for error in refused.value.errors] == [field]
    assert _counts(world) == before


@pytest.mark.parametrize(
    ("typed", "why"),
    [
        (ENCODED[0], "must not contain MIME encoded words (=?charset?q?…?=)"),
        ("ＡＮＡ@example.com", f"{LOOKS_LIKE}ana@example.com"),
        ("ﬁona@example.com", f"{LOOKS_LIKE}fiona@example.com"),
        # A Cyrillic а among Latin letters: eve@example.com in every list of members.
        ("eve@ex\u0430mple.com", "mixes look-alike alphabets (Cyrillic and Latin) in one part"),
        ("\u0430na@example.com", "mixes look-alike alphabets (Cyrillic and Latin) in one part"),
        ("b\u03bfb@example.com", "mixes look-alike alphabets (Greek and Latin) in one part"),
    ],
)
def test_the_refusal_says_why_under_the_email_field(typed: str, why: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        users.normalize_email(typed)
    assert refused.value.errors == [{"loc": ["email"], "msg": why}]


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("Ana@Example.com", "ana@example.com"),
        ("ana@ｅｘａｍｐｌｅ.com", "ana@example.com"),
        ("ñandú@münchen.de", "ñandú@münchen.de"),
        # One alphabet in each part, whichever it is, is anyone's own address.
        ("иван@пример.рф", "иван@пример.рф"),
        ("ivan@пример.рф", "ivan@пример.рф"),
        ("δοκιμή@παράδειγμα.δοκιμή", "δοκιμή@παράδειγμα.δοκιμή"),
        ("o'neil+tag=x?y@example.com", "o'neil+tag=x?y@example.com"),
        ("a#b!c%d&e*f/g{h}|~^`@example.com", "a#b!c%d&e*f/g{h}|~^`@example.com"),
    ],
)
def test_unusual_but_sendable_addresses_are_kept(typed: str, stored: str) -> None:
    assert users.normalize_email(typed) == stored
    assert mail.address_problem(stored) is None


def test_an_address_that_is_kept_is_the_one_mail_goes_to(world: World, smtp_stub: SmtpStub) -> None:
    smtp_stub.utf8 = True
    for address in ("o'neil+tag=x?y@example.com", "ñandú@münchen.de"):
        letter = mail.Letter("mail_1", users.normalize_email(address), "Hello", "Hi")
        assert mail.send_letter(world.rt.settings, letter) == ""
    assert [to for to, _ in smtp_stub.sent()] == [
        "o'neil+tag=x?y@example.com",
        "ñandú@xn--mnchen-3ya.de",
    ]


@pytest.mark.parametrize(
    "typed",
    [
        "ana@ｅｘａｍｐｌｅ.com",
        "ANA@ＥＸＡＭＰＬＥ.COM",
        "ñandú@xn--mnchen-3ya.de",
        "n\u0303andu\u0301@münchen.de",
    ],
)
def test_an_address_signs_in_however_sign_up_took_it(world: World, typed: str) -> None:
    """Sign-up stores the normalised address; sign-in looked up the typed text, lower-cased, so
    the very address that made the account found none ("Wrong email or password")."""
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")
    made = world.do(ANON, signup.sign_up, typed, "password123", address="203.0.113.7")
    assert made is not None
    signed = world.do(ANON, sessions.sign_in, typed, "password123", "203.0.113.8")
    assert signed is not None and signed.user.id == made.id


def test_failed_sign_ins_count_against_the_account_however_typed(world: World) -> None:
    world.user("ana@example.com")
    limit = world.rt.settings.signin_failures_per_account
    for number in range(limit):
        typed = "ana@" + ("ｅｘａｍｐｌｅ.com" if number % 2 else "EXAMPLE.com")
        assert world.do(ANON, sessions.sign_in, typed, "wrong-guess", f"203.0.113.{number}") is None
    with pytest.raises(RateLimited):
        world.do(ANON, sessions.sign_in, "ana@example.com", "password123", "198.51.100.1")


@pytest.mark.both_backends
def test_two_sign_ups_for_one_address_at_once_make_one_account(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both passed the look-up for a taken address before either stored theirs; on PostgreSQL
    the second then failed on the unique email as an error page, not as `TAKEN`."""
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")
    looked = threading.Barrier(2)
    made_id = users.new_id

    def after_the_look_up(prefix: str) -> str:
        # SQLite's write lock lets only one in at a time: there the other never comes.
        with contextlib.suppress(threading.BrokenBarrierError):
            looked.wait(2)
        return made_id(prefix)

    monkeypatch.setattr(users, "new_id", after_the_look_up)
    outcomes: list[object] = []

    def sign_up(typed: str, address: str) -> None:
        try:
            outcomes.append(world.do(ANON, signup.sign_up, typed, "password123", address=address))
        except Exception as exc:  # the outcome under test
            outcomes.append(exc)

    threads = [
        threading.Thread(target=sign_up, args=(typed, address))
        for typed, address in (
            ("ana@example.com", "203.0.113.1"),
            ("ANA@example.com", "203.0.113.2"),
        )
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(type(outcome).__name__ for outcome in outcomes) == ["NoneType", "UserView"]
    assert _counts(world)[0] == 1
