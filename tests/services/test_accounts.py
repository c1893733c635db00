"""Accounts: who may create them, validation, argon2 passwords, sign-in, enabling, get_me."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from benchgen.core.context import Context, Principal
from benchgen.core.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from benchgen.core.permissions import PrincipalKind
from benchgen.services.accounts import users
from benchgen.services.runtime import Runtime, transaction
from tests.support import OPERATOR, World

PASSWORD = "password123"


def password_hash(world: World, email: str) -> str:
    with world.rt.database.engine.connect() as conn:
        value = conn.execute(
            text("SELECT password_hash FROM users WHERE email = :email"), {"email": email}
        ).scalar_one()
    return str(value)


def sign_in(world: World, email: str, password: str) -> users.UserView:
    return world.do(OPERATOR, users.authenticate, email, password)


# --- create_user --------------------------------------------------------------------------


def test_operator_creates_user(world: World) -> None:
    made = world.do(OPERATOR, users.create_user, "Ana@Example.com", PASSWORD, "Ana")
    assert made.id.startswith("usr_")
    assert made.email == "ana@example.com"
    assert made.display_name == "Ana"
    assert (made.is_admin, made.is_active) == (False, True)


def test_display_name_defaults_to_local_part(world: World) -> None:
    made = world.do(OPERATOR, users.create_user, "ana.lopez@example.com", PASSWORD)
    assert made.display_name == "ana.lopez"


def test_admin_creates_admin(world: World) -> None:
    boss = world.user("boss@example.com", admin=True)
    made = world.do(
        Principal.web(boss), users.create_user, "eve@example.com", PASSWORD, is_admin=True
    )
    assert made.is_admin


@pytest.mark.parametrize("kind", [PrincipalKind.WEB, PrincipalKind.CLI, PrincipalKind.API])
def test_non_admin_cannot_create_users(world: World, kind: PrincipalKind) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(PermissionDenied):
        world.do(world.principal(kind, ana), users.create_user, "x@example.com", PASSWORD)
    with pytest.raises(Unauthenticated):
        sign_in(world, "x@example.com", PASSWORD)


@pytest.mark.parametrize("kind", [PrincipalKind.API, PrincipalKind.AGENT])
def test_admin_tokens_cannot_create_users(world: World, kind: PrincipalKind) -> None:
    boss = world.user("boss@example.com", admin=True)
    with pytest.raises(PermissionDenied):
        world.do(world.principal(kind, boss), users.create_user, "x@example.com", PASSWORD)


@pytest.mark.parametrize(
    "email", ["", "ana", "ana@", "@example.com", "ana@@example.com", "ana example@x.com", "a@b"]
)
def test_bad_email(world: World, email: str) -> None:
    with pytest.raises(InvalidInput) as err:
        world.do(OPERATOR, users.create_user, email, PASSWORD)
    assert err.value.errors[0]["loc"] == ["email"]


@pytest.mark.parametrize("password", ["", "short", "1234567"])
def test_short_password(world: World, password: str) -> None:
    with pytest.raises(InvalidInput) as err:
        world.do(OPERATOR, users.create_user, "ana@example.com", password)
    assert err.value.errors[0]["loc"] == ["password"]


def test_password_of_eight_is_enough(world: World) -> None:
    world.do(OPERATOR, users.create_user, "ana@example.com", "12345678")
    assert sign_in(world, "ana@example.com", "12345678").email == "ana@example.com"


def test_too_long_password_or_name(world: World) -> None:
    with pytest.raises(InvalidInput):
        world.do(OPERATOR, users.create_user, "ana@example.com", "x" * 1025)
    with pytest.raises(InvalidInput):
        world.do(OPERATOR, users.create_user, "ana@example.com", PASSWORD, "n" * 201)


@pytest.mark.both_backends
@pytest.mark.parametrize("again", ["ana@example.com", "ANA@example.com", "  ana@Example.COM "])
def test_duplicate_email_is_a_conflict(world: World, again: str) -> None:
    world.do(OPERATOR, users.create_user, "ana@example.com", PASSWORD)
    with pytest.raises(Conflict):
        world.do(OPERATOR, users.create_user, again, "another-password")
    assert sign_in(world, "ana@example.com", PASSWORD).email == "ana@example.com"


# --- passwords and sign-in ----------------------------------------------------------------


def test_password_is_stored_as_argon2_hash(world: World) -> None:
    world.user("ana@example.com")
    stored = password_hash(world, "ana@example.com")
    assert stored.startswith("$argon2")
    assert PASSWORD not in stored
    world.user("bob@example.com")
    assert password_hash(world, "bob@example.com") != stored  # salted


def test_authenticate_right_password(world: World) -> None:
    ana = world.user("ana@example.com")
    signed_in = sign_in(world, "ana@example.com", PASSWORD)
    assert signed_in.id == ana
    assert sign_in(world, "  ANA@example.com ", PASSWORD).id == ana


@pytest.mark.parametrize(
    ("email", "password"),
    [
        ("ana@example.com", "wrong-password"),
        ("ana@example.com", ""),
        ("ana@example.com", PASSWORD.upper()),
        ("nobody@example.com", PASSWORD),
        ("", PASSWORD),
    ],
)
def test_authenticate_failures_share_one_message(world: World, email: str, password: str) -> None:
    world.user("ana@example.com")
    with pytest.raises(Unauthenticated) as err:
        sign_in(world, email, password)
    assert err.value.message == "Wrong email or password."


def test_authenticate_disabled_account(world: World) -> None:
    ana = world.user("ana@example.com")
    world.do(OPERATOR, users.set_active, ana, False)
    with pytest.raises(Unauthenticated) as err:
        sign_in(world, "ana@example.com", PASSWORD)
    assert err.value.message == "Wrong email or password."
    world.do(OPERATOR, users.set_active, ana, True)
    assert sign_in(world, "ana@example.com", PASSWORD).id == ana


def test_password_is_rehashed_when_cost_changes(world: World, runtime: Runtime) -> None:
    world.user("ana@example.com")
    before = password_hash(world, "ana@example.com")
    stronger = runtime.settings.model_copy(update={"argon2_time_cost": 2})
    with transaction(runtime, OPERATOR) as ctx:
        stronger_ctx = Context(ctx.session, OPERATOR, stronger, runtime.clock)
        users.authenticate(stronger_ctx, "ana@example.com", PASSWORD)
    after = password_hash(world, "ana@example.com")
    assert after != before
    assert after.startswith("$argon2") and "t=2" in after
    assert sign_in(world, "ana@example.com", PASSWORD).email == "ana@example.com"


# --- get_me, set_active, lookup -----------------------------------------------------------


@pytest.mark.parametrize("kind", list(PrincipalKind))
def test_get_me(world: World, kind: PrincipalKind) -> None:
    ana = world.user("ana@example.com")
    if kind is PrincipalKind.SYSTEM:
        with pytest.raises(Unauthenticated):
            world.do(Principal.system("job", frozenset()), users.get_me)
        return
    me = world.do(world.principal(kind, ana), users.get_me)
    assert (me.id, me.email) == (ana, "ana@example.com")
    assert not hasattr(me, "password_hash")


def test_get_me_as_operator_is_unauthenticated(world: World) -> None:
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, users.get_me)


@pytest.mark.parametrize("kind", [PrincipalKind.WEB, PrincipalKind.API, PrincipalKind.AGENT])
def test_disabled_account_is_locked_out_everywhere(world: World, kind: PrincipalKind) -> None:
    ana = world.user("ana@example.com")
    principal = world.principal(kind, ana)
    disabled = world.do(OPERATOR, users.set_active, ana, False)
    assert not disabled.is_active
    with pytest.raises(Unauthenticated):
        world.do(principal, users.get_me)
    enabled = world.do(OPERATOR, users.set_active, ana, True)
    assert enabled.is_active
    if kind in (PrincipalKind.AGENT, PrincipalKind.API):
        # Disabling revoked its credentials for good: the turn's, and the personal token.
        with pytest.raises(Unauthenticated):
            world.do(principal, users.get_me)
    else:
        assert world.do(principal, users.get_me).id == ana


def test_admin_may_set_active(world: World) -> None:
    boss = world.user("boss@example.com", admin=True)
    ana = world.user("ana@example.com")
    assert not world.do(Principal.web(boss), users.set_active, ana, False).is_active


def test_an_admin_cannot_disable_their_own_account(world: World) -> None:
    """It could be the last admin's: nobody could reach the admin pages again."""
    boss = world.user("boss@example.com", admin=True)
    with pytest.raises(Conflict, match="your own account"):
        world.do(Principal.web(boss), users.set_active, boss, False)
    assert world.do(Principal.web(boss), users.get_me).id == boss
    assert world.do(Principal.web(boss), users.set_active, boss, True).is_active


