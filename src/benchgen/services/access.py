"""The one decision point for permissions: `explain` decides, `can` and `require` use it.

Effective right = what the principal carries (scopes, grants) ∩ what the user may do on that
object right now (roles, admin flag, live token) ∩ the deployment's agent switches. Every check
denies first; nothing later in the chain can turn a denial into an allowance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TypeVar

from sqlalchemy import ColumnElement, Select, String, and_, bindparam, exists, false, or_, select

from benchgen.core.context import Context
from benchgen.core.errors import NotFound, PermissionDenied, Unauthenticated
from benchgen.core.permissions import (
    AGENT_SWITCHABLE,
    ALL_SCOPES,
    DELEGATED_KINDS,
    Action,
    PrincipalKind,
    Role,
    Scope,
    Target,
    page_for,
    rule_for,
)
from benchgen.db.locks import lock_benchmark
from benchgen.db.session import read_memo
from benchgen.db.tables import (
    ApiToken,
    Benchmark,
    Collaborator,
    Participant,
    Run,
    User,
    WebSession,
    WhitelistEntry,
)
from benchgen.services import overrides


@dataclass(frozen=True)
class Decision:
    """The outcome of one check; `hidden` denials surface as NotFound, revealing nothing."""

    allowed: bool
    reason: str
    hidden: bool = False
    page: str | None = None
    role: Role | None = None


def explain(
    ctx: Context,
    action: Action,
    benchmark: Benchmark | None = None,
    run: Run | None = None,
    roles: frozenset[Role] | None = None,
) -> Decision:
    """Decide whether the context's principal may do `action` (on `benchmark`, or on `run` and
    its benchmark, where the action applies to one). `roles` are the user's roles on the
    benchmark when a list already looked them up for a page (`roles_on_many`)."""
    rule = rule_for(action)
    principal = ctx.principal
    if principal.kind is PrincipalKind.SYSTEM:
        granted = action in principal.grants
        return Decision(granted, f"system job {principal.name!r} {_verb(granted)} this grant")
    if rule.target is Target.JOB:
        return Decision(False, "only the platform's own background jobs do this")
    if principal.is_operator:
        allowed = rule.target is Target.PLATFORM
        return Decision(allowed, "the operator" if allowed else "act --as a user for this")
    user = live_user(ctx)
    if user is None:
        return Decision(False, "the account is disabled or the credential is no longer valid")
    roles = _object_roles(ctx, action, user, benchmark, run, roles)
    if rule.target in (Target.BENCHMARK, Target.RUN) and not roles:
        return Decision(False, f"no such {rule.target.value}", hidden=True)
    page = page_for(action, run.id if run else benchmark.id if benchmark else "")
    if principal.kind in DELEGATED_KINDS:
        denial = _delegation_denial(ctx, action)
        if denial:
            return Decision(False, denial, page=page)
    if rule.target is Target.PLATFORM:
        return Decision(user.is_admin, "admin" if user.is_admin else "needs an administrator")
    if rule.target is Target.OWN:
        return Decision(True, "the user's own account")
    matching = sorted(roles & rule.roles)
    if (
        matching == [Role.PUBLIC]
        and action in _BARRED_WHEN_REMOVED
        and _removed(ctx, user, benchmark)
    ):
        return Decision(False, REMOVED)
    if not matching:
        held = ", ".join(sorted(roles))
        reason = f"only {_who(rule.roles)} can {rule.summary}; your role here is {held}"
        # A token or agent user is pointed at the web app; a person already there would be
        # sent to the page that just refused them.
        return Decision(False, reason, page=page if principal.kind in DELEGATED_KINDS else None)
    return Decision(True, f"allowed as {matching[0]}", role=matching[0])


# What a participant the owner removed may no longer do as one of the public on a published
# benchmark: removal bars them from its work (running, submitting, joining again) until the
# owner lets them back, not from reading what everyone may read.
_BARRED_WHEN_REMOVED = frozenset({Action.RUN_LAUNCH, Action.BENCHMARK_JOIN})
REMOVED = "the owner removed you from this benchmark; only they can let you back"


def _removed(ctx: Context, user: User, benchmark: Benchmark | None) -> bool:
    """Whether the owner removed `user` as a participant of `benchmark`."""
    if benchmark is None:
        return False
    facts = _membership_facts(ctx, user, [benchmark.id])[benchmark.id]
    return facts.membership == "removed"


_WHO = {
    Role.OWNER: "the owner",
    Role.COLLABORATOR: "collaborators",
    Role.PARTICIPANT: "participants",
    Role.INVITEE: "people the whitelist admits",
    Role.PUBLIC: "anyone signed in (once it is published)",
    Role.LAUNCHER: "whoever launched the run",
}


def _who(roles: frozenset[Role]) -> str:
    """The roles that may do an action, in words, most trusted first."""
    names = [_WHO[role] for role in Role if role in roles]
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def _delegation_denial(ctx: Context, action: Action) -> str | None:
    """Why a token or turn credential may not do `action`, or None when it may."""
    rule = rule_for(action)
    kind = "this agent" if ctx.principal.kind is PrincipalKind.AGENT else "an API token"
    if rule.scope is None:
        return f"{kind} can never {rule.summary}; do it in the web app"
    if ctx.principal.kind is PrincipalKind.AGENT and not rule.agent:
        return f"{kind} can never {rule.summary}; do it in the web app or with an API token"
    switch = AGENT_SWITCHABLE.get(rule.scope)
    # The switch is named first: a credential minted while it was off lacks the scope too, and
    # the user should learn that the deployment, not their token, is why.
    if (
        ctx.principal.kind is PrincipalKind.AGENT
        and switch
        and not overrides.effective(ctx, switch)
    ):
        return f"this deployment has switched off '{rule.scope}' for the agent"
    if rule.scope not in ctx.principal.scopes:
        return f"{kind} without the '{rule.scope}' scope cannot {rule.summary}"
    return None


def _object_roles(
    ctx: Context,
    action: Action,
    user: User,
    benchmark: Benchmark | None,
    run: Run | None,
    known: frozenset[Role] | None,
) -> frozenset[Role]:
    """The user's roles on the action's object; for runs, only roles that may see the run."""
    target = rule_for(action).target
    if target not in (Target.BENCHMARK, Target.RUN):
        return frozenset()
    if benchmark is None or (target is Target.RUN and run is None):
        raise ValueError(f"{action} needs a {target.value}")
    roles = roles_on(ctx, user, benchmark) if known is None else known
    if target is Target.BENCHMARK or benchmark.deleted_at is not None:
        # A deleted benchmark takes its runs with it, for their launchers too (as in lists).
        return roles
    assert run is not None
    if run.launched_by == user.id:
        roles |= {Role.LAUNCHER}
    # Someone else's run is invisible to participants and the public: its per-question
    # answers would let them rebuild the key of a published benchmark.
    return roles if roles & {Role.OWNER, Role.COLLABORATOR, Role.LAUNCHER} else frozenset()


def can(
    ctx: Context,
    action: Action,
    benchmark: Benchmark | None = None,
    run: Run | None = None,
    roles: frozenset[Role] | None = None,
) -> bool:
    """True when `explain` allows it."""
    return explain(ctx, action, benchmark, run, roles).allowed


def require(
    ctx: Context, action: Action, benchmark: Benchmark | None = None, run: Run | None = None
) -> Decision:
    """Return the allowing decision or raise.

    Raises:
        Unauthenticated: the user or credential is no longer valid.
        NotFound: the principal may not know the benchmark exists.
        PermissionDenied: anything else; the message says why and where to go instead.
    """
    decision = explain(ctx, action, benchmark, run)
    if decision.allowed:
        return decision
    if ctx.principal.user_id and not ctx.principal.is_operator and live_user(ctx) is None:
        raise Unauthenticated(decision.reason)
    if decision.hidden:
        hidden = run or benchmark
        kind = "run" if run else "benchmark"
        raise NotFound(f"No such {kind}.", {"id": hidden.id if hidden else None})
    details = {"action": action.value, **({"page": decision.page} if decision.page else {})}
    raise PermissionDenied(f"Not allowed: {decision.reason}.", details)


def live_user(ctx: Context) -> User | None:
    """The acting user if the account is active and, for tokens, the credential is still live."""
    principal = ctx.principal
    if principal.user_id is None:
        return None
    user = _kept(ctx, User, principal.user_id)
    if user is None or not user.is_active:
        return None
    if principal.kind in DELEGATED_KINDS and not _token_live(ctx, principal.token_id):
        return None
    return user


def _token_live(ctx: Context, token_id: str | None) -> bool:
    # Re-checked on every decision, so revoking a token (or the token an agent turn was
    # started with) takes effect at the very next call, mid-request or mid-turn.
    while token_id is not None:
        token = _kept(ctx, ApiToken, token_id)
        if token is None or token.revoked_at is not None or token.expires_at <= ctx.now():
            return False
        if token.session_id is not None and not _session_live(ctx, token.session_id):
            return False  # a turn started in the browser ends with the session (sign-out)
        token_id = token.parent_token_id
    return True


_Row = TypeVar("_Row", User, ApiToken, WebSession, Benchmark, Run)


def _kept(ctx: Context, model: type[_Row], key: str) -> _Row | None:
    """`session.get`, keeping the row for the rest of the unit of work.

    The identity map holds rows weakly, so every decision of a request would read the user and
    the token (and the benchmark or run it decides on) again. A strong reference makes the
    repeats free while they still see this unit of work's own changes (the same objects; bulk
    updates synchronise them).
    """
    row = ctx.session.get(model, key)
    if row is not None:
        ctx.session.info.setdefault("access_rows", {})[(model.__name__, key)] = row
    return row


def _session_live(ctx: Context, session_id: str) -> bool:
    session = _kept(ctx, WebSession, session_id)
    return session is not None and session.revoked_at is None and session.expires_at > ctx.now()


@dataclass(frozen=True)
class _Facts:
    """What the membership tables say about one user on one benchmark."""

    collaborator: bool = False
    membership: str | None = None
    listed: bool = False


# Membership facts live in the unit of work's read memo under this name.
_FACTS = "membership_facts"
_NO_FACTS = _Facts()


def roles_on(ctx: Context, user: User, benchmark: Benchmark) -> frozenset[Role]:
    """Every role `user` holds on `benchmark` now; empty when the benchmark is deleted or unseen."""
    if benchmark.deleted_at is not None:
        return frozenset()
    return roles_on_many(ctx, user, [benchmark])[benchmark.id]


def roles_on_many(
    ctx: Context, user: User, benchmarks: Sequence[Benchmark]
) -> dict[str, frozenset[Role]]:
    """`roles_on` for a page of benchmarks, in one query whatever the page's size (none when
    this unit of work already asked for them and wrote nothing since)."""
    facts = _membership_facts(ctx, user, [benchmark.id for benchmark in benchmarks])
    return {b.id: _roles(user, b, facts[b.id]) for b in benchmarks}


def _membership_facts(ctx: Context, user: User, ids: list[str]) -> dict[str, _Facts]:
    """The membership facts of `user` on each benchmark in `ids`, remembered for the unit of
    work: one request decides on the same benchmark several times (the check, then the view).
    The memo forgets them at the unit of work's first write (db.session.read_memo), so a join
    or a removal in the same request counts at once; the next request asks again."""
    entries = _entries(user)
    memo = read_memo(ctx.session)
    keys = {key: (_FACTS, user.id, tuple(entries), key) for key in ids}
    missing = [key for key in ids if keys[key] not in memo]
    if missing:
        values = {"user_id": user.id, "ids": missing, "entries": entries}
        for key, collaborator, status, on_list in ctx.session.execute(_facts_query(), values):
            memo[keys[key]] = _Facts(bool(collaborator), status, bool(on_list))
    # A benchmark the query did not find (deleted meanwhile) has no membership at all.
    return {key: memo.get(keys[key], _NO_FACTS) for key in ids}


@cache
def _facts_query() -> Select[str, bool, str | None, bool]:
    """The facts of user `user_id` on benchmarks `ids`, whose email admits whitelist `entries`.

    Built once and reused with new values: building and keying this statement for SQLAlchemy's
    cache of compiled statements took longer than running it.
    """
    user_id = bindparam("user_id", type_=String)
    collaborating = exists().where(
        Collaborator.benchmark_id == Benchmark.id, Collaborator.user_id == user_id
    )
    membership = (
        select(Participant.status)
        .where(Participant.benchmark_id == Benchmark.id, Participant.user_id == user_id)
        .scalar_subquery()
    )
    listed = exists().where(
        WhitelistEntry.benchmark_id == Benchmark.id,
        WhitelistEntry.entry.in_(bindparam("entries", expanding=True)),
    )
    return select(Benchmark.id, collaborating, membership, listed).where(
        Benchmark.id.in_(bindparam("ids", expanding=True))
    )


def _roles(user: User, benchmark: Benchmark, facts: _Facts) -> frozenset[Role]:
    """The roles these facts give `user` on `benchmark` (one rule for single and batch); the
    benchmark's own columns are read from the row each time, never remembered."""
    if benchmark.deleted_at is not None:
        return frozenset()
    roles: set[Role] = set()
    if benchmark.owner_id == user.id:
        roles.add(Role.OWNER)
    if facts.collaborator:
        roles.add(Role.COLLABORATOR)
    if facts.membership == "active":
        roles.add(Role.PARTICIPANT)
    elif facts.membership is None and facts.listed:
        roles.add(Role.INVITEE)
    if benchmark.visibility == "published":
        roles.add(Role.PUBLIC)
    return frozenset(roles)


