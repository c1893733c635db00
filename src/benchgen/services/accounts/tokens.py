"""API tokens: minted once, stored only as SHA-256, scoped, expiring, revocable, checksummed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, or_, select, update

from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput, NotFound, Unauthenticated, invalid, invalid_all
from benchgen.core.ids import new_id, new_token, token_prefix
from benchgen.core.permissions import DELEGATED_KINDS, Action, PrincipalKind, Scope
from benchgen.core.text import name_problem
from benchgen.db.tables import ApiToken, User
from benchgen.services import access, audit

# last_used_at is a hint for people, not an audit trail: refresh it at most this often so a
# busy token does not turn every read request into a write.
LAST_USED_GRANULARITY = timedelta(minutes=1)
PERSONAL = "personal"


@dataclass(frozen=True)
class TokenView:
    """A token as shown after creation: never the secret, only its last four characters."""

    id: str
    name: str
    scopes: list[str]
    last_four: str
    created_at: datetime
    expires_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class NewToken:
    """The one moment the secret exists in the clear: right after creation."""

    secret: str
    token: TokenView


def hash_token(secret: str) -> str:
    """SHA-256 of the whole token, the only form stored."""
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_scopes(raw: Iterable[str]) -> frozenset[Scope]:
    """Scopes from their names.

    Raises:
        InvalidInput: an unknown name, or none at all.
    """
    names = [name.strip() for name in raw if name.strip()]
    unknown = sorted({name for name in names if name not in Scope.__members__.values()})
    if unknown:
        allowed = ", ".join(scope.value for scope in Scope)
        raise invalid(["scopes"], f"unknown scope(s) {', '.join(unknown)}; choose from {allowed}")
    if not names:
        raise invalid(["scopes"], "choose at least one scope")
    return frozenset(Scope(name) for name in names)


def create_token(
    ctx: Context, name: str, scopes: Iterable[str], expires_days: int | None = None
) -> NewToken:
    """Mint a personal token for the acting user (web session or CLI: tokens cannot mint tokens).

    Raises:
        PermissionDenied: the principal is a token or the agent.
        InvalidInput: bad name (empty, too long, or with control or invisible characters),
            scopes or expiry.
    """
    access.require(ctx, Action.TOKENS_MANAGE)
    user_id = ctx.principal.user_id
    assert user_id is not None  # TOKENS_MANAGE is an own-account action: a user is acting
    label = name.strip()
    problems: list[dict[str, Any]] = []  # every field's, so a form is fixed in one go
    if not 1 <= len(label) <= 200:
        problems.append({"loc": ["name"], "msg": "must be 1 to 200 characters"})
    elif (problem := name_problem(label)) is not None:
        problems.append({"loc": ["name"], "msg": problem})
    try:
        granted = parse_scopes(scopes)
    except InvalidInput as exc:
        problems += exc.errors
    days = ctx.settings.token_default_days if expires_days is None else expires_days
    if not 1 <= days <= ctx.settings.token_max_days:
        said = f"must be between 1 and {ctx.settings.token_max_days}"
        problems.append({"loc": ["expires_days"], "msg": said})
    if problems:
        raise invalid_all(problems)
    secret = new_token("bgp")
    row = _store(ctx, user_id, PERSONAL, label, secret, granted, ctx.now() + timedelta(days=days))
    audit.record(
        ctx, audit.AuditAction.TOKEN_CREATE, "token", row.id, name=label, scopes=sorted(granted)
    )
    return NewToken(secret, _view(row))


def mint_turn_credential(
    ctx: Context, turn_id: str, scopes: frozenset[Scope], lifetime: timedelta
) -> str:
    """Mint a `bga_` credential for one agent turn, tied to the calling token if there is one.

    The agent harness calls this at the start of a turn and `revoke_credential` in a `finally`.
    The expiry is only a backstop; the scopes are what the caller asked for, narrowed to the
    calling token's own scopes when a token is acting.

    Raises:
        Unauthenticated: the acting account or token is no longer valid.
    """
    user = access.live_user(ctx)
    if user is None:
        raise Unauthenticated("The account is disabled or the credential is no longer valid.")
    if ctx.principal.kind in DELEGATED_KINDS:
        # A turn started from a token never carries more than that token: otherwise a read-only
        # token could reach create, edit or publish by going through the agent.
        scopes = scopes & ctx.principal.scopes
    secret = new_token("bga")
    row = _store(ctx, user.id, "agent", f"turn {turn_id}", secret, scopes, ctx.now() + lifetime)
    row.turn_id = turn_id
    row.parent_token_id = ctx.principal.token_id
    row.session_id = ctx.principal.session_id
    return secret


def _store(
    ctx: Context,
    user_id: str,
    kind: str,
    name: str,
    secret: str,
    scopes: frozenset[Scope],
    expires_at: datetime,
) -> ApiToken:
    row = ApiToken(
        id=new_id("tok"),
        user_id=user_id,
        kind=kind,
        name=name,
        token_hash=hash_token(secret),
        last_four=secret[-4:],
        scopes=sorted(scope.value for scope in scopes),
        created_at=ctx.now(),
        expires_at=expires_at,
    )
    ctx.session.add(row)
    ctx.session.flush()
    return row


def list_tokens(ctx: Context) -> list[TokenView]:
    """The acting user's personal tokens, newest first (web session or CLI `--as` only).

    Raises:
        PermissionDenied: a token or the agent asked.
    """
    access.require(ctx, Action.TOKENS_MANAGE)
    query = (
        select(ApiToken)
        .where(ApiToken.user_id == ctx.principal.user_id, ApiToken.kind == PERSONAL)
        .order_by(ApiToken.created_at.desc(), ApiToken.id)
    )
    return [_view(row) for row in ctx.session.scalars(query)]


def revoke_token(ctx: Context, token_id: str) -> TokenView:
    """Revoke a personal token now (idempotent). Owners revoke their own; admins any.

    Raises:
        PermissionDenied: a token or the agent asked.
        NotFound: no such token among those the principal may manage.
    """
    row = ctx.session.get(ApiToken, token_id)
    if not access.can(ctx, Action.ADMIN_USERS):
        access.require(ctx, Action.TOKENS_MANAGE)
        if row is not None and row.user_id != ctx.principal.user_id:
            row = None  # someone else's token: indistinguishable from a missing one
    if row is None or row.kind != PERSONAL:
        raise NotFound("No such token.", {"id": token_id})
    # Read again under the row's lock: of two revocations at once (two tabs, the owner and an
    # admin), the second waits for the first and finds it revoked, stamped and audited once.
    ctx.session.refresh(row, with_for_update=True)
    if row.revoked_at is None:
        row.revoked_at = ctx.now()
        audit.record(ctx, audit.AuditAction.TOKEN_REVOKE, "token", row.id)
    return _view(row)


def describe_current(ctx: Context) -> TokenView | None:
    """The token the acting principal authenticated with, if any (never its secret)."""
    token_id = ctx.principal.token_id
    row = ctx.session.get(ApiToken, token_id) if token_id else None
    return _view(row) if row is not None else None


def revoke_credential(ctx: Context, secret: str) -> None:
    """End a turn credential (called by the agent harness when the turn ends, whatever happened)."""
    ctx.session.execute(
        update(ApiToken)
        .where(ApiToken.token_hash == hash_token(secret), ApiToken.revoked_at.is_(None))
        .values(revoked_at=ctx.now())
    )


def revoke_turn_credentials(ctx: Context, user_id: str, turn_id: str) -> None:
    """End every live credential minted for one chat turn of `user_id`'s (the turn is over,
    or was cut off), whatever became of the harness that held it."""
    ctx.session.execute(
        update(ApiToken)
        .where(
            ApiToken.user_id == user_id,  # indexed; turn_id is not
            ApiToken.turn_id == turn_id,
            ApiToken.revoked_at.is_(None),
        )
        .values(revoked_at=ctx.now())
        .execution_options(synchronize_session=False)
    )


def revoke_leaked(ctx: Context, secret: str) -> TokenView | None:
    """Revoke a token that was pasted somewhere it should not be; returns it if it was live.

    Anyone who holds the secret may kill it: revoking can only reduce what the secret can do.
    """
    if token_prefix(secret) is None:
        return None
    # Locked: one secret pasted into two messages at once is revoked, audited and reported once.
    found = select(ApiToken).where(ApiToken.token_hash == hash_token(secret)).with_for_update()
    row = ctx.session.scalar(found)
    if row is None or row.revoked_at is not None:
        return None
    row.revoked_at = ctx.now()
    audit.record(ctx, audit.AuditAction.TOKEN_REVOKE_LEAKED, "token", row.id)
    return _view(row)


def authenticate_token(ctx: Context, secret: str) -> Principal:
    """Turn a personal token from an API request into a principal.

    Turn credentials (`bga_`) are refused here: they are accepted only inside the process that
    runs the turn (see `authenticate_turn_credential`).

    Raises:
        Unauthenticated: malformed, bad checksum, unknown, expired, revoked, or a disabled account.
    """
    return _authenticate(ctx, secret, "bgp", PrincipalKind.API)


def authenticate_turn_credential(ctx: Context, secret: str) -> Principal:
    """Turn an agent turn credential into the agent principal (agent harness only).

    Raises:
        Unauthenticated: as for `authenticate_token`, or the token the turn started from is dead.
    """
    return _authenticate(ctx, secret, "bga", PrincipalKind.AGENT)


# A well-formed token of the other kind, by the kind this door takes: said as such, since the
# token itself is fine.
_WRONG_KIND = {
    "bgp": "This is an agent turn's credential (bga_…): the API takes personal tokens (bgp_…).",
    "bga": "This is a personal token (bgp_…), not an agent turn's credential (bga_…).",
}


def _authenticate(ctx: Context, secret: str, prefix: str, kind: PrincipalKind) -> Principal:
    # The checksum is verified before any lookup: a typo or a forged token costs no query.
    found_prefix = token_prefix(secret)
    if found_prefix is None:
        raise Unauthenticated("The token is malformed or its checksum is wrong.")
    if found_prefix != prefix:
        raise Unauthenticated(_WRONG_KIND[prefix])
    # The token and its user in one statement: the check of the account below then finds the
    # user already loaded (`found` holds it) instead of asking again.
    found = ctx.session.execute(_by_hash(), {"token_hash": hash_token(secret)}).first()
    now = ctx.now()
    if found is None:
        raise Unauthenticated("Unknown token.")
    row = found[0]
    if row.revoked_at is not None:
        raise Unauthenticated("This token was revoked.")
    if row.expires_at <= now:
        raise Unauthenticated("This token has expired.")
    principal = Principal(
        kind,
        row.user_id,
        scopes=frozenset(Scope(name) for name in row.scopes),
        token_id=row.id,
        turn_id=row.turn_id,
    )
    probe = Context(ctx.session, principal, ctx.settings, ctx.clock)
    if access.live_user(probe) is None:
        raise Unauthenticated("The account is disabled or the token it came from was revoked.")
    return principal


@cache
def _by_hash() -> Select[ApiToken, User]:
    """The token whose hash is `token_hash`, with its user. Built once and reused with new
    values: every API request runs it, and building and keying it cost more than running it."""
    return (
        select(ApiToken, User)
        .outerjoin(User, User.id == ApiToken.user_id)
        .where(ApiToken.token_hash == bindparam("token_hash"))
    )


def use_is_due(ctx: Context, principal: Principal) -> bool:
    """Whether the token behind `principal` should have its last-used time refreshed now.

    Asked in the same unit of work that authenticated it, so the row is already loaded: no
    query. A turn credential lives for one turn and nobody reads when it was last used: it is
    never due (stamping would turn each of the agent's reads into a write).
    """
    row = ctx.session.get(ApiToken, principal.token_id) if principal.token_id else None
    if row is None or row.kind != PERSONAL:
        return False
    return row.last_used_at is None or ctx.now() - row.last_used_at >= LAST_USED_GRANULARITY


def record_use(ctx: Context, principal: Principal) -> None:
    """Refresh the token's last-used time, at most once a minute however many requests race.

    Its own small write, after authentication read the token without taking a write lock.
    """
    if principal.token_id is None:
        return
    now = ctx.now()
    ctx.session.execute(
        update(ApiToken)
        .where(
            ApiToken.id == principal.token_id,
            ApiToken.kind == PERSONAL,
            or_(
                ApiToken.last_used_at.is_(None),
                ApiToken.last_used_at <= now - LAST_USED_GRANULARITY,
            ),
        )
        .values(last_used_at=now)
    )


def _view(row: ApiToken) -> TokenView:
    return TokenView(
        row.id,
        row.name,
        list(row.scopes),
        row.last_four,
        row.created_at,
        row.expires_at,
        row.last_used_at,
        row.revoked_at,
    )