@pytest.mark.parametrize("kind", [PrincipalKind.WEB, PrincipalKind.API])
def test_non_admin_cannot_set_active(world: World, kind: PrincipalKind) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com")
    with pytest.raises(PermissionDenied):
        world.do(world.principal(kind, ana), users.set_active, bob, False)
    with pytest.raises(PermissionDenied):
        world.do(world.principal(kind, ana), users.set_active, ana, False)
    assert world.do(Principal.web(bob), users.get_me).is_active


def test_set_active_unknown_user(world: World) -> None:
    with pytest.raises(NotFound):
        world.do(OPERATOR, users.set_active, "usr_nobody", False)


@pytest.mark.both_backends
def test_get_user_by_email(world: World) -> None:
    ana = world.user("ana@example.com")
    assert world.do(OPERATOR, users.get_user_by_email, "ANA@example.com").id == ana
    with pytest.raises(NotFound):
        world.do(OPERATOR, users.get_user_by_email, "nobody@example.com")
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(ana), users.get_user_by_email, "ana@example.com")


def test_views_never_carry_the_hash(world: World) -> None:
    made: Any = world.do(OPERATOR, users.create_user, "ana@example.com", PASSWORD)
    assert "argon2" not in repr(made)
    assert PASSWORD not in repr(made)