def visible_benchmarks(
    ctx: Context, action: Action = Action.BENCHMARK_READ, public: bool = True
) -> ColumnElement[bool]:
    """The SQL twin of `roles_on`: benchmarks on which the acting user holds a role `action`
    accepts (leave out published strangers' ones with `public=False`).

    Built from the same rule table as the per-object decision, so a list shows exactly what
    `require_benchmark` would let the user open (a property test holds them together).
    """
    user = live_user(ctx)
    if user is None:
        return false()
    by_role = {
        Role.OWNER: Benchmark.owner_id == user.id,
        Role.COLLABORATOR: exists().where(
            Collaborator.benchmark_id == Benchmark.id, Collaborator.user_id == user.id
        ),
        Role.PARTICIPANT: exists().where(
            Participant.benchmark_id == Benchmark.id,
            Participant.user_id == user.id,
            Participant.status == "active",
        ),
        Role.INVITEE: and_(
            ~exists().where(
                Participant.benchmark_id == Benchmark.id, Participant.user_id == user.id
            ),
            exists().where(
                WhitelistEntry.benchmark_id == Benchmark.id,
                WhitelistEntry.entry.in_(_entries(user)),
            ),
        ),
        Role.PUBLIC: Benchmark.visibility == "published",
    }
    if action in _BARRED_WHEN_REMOVED:
        by_role[Role.PUBLIC] = and_(
            by_role[Role.PUBLIC],
            ~exists().where(
                Participant.benchmark_id == Benchmark.id,
                Participant.user_id == user.id,
                Participant.status == "removed",
            ),
        )
    accepted = rule_for(action).roles - ({Role.LAUNCHER} | (set() if public else {Role.PUBLIC}))
    return and_(Benchmark.deleted_at.is_(None), or_(false(), *(by_role[r] for r in accepted)))


