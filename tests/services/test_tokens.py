"""API tokens and turn credentials: minting, storage, listing, revoking, authenticating."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, select, text

from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, NotFound, PermissionDenied, Unauthenticated
from benchgen.core.ids import new_token
from benchgen.core.permissions import ALL_SCOPES, PrincipalKind, Scope
from benchgen.db.tables import ApiToken
from benchgen.services.accounts import tokens, users
from benchgen.services.runtime import Runtime, transaction
from tests.support import OPERATOR, World

SCOPE_NAMES = [scope.value for scope in Scope]


def token_row(world: World, token_id: str) -> ApiToken:
    row = world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(ApiToken, token_id))
    assert row is not None
    return row


def raw_rows(world: World) -> list[dict[str, Any]]:
    with world.rt.database.engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(text("SELECT * FROM api_tokens"))]


@contextmanager
def counting_statements(runtime: Runtime) -> Iterator[list[str]]:
    """Every SQL statement sent on the runtime's engine while the block runs."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(runtime.database.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(runtime.database.engine, "before_cursor_execute", count)


# --- create -------------------------------------------------------------------------------


@pytest.mark.both_backends
def test_create_returns_secret_once_and_stores_only_its_hash(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "laptop", ["read", "runs"], 30)
    assert made.secret.startswith("bgp_")
    assert len(made.secret) == 42
    assert made.token.last_four == made.secret[-4:]
    assert made.token.name == "laptop"
    assert made.token.scopes == ["read", "runs"]
    assert made.token.revoked_at is None
    assert made.token.last_used_at is None
    assert not hasattr(made.token, "secret")

    [row] = raw_rows(world)
    assert row["token_hash"] == hashlib.sha256(made.secret.encode()).hexdigest()
    assert row["last_four"] == made.secret[-4:]
    body = made.secret[4:36]
    for column, value in row.items():
        assert made.secret not in str(value), column
        assert body not in str(value), column

    # The secret is shown only at creation: listing never returns it.
    listed = world.do(Principal.web(ana), tokens.list_tokens)
    assert [view.id for view in listed] == [made.token.id]
    assert made.secret not in repr(listed)


@pytest.mark.parametrize("count", range(1, 7))
def test_any_subset_of_the_six_scopes(world: World, count: int) -> None:
    ana = world.user("ana@example.com")
    wanted = SCOPE_NAMES[-count:]
    made = world.do(Principal.web(ana), tokens.create_token, "t", wanted)
    assert made.token.scopes == sorted(wanted)
    principal = world.api(made.secret)
    assert principal.scopes == frozenset(Scope(name) for name in wanted)


def test_all_six_scopes(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "all", SCOPE_NAMES)
    assert world.api(made.secret).scopes == ALL_SCOPES
    assert len(ALL_SCOPES) == 6


@pytest.mark.parametrize(
    "scopes",
    [["admin"], ["read", "admin"], ["READ"], ["tokens.manage"], [], [" "], ["read", "billing"]],
)
def test_unknown_or_missing_scope_is_invalid(world: World, scopes: list[str]) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(InvalidInput) as err:
        world.do(Principal.web(ana), tokens.create_token, "t", scopes)
    assert err.value.errors[0]["loc"] == ["scopes"]
    assert raw_rows(world) == []


@pytest.mark.both_backends
def test_default_expiry(world: World, settings: Settings, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read"])
    assert made.token.created_at == clock.now()
    assert made.token.expires_at == clock.now() + timedelta(days=settings.token_default_days)
    assert settings.token_default_days == 90


@pytest.mark.parametrize("days", [0, -1, 366, 10_000])
def test_expiry_out_of_range_is_invalid(world: World, settings: Settings, days: int) -> None:
    assert settings.token_max_days == 365
    ana = world.user("ana@example.com")
    with pytest.raises(InvalidInput) as err:
        world.do(Principal.web(ana), tokens.create_token, "t", ["read"], days)
    assert err.value.errors[0]["loc"] == ["expires_days"]
    assert raw_rows(world) == []


@pytest.mark.both_backends
@pytest.mark.parametrize("days", [1, 365])
def test_expiry_bounds_are_inclusive(world: World, clock: ManualClock, days: int) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read"], days)
    assert made.token.expires_at == clock.now() + timedelta(days=days)


@pytest.mark.parametrize("name", ["", "   ", "x" * 201])
def test_bad_name_is_invalid(world: World, name: str) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), tokens.create_token, name, ["read"])