def visible_runs(ctx: Context) -> ColumnElement[bool]:
    """The SQL twin of a run's decision (for a query joined with the run's benchmark): runs
    the user launched, and every run on a benchmark they own or collaborate on."""
    user = live_user(ctx)
    if user is None:
        return false()
    team = visible_benchmarks(ctx, Action.RUN_READ, public=False)
    return and_(Benchmark.deleted_at.is_(None), or_(Run.launched_by == user.id, team))


def _entries(user: User) -> list[str]:
    """The whitelist entries that admit `user`: their email and its `@domain`, or none at all
    while the email is unverified (anyone can sign up as alice@rival.org; only Alice can open
    the link mailed there)."""
    if user.email_verified_at is None:
        return []
    email = user.email.lower()
    return [email, "@" + email.rsplit("@", 1)[-1]]


def require_benchmark(ctx: Context, benchmark_id: str, action: Action) -> Benchmark:
    """Load a live benchmark and require `action` on it.

    Raises:
        NotFound: no such benchmark, deleted, or not visible to the principal.
        PermissionDenied: visible but the action is not allowed.
    """
    benchmark = _kept(ctx, Benchmark, benchmark_id)
    if benchmark is None or benchmark.deleted_at is not None:
        raise NotFound("No such benchmark.", {"id": benchmark_id})
    require(ctx, action, benchmark)
    return benchmark


def require_held(
    ctx: Context, benchmark_id: str, action: Action, exclusive: bool = False
) -> Benchmark:
    """`require_benchmark`, holding the benchmark's row until the transaction ends
    (`locks.lock_benchmark`): shared to start work on it, `exclusive` to take it away. Without
    it a run started as the benchmark was deleted passed the check in a snapshot the delete had
    not committed yet, and was queued after the delete had stopped the runs it found.

    Raises:
        NotFound: no such benchmark, deleted, or not visible to the principal.
        PermissionDenied: visible but the action is not allowed.
    """
    row = lock_benchmark(ctx.session, benchmark_id, exclusive)
    # The check finds `row` in the session: the copy read under the lock, not an older one.
    return require_benchmark(ctx, row.id if row else benchmark_id, action)


def require_run(ctx: Context, run_id: str, action: Action) -> Run:
    """Load a run and require `action` on it.

    Raises:
        NotFound: no such run, or the principal may not see it.
        PermissionDenied: visible but the action is not allowed.
    """
    run = _kept(ctx, Run, run_id)
    benchmark = _kept(ctx, Benchmark, run.benchmark_id) if run else None
    if run is None or benchmark is None:
        raise NotFound("No such run.", {"id": run_id})
    require(ctx, action, benchmark, run)
    return run


def _verb(granted: bool) -> str:
    return "holds" if granted else "lacks"


def agent_scopes(ctx: Context) -> frozenset[Scope]:
    """The scopes a turn credential may carry in this deployment now: the six delegable ones
    less those the operator switched off for the agent (A3). Minting narrows them further to the
    calling token's scopes; every decision still checks the user's rights on the object."""
    return frozenset(
        scope
        for scope in ALL_SCOPES
        if scope not in AGENT_SWITCHABLE or overrides.effective(ctx, AGENT_SWITCHABLE[scope])
    )