def test_cli_as_user_may_create(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.cli(ana), tokens.create_token, "script", ["read"])
    assert world.api(made.secret).user_id == ana


@pytest.mark.parametrize("kind", [PrincipalKind.API, PrincipalKind.AGENT])
def test_tokens_cannot_create_list_or_revoke_tokens(world: World, kind: PrincipalKind) -> None:
    ana = world.user("ana@example.com")
    delegated = world.principal(kind, ana)
    before = raw_rows(world)
    with pytest.raises(PermissionDenied) as err:
        world.do(delegated, tokens.create_token, "more", ["read"])
    assert err.value.details["page"] == "/settings/tokens"
    with pytest.raises(PermissionDenied):
        world.do(delegated, tokens.list_tokens)
    with pytest.raises(PermissionDenied):
        world.do(delegated, tokens.revoke_token, delegated.token_id)
    assert raw_rows(world) == before


def test_operator_without_user_cannot_create(world: World) -> None:
    with pytest.raises(PermissionDenied):
        world.do(OPERATOR, tokens.create_token, "t", ["read"])


# --- list ---------------------------------------------------------------------------------


@pytest.mark.both_backends
def test_list_shows_own_personal_tokens_newest_first(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com")
    first = world.do(Principal.web(ana), tokens.create_token, "first", ["read"])
    clock.advance(seconds=5)
    second = world.do(Principal.web(ana), tokens.create_token, "second", ["runs"])
    world.do(Principal.web(bob), tokens.create_token, "bob's", ["read"])
    # A turn credential is a token row too, but not one a person manages.
    world.turn(world.api(first.secret), frozenset({Scope.READ}))

    listed = world.do(Principal.web(ana), tokens.list_tokens)
    assert [view.name for view in listed] == ["second", "first"]
    assert [view.id for view in listed] == [second.token.id, first.token.id]
    assert [view.last_four for view in listed] == [second.secret[-4:], first.secret[-4:]]


# --- revoke -------------------------------------------------------------------------------


@pytest.mark.both_backends
def test_revoke_is_idempotent(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read"])
    revoked = world.do(Principal.web(ana), tokens.revoke_token, made.token.id)
    assert revoked.revoked_at == clock.now()
    first_time = clock.now()
    clock.advance(minutes=5)
    again = world.do(Principal.web(ana), tokens.revoke_token, made.token.id)
    assert again.revoked_at == first_time
    with pytest.raises(Unauthenticated):
        world.api(made.secret)


def test_revoking_someone_elses_token_is_not_found(world: World) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read"])
    with pytest.raises(NotFound):
        world.do(Principal.web(bob), tokens.revoke_token, made.token.id)
    with pytest.raises(NotFound):
        world.do(Principal.web(bob), tokens.revoke_token, "tok_doesnotexist000000")
    assert world.api(made.secret).user_id == ana
    assert token_row(world, made.token.id).revoked_at is None


@pytest.mark.parametrize("who", ["admin", "operator"])
def test_admin_and_operator_can_revoke_any(world: World, who: str) -> None:
    ana = world.user("ana@example.com")
    boss = Principal.web(world.user("boss@example.com", admin=True)) if who == "admin" else OPERATOR
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read"])
    revoked = world.do(boss, tokens.revoke_token, made.token.id)
    assert revoked.revoked_at is not None
    with pytest.raises(Unauthenticated):
        world.api(made.secret)


def test_turn_credentials_are_not_revocable_as_personal_tokens(world: World) -> None:
    ana = world.user("ana@example.com")
    agent = world.principal(PrincipalKind.AGENT, ana)
    with pytest.raises(NotFound):
        world.do(Principal.web(ana), tokens.revoke_token, agent.token_id)
    with pytest.raises(NotFound):
        world.do(OPERATOR, tokens.revoke_token, agent.token_id)


# --- authenticate -------------------------------------------------------------------------


def test_authenticate_gives_api_principal(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read", "create"])
    principal = world.api(made.secret)
    assert principal.kind is PrincipalKind.API
    assert principal.user_id == ana
    assert principal.token_id == made.token.id
    assert principal.scopes == {Scope.READ, Scope.CREATE}
    assert principal.door == f"api:{made.token.id}"


def _flip_checksum(secret: str) -> str:
    last = secret[-1]
    return secret[:-1] + ("A" if last != "A" else "B")


@pytest.mark.both_backends
@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: "",
        lambda s: "garbage",
        lambda s: s[:-1],
        lambda s: s + "x",
        lambda s: s.replace("bgp_", "bgx_"),
        lambda s: s.replace("bgp_", "Bearer bgp_"),
        lambda s: s[:10] + "!" + s[11:],
        _flip_checksum,
        lambda s: s[:4] + ("0" if s[4] != "0" else "1") + s[5:],  # body changed, old checksum
    ],
)
def test_malformed_or_bad_checksum_costs_no_query(
    world: World, runtime: Runtime, mangle: Any
) -> None:
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read"])
    bad = mangle(secret)
    with transaction(runtime, OPERATOR) as ctx, counting_statements(runtime) as seen:
        with pytest.raises(Unauthenticated, match="malformed or its checksum"):
            tokens.authenticate_token(ctx, bad)
        assert seen == []


@pytest.mark.both_backends
def test_statement_counter_sees_lookups(world: World, runtime: Runtime) -> None:
    """The counter used above does observe queries: a well-formed unknown token costs some."""
    world.user("ana@example.com")
    with transaction(runtime, OPERATOR) as ctx, counting_statements(runtime) as seen:
        with pytest.raises(Unauthenticated, match="Unknown token"):
            tokens.authenticate_token(ctx, new_token("bgp"))
        assert any("api_tokens" in statement for statement in seen)


def test_unknown_well_formed_token(world: World) -> None:
    world.user("ana@example.com")
    with pytest.raises(Unauthenticated, match="Unknown token"):
        world.api(new_token("bgp"))


@pytest.mark.both_backends
def test_expired_token(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read"], days=1)
    clock.advance(hours=23, minutes=59)
    principal = world.api(secret)
    clock.advance(minutes=1)
    with pytest.raises(Unauthenticated, match="expired"):
        world.api(secret)
    # A principal obtained before the expiry stops working at the next check too.
    with pytest.raises(Unauthenticated):
        world.do(principal, users.get_me)


def test_revoked_token(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read"])
    principal = world.api(made.secret)
    world.do(Principal.web(ana), tokens.revoke_token, made.token.id)
    with pytest.raises(Unauthenticated, match="revoked"):
        world.api(made.secret)
    with pytest.raises(Unauthenticated):
        world.do(principal, users.get_me)


def test_disabling_an_account_revokes_its_tokens_for_good(world: World) -> None:
    """Enabling the account again brought its old tokens back to life, leaked ones too."""
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read"])
    world.do(OPERATOR, users.set_active, ana, False)
    with pytest.raises(Unauthenticated):
        world.api(secret)
    world.do(OPERATOR, users.set_active, ana, True)
    with pytest.raises(Unauthenticated, match="revoked"):
        world.api(secret)
    assert world.api(world.token(ana, ["read"])).user_id == ana  # a new one works


@pytest.mark.both_backends
def test_last_used_is_refreshed_at_most_once_a_minute(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read"])
    assert token_row(world, made.token.id).last_used_at is None

    clock.advance(seconds=10)
    first_use = clock.now()
    world.api(made.secret)
    assert token_row(world, made.token.id).last_used_at == first_use

    clock.advance(seconds=59)
    world.api(made.secret)
    assert token_row(world, made.token.id).last_used_at == first_use

    clock.advance(seconds=1)
    world.api(made.secret)
    assert token_row(world, made.token.id).last_used_at == clock.now()
    [view] = world.do(Principal.web(ana), tokens.list_tokens)
    assert view.last_used_at == clock.now()


def test_turn_credential_is_refused_as_api_token(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    parent = world.api(world.token(ana, ["read"]))
    secret = world.do(
        parent, tokens.mint_turn_credential, "turn_1", frozenset({Scope.READ}), timedelta(minutes=5)
    )
    assert secret.startswith("bga_")
    with transaction(runtime, OPERATOR) as ctx, counting_statements(runtime) as seen:
        with pytest.raises(Unauthenticated, match=r"agent turn's credential \(bga_…\): the API"):
            tokens.authenticate_token(ctx, secret)
        assert seen == []
    # The same secret is fine where it belongs.
    agent = world.do(OPERATOR, lambda ctx: tokens.authenticate_turn_credential(ctx, secret))
    assert agent.kind is PrincipalKind.AGENT


def test_api_token_is_refused_as_turn_credential(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read"])
    with transaction(runtime, OPERATOR) as ctx, counting_statements(runtime) as seen:
        with pytest.raises(Unauthenticated, match=r"personal token \(bgp_…\), not"):
            tokens.authenticate_turn_credential(ctx, secret)
        assert seen == []


# --- leaked tokens ------------------------------------------------------------------------


def test_revoke_leaked_revokes_a_live_token(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read"])
    # Whoever holds the secret may kill it, even someone else.
    view = world.do(Principal.web(bob), tokens.revoke_leaked, made.secret)
    assert view is not None
    assert view.id == made.token.id
    assert view.revoked_at == clock.now()
    with pytest.raises(Unauthenticated, match="revoked"):
        world.api(made.secret)
    # Already dead, unknown, or malformed: nothing to do.
    assert world.do(Principal.web(bob), tokens.revoke_leaked, made.secret) is None
    assert world.do(Principal.web(bob), tokens.revoke_leaked, new_token("bgp")) is None
    assert world.do(Principal.web(bob), tokens.revoke_leaked, "bgp_nonsense") is None


def test_revoke_leaked_turn_credential(world: World) -> None:
    ana = world.user("ana@example.com")
    secret = world.do(
        Principal.web(ana),
        tokens.mint_turn_credential,
        "turn_leak",
        frozenset({Scope.READ}),
        timedelta(minutes=5),
    )
    assert world.do(OPERATOR, tokens.revoke_leaked, secret) is not None
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, lambda ctx: tokens.authenticate_turn_credential(ctx, secret))


# --- turn credentials ---------------------------------------------------------------------


def mint(world: World, parent: Principal, scopes: frozenset[Scope], minutes: int = 15) -> str:
    return world.do(
        parent, tokens.mint_turn_credential, "turn_x", scopes, timedelta(minutes=minutes)
    )


def authenticate_turn(world: World, secret: str) -> Principal:
    return world.do(OPERATOR, lambda ctx: tokens.authenticate_turn_credential(ctx, secret))


@pytest.mark.both_backends
def test_turn_credential_is_tied_to_parent_token(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read", "create"])
    parent = world.api(made.secret)
    secret = mint(world, parent, frozenset({Scope.READ}))

    agent = authenticate_turn(world, secret)
    assert agent.kind is PrincipalKind.AGENT
    assert agent.user_id == ana
    assert agent.turn_id == "turn_x"
    assert agent.scopes == {Scope.READ}
    assert agent.door == "agent:turn_x"
    row = token_row(world, agent.token_id)
    assert row.parent_token_id == made.token.id
    assert row.kind == "agent"
    assert row.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert world.do(agent, users.get_me).id == ana

    world.do(Principal.web(ana), tokens.revoke_token, made.token.id)
    with pytest.raises(Unauthenticated):
        authenticate_turn(world, secret)
    # An agent principal already in use dies at its next call, mid-turn.
    with pytest.raises(Unauthenticated):
        world.do(agent, users.get_me)


@pytest.mark.both_backends
def test_turn_credential_dies_with_expired_parent(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    parent = world.api(world.token(ana, ["read"], days=1))
    clock.advance(hours=23, minutes=55)
    secret = mint(world, parent, frozenset({Scope.READ}), minutes=15)
    authenticate_turn(world, secret)
    clock.advance(minutes=5)  # the parent expires; the credential's own expiry is later
    with pytest.raises(Unauthenticated):
        authenticate_turn(world, secret)


@pytest.mark.both_backends
def test_turn_credential_expires(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    secret = mint(world, Principal.web(ana), frozenset({Scope.READ}), minutes=15)
    assert authenticate_turn(world, secret).token_id is not None
    clock.advance(minutes=15)
    with pytest.raises(Unauthenticated, match="expired"):
        authenticate_turn(world, secret)


def test_revoke_credential_ends_the_turn(world: World) -> None:
    ana = world.user("ana@example.com")
    secret = mint(world, Principal.web(ana), frozenset({Scope.READ}))
    agent = authenticate_turn(world, secret)
    world.do(OPERATOR, tokens.revoke_credential, secret)
    with pytest.raises(Unauthenticated):
        authenticate_turn(world, secret)
    with pytest.raises(Unauthenticated):
        world.do(agent, users.get_me)


def test_mint_refused_for_disabled_account_or_dead_parent(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "t", ["read"])
    parent = world.api(made.secret)
    world.do(Principal.web(ana), tokens.revoke_token, made.token.id)
    with pytest.raises(Unauthenticated):
        mint(world, parent, frozenset({Scope.READ}))
    world.do(OPERATOR, users.set_active, ana, False)
    with pytest.raises(Unauthenticated):
        mint(world, Principal.web(ana), frozenset({Scope.READ}))
    rows = world.ctx_call(OPERATOR, lambda ctx: list(ctx.session.scalars(select(ApiToken))))
    assert [row.kind for row in rows] == ["personal"]
