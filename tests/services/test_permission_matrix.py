"""The permission matrix: every principal kind × action × relation to a benchmark × agent switches,
checked at the service level against a table written here, independently of `RULES`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from itertools import product

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Context, Principal
from benchgen.core.errors import NotFound, PermissionDenied, Unauthenticated
from benchgen.core.permissions import Action, PrincipalKind, Role, Scope, Target
from benchgen.db.tables import (
    AuditEvent,
    Benchmark,
    Phase,
    PhaseTask,
    Question,
    RateLimitEvent,
    Run,
    Task,
)
from benchgen.services import access, deployment
from benchgen.services.accounts import tokens, users
from benchgen.services.benchmarks import lifecycle, members
from benchgen.services.runs import launch
from tests.support import MCQ, OPERATOR, QA, World

pytestmark = pytest.mark.both_backends  # the visibility filters are SQL

ALLOWED, DENIED, HIDDEN = "allowed", "denied", "hidden"
BASELINE = "mdl_builtin_random"  # a free built-in model every database has, for any format


@dataclass(frozen=True)
class Row:
    """What the product says about one action: the scope a token needs (None: session-only),
    what it applies to, and which roles on the benchmark allow it."""

    scope: Scope | None
    target: Target
    roles: frozenset[Role] = frozenset()
    agent: bool = True  # False: a token with the scope may, a turn credential never


def _roles(*roles: Role) -> frozenset[Role]:
    return frozenset(roles)


_O, _C, _P, _I, _PUB = Role.OWNER, Role.COLLABORATOR, Role.PARTICIPANT, Role.INVITEE, Role.PUBLIC
_L = Role.LAUNCHER
_BM, _OWN, _PLAT = Target.BENCHMARK, Target.OWN, Target.PLATFORM
_RUN, _JOB = Target.RUN, Target.JOB
# PRODUCT §1.2: questions for owner, collaborators, participants and (once published) everyone;
# the answer key only for owner and collaborators; collaborators may edit and publish.
_SEE = _roles(_O, _C, _P, _PUB)
_TEAM = _roles(_O, _C)

# Keyed by the action's name, so that an action removed from the vocabulary is reported by
# test_every_action_has_matrix_rows instead of breaking the import of this module.
EXPECTED: dict[str, Row] = {
    # Delegable: the six scopes of A3.
    "benchmark.list": Row(Scope.READ, _OWN),
    "benchmark.read": Row(Scope.READ, _BM, _SEE),
    "benchmark.read_key": Row(Scope.READ, _BM, _TEAM),
    "benchmark.create": Row(Scope.CREATE, _OWN),
    "benchmark.edit": Row(Scope.EDIT, _BM, _TEAM),
    "benchmark.publish": Row(Scope.PUBLISH, _BM, _TEAM),
    "run.launch": Row(Scope.RUNS, _BM, _SEE),
    # PRODUCT §1.2/§1.4: a run is seen by whoever launched it and by the benchmark's team; only
    # the team sees which questions were right (so a published key cannot be rebuilt).
    "run.read": Row(Scope.READ, _RUN, _roles(_O, _C, _L)),
    "run.read_detail": Row(Scope.READ, _RUN, _TEAM),
    "run.cancel": Row(Scope.RUNS, _RUN, _roles(_O, _L)),
    "run.rescore": Row(Scope.RUNS, _RUN, _roles(_O, _C, _L)),
    "run.rescore_settings": Row(Scope.RUNS, _RUN, _TEAM),
    # PRODUCT §1.2: judging a run's failed answers again calls the judge, as launching it did:
    # whoever may see the run and rescore it (the service also checks the judge is open to them).
    "run.rejudge": Row(Scope.RUNS, _RUN, _roles(_O, _C, _L)),
    "model.list": Row(Scope.READ, _OWN),
    "model.manage": Row(Scope.RUNS, _OWN),
    "training.launch": Row(Scope.TRAIN, _OWN),
    # Issue 13: a user's training jobs are their own; reading them (and the compute on offer)
    # is a read, cancelling one needs the train scope that launched it.
    "training.read": Row(Scope.READ, _OWN),
    "training.cancel": Row(Scope.TRAIN, _OWN),
    # Issue 13: uploading training data needs the train scope; a user's datasets are their own.
    "dataset.create": Row(Scope.TRAIN, _OWN),
    "dataset.read": Row(Scope.READ, _OWN),
    "credits.read": Row(Scope.READ, _OWN),
    "chat.use": Row(Scope.READ, _OWN),
    # Issue 14: where run notifications go (a webhook's address) is set by the user or their
    # token, never by the agent.
    "notifications.manage": Row(Scope.RUNS, _OWN, agent=False),
    # Session-only: joining happens in the web app; the rest is the "never" list of A13.
    "benchmark.join": Row(None, _BM, _roles(_I, _PUB)),
    "benchmark.unpublish": Row(None, _BM, _roles(_O)),
    "benchmark.delete": Row(None, _BM, _roles(_O)),
    "phases.manage": Row(None, _BM, _roles(_O)),
    "access.manage": Row(None, _BM, _roles(_O)),
    "judge.configure": Row(None, _BM, _roles(_O)),
    # Hardening finding 3: only the owner, only in a session, sets outsiders' runs per day.
    "run_quota.manage": Row(None, _BM, _roles(_O)),
    "participants.email": Row(None, _BM, _roles(_O)),
    "leaderboard.manage": Row(None, _RUN, _TEAM),
    "run.edit_score": Row(None, _RUN, _roles(_O)),
    "model.delete": Row(None, _OWN),
    "dataset.delete": Row(None, _OWN),
    "training.delete": Row(None, _OWN),
    "billing.manage": Row(None, _OWN),
    "tokens.manage": Row(None, _OWN),
    # Platform administration: the admin flag (or the operator).
    "admin.users": Row(None, _PLAT),
    "admin.credits": Row(None, _PLAT),
    "admin.settings": Row(None, _PLAT),
    # Background work: only a system principal holding the grant.
    "run.execute": Row(None, _JOB),
    "chat.record": Row(None, _JOB),
    "training.execute": Row(None, _JOB),
    "metrics.read": Row(None, _JOB),
    "mail.send": Row(None, _JOB),
}

# ARCHITECTURE §6: where a refusal of a session-only action sends the person. Only pages the
# decision point can fill in itself (a benchmark id, or no id at all) are listed.
REFUSAL_PAGES: dict[str, str] = {
    "benchmark.unpublish": "/benchmarks/{id}/settings",
    "benchmark.delete": "/benchmarks/{id}/settings",
    "phases.manage": "/benchmarks/{id}/settings/phases",
    "access.manage": "/benchmarks/{id}/settings/access",
    "judge.configure": "/benchmarks/{id}/settings/judge",
    "run_quota.manage": "/benchmarks/{id}/settings",
    "participants.email": "/benchmarks/{id}/participants/email",
    "tokens.manage": "/settings/tokens",
    "billing.manage": "/settings/billing",
}

# The user's relation to the benchmark under test, and the roles that relation must give.
RELATIONS: dict[str, frozenset[Role]] = {
    "owner": _roles(_O),
    "collaborator": _roles(_C),
    "participant": _roles(_P),
    "invitee": _roles(_I),  # whitelisted (by @domain), not joined
    "removed_participant": _roles(),  # joined, then removed by the owner; still whitelisted
    "other_private": _roles(),
    "other_published": _roles(_PUB),
}
# Relations whose run under test is one they launched themselves (the others look at the
# owner's run on that benchmark).
LAUNCHED_OWN_RUN = frozenset({"owner", "participant"})

USER_KINDS = ("web", "api", "agent", "cli_as")
KINDS = (*USER_KINDS, "system_granted", "system_ungranted", "operator")
SWITCH_KEYS = {
    Scope.CREATE: "agent_allow_create",
    Scope.EDIT: "agent_allow_edit",
    Scope.PUBLISH: "agent_allow_publish",
}
SWITCH_STATES: tuple[frozenset[Scope], ...] = (
    frozenset(),
    *(frozenset({scope}) for scope in SWITCH_KEYS),
    frozenset(SWITCH_KEYS),
)
ALL_SIX = frozenset(Scope)
DELEGABLE = [a for a in Action if a.value in EXPECTED and EXPECTED[a.value].scope is not None]


def expected_outcome(
    kind: str,
    action: Action,
    roles: frozenset[Role],
    admin: bool,
    switched_off: frozenset[Scope],
    scopes: frozenset[Scope] = ALL_SIX,
) -> str:
    """The outcome the product rules give, computed from EXPECTED alone."""
    row = EXPECTED[action.value]
    if kind == "system_granted":
        return ALLOWED
    if kind == "system_ungranted" or row.target is Target.JOB:
        return DENIED
    if kind == "operator":
        return ALLOWED if row.target is Target.PLATFORM else DENIED
    if row.target is Target.RUN and not roles & {_O, _C, _L}:
        return HIDDEN  # someone else's run is invisible outside the benchmark's team
    if row.target is Target.BENCHMARK and not roles:
        return HIDDEN  # nothing may reveal that a private benchmark exists
    if kind in ("api", "agent"):
        if row.scope is None or row.scope not in scopes:
            return DENIED
        if kind == "agent" and row.scope in switched_off:
            return DENIED
        if kind == "agent" and not row.agent:
            return DENIED
    if row.target is Target.PLATFORM:
        return ALLOWED if admin else DENIED
    if row.target is Target.OWN:
        return ALLOWED
    return ALLOWED if roles & row.roles else DENIED


def test_every_action_has_matrix_rows() -> None:
    names = {action.value for action in Action}
    missing = sorted(names - set(EXPECTED))
    stale = sorted(set(EXPECTED) - names)
    assert (missing, stale) == ([], []), (
        f"actions without a row in EXPECTED: {missing}; "
        f"rows in EXPECTED for actions that no longer exist: {stale}"
    )


def test_refusal_pages_name_session_only_actions() -> None:
    assert all(EXPECTED[name].scope is None for name in REFUSAL_PAGES)


# --- building the state -------------------------------------------------------------------


@dataclass(frozen=True)
class Cast:
    """Users in every relation to a private benchmark, plus a stranger to a published one."""

    admin: bool
    members: dict[str, tuple[str, str]]  # relation -> (user id, benchmark id)
    runs: dict[str, str]  # relation -> the id of the run under test


def build_cast(world: World, tag: str, admin: bool) -> Cast:
    """Users (all admins or none), a private and a published benchmark, built through services."""

    def email(name: str) -> str:
        return f"{name}-{tag}@example.com"

    owner = world.user(email("owner"), admin=admin)
    collaborator = world.user(email("collaborator"), admin=admin)
    participant = world.user(email("participant"), admin=admin)
    removed = world.user(email("removed"), admin=admin)
    invitee = world.user(f"invitee@invited-{tag}.example.com", admin=admin)
    stranger = world.user(email("stranger"), admin=admin)
    private = world.benchmark(owner, QA)
    published = world.benchmark(owner, MCQ)
    as_owner = Principal.web(owner)
    world.collaborator(owner, private, email("collaborator"))
    entries = [email("participant"), email("removed"), f"@invited-{tag}.example.com"]
    world.do(as_owner, members.add_whitelist_entries, private, entries)
    world.do(Principal.web(participant), members.join_benchmark, private, True)
    world.do(Principal.web(removed), members.join_benchmark, private, True)
    world.do(as_owner, members.set_participant_status, private, removed, "removed")
    world.do(as_owner, lifecycle.publish_benchmark, published)
    owner_run = world.do(as_owner, launch.start_run, private, BASELINE).id
    own_runs = {
        "participant": world.do(Principal.web(participant), launch.start_run, private, BASELINE).id,
        "other_published": world.do(as_owner, launch.start_run, published, BASELINE).id,
    }
    return Cast(
        admin,
        {
            "owner": (owner, private),
            "collaborator": (collaborator, private),
            "participant": (participant, private),
            "invitee": (invitee, private),
            "removed_participant": (removed, private),
            "other_private": (stranger, private),
            "other_published": (stranger, published),
        },
        {relation: own_runs.get(relation, owner_run) for relation in RELATIONS},
    )


def set_switches(world: World, switched_off: frozenset[Scope]) -> None:
    """Turn the agent's create/edit/publish permissions on or off, as the operator would."""
    for scope, key in SWITCH_KEYS.items():
        value = "false" if scope in switched_off else "true"
        world.do(OPERATOR, deployment.set_setting, key, value)


def outcome(
    ctx: Context, action: Action, benchmark: Benchmark | None, run: Run | None = None
) -> tuple[str, dict]:
    """What `require` (and so `explain`, which it calls) decided, and the refusal's details."""
    try:
        access.require(ctx, action, benchmark, run)
    except NotFound as exc:
        return HIDDEN, exc.details
    except PermissionDenied as exc:
        return DENIED, exc.details
    except Unauthenticated as exc:
        return "unauthenticated", exc.details
    return ALLOWED, {}


def principals_for(world: World, user_id: str) -> dict[str, Principal]:
    """The user through every door; tokens and turn credentials carry all six scopes."""
    return {
        "web": Principal.web(user_id),
        "api": world.api(world.token(user_id, sorted(ALL_SIX))),
        "agent": world.turn(world.api(world.token(user_id, sorted(ALL_SIX))), ALL_SIX),
        "cli_as": Principal.cli(user_id),
    }


def non_user_principal(kind: str, action: Action) -> Principal:
    """System jobs hold exactly this grant, or every grant but this one; the bare operator."""
    if kind == "system_granted":
        return Principal.system("matrix", frozenset({action}))
    if kind == "system_ungranted":
        return Principal.system("matrix", frozenset(Action) - {action})
    return OPERATOR


def test_permission_matrix(world: World) -> None:
    casts = [build_cast(world, "plain", admin=False), build_cast(world, "admin", admin=True)]
    doors = {
        user_id: principals_for(world, user_id)
        for cast in casts
        for user_id, _ in cast.members.values()
    }
    mismatches: list[str] = []
    checked = 0
    for switched_off in SWITCH_STATES:
        set_switches(world, switched_off)

        def run(ctx: Context, switched_off: frozenset[Scope] = switched_off) -> int:
            count = 0
            for cast, relation, kind, action in product(casts, RELATIONS, KINDS, Action):
                user_id, benchmark_id = cast.members[relation]
                if kind in USER_KINDS:
                    principal = doors[user_id][kind]
                else:
                    principal = non_user_principal(kind, action)
                target = EXPECTED[action.value].target
                on_object = target in (_BM, _RUN)
                benchmark = ctx.session.get(Benchmark, benchmark_id) if on_object else None
                run = ctx.session.get(Run, cast.runs[relation]) if target is _RUN else None
                if run is not None:
                    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
                acting = Context(ctx.session, principal, ctx.settings, ctx.clock)
                roles = RELATIONS[relation]
                if target is _RUN and relation in LAUNCHED_OWN_RUN:
                    roles = roles | {_L}
                want = expected_outcome(kind, action, roles, cast.admin, switched_off)
                got, details = outcome(acting, action, benchmark, run)
                label = (
                    f"{kind:16} {action.value:20} {relation:19} admin={cast.admin!s:5} "
                    f"off={sorted(switched_off)}"
                )
                if got != want:
                    mismatches.append(f"{label}: expected {want}, got {got}")
                elif kind in ("api", "agent") and action.value in REFUSAL_PAGES and got == DENIED:
                    page = REFUSAL_PAGES[action.value].replace("{id}", benchmark_id)
                    if details.get("page") != page:
                        mismatches.append(f"{label}: refusal links {details.get('page')}")
                count += 1
            return count

        checked += world.ctx_call(OPERATOR, run)
    print(f"\n{checked} combinations checked, {len(mismatches)} mismatches")
    print("\n".join(mismatches))
    assert checked == len(SWITCH_STATES) * 2 * len(RELATIONS) * len(KINDS) * len(Action)
    assert not mismatches


# --- a token or turn credential missing exactly the action's scope ---------------------------


def _credentials(world: World, user_id: str, missing: Scope) -> dict[str, Principal]:
    fewer = ALL_SIX - {missing}
    full_token = world.api(world.token(user_id, sorted(ALL_SIX)))
    narrow_token = world.api(world.token(user_id, sorted(fewer)))
    return {
        "api token": narrow_token,
        "turn credential": world.turn(full_token, fewer),
        # The turn asks for all six, but the token it starts from lacks one: never more than it.
        "turn under a narrower token": world.turn(narrow_token, ALL_SIX),
    }


@pytest.mark.parametrize("action", DELEGABLE, ids=str)
def test_credential_without_the_scope_is_denied(world: World, action: Action) -> None:
    row = EXPECTED[action.value]
    assert row.scope is not None
    owner = world.user("owner@example.com")
    benchmark_id = world.benchmark(owner, QA)
    fewer = ALL_SIX - {row.scope}
    for kind in ("api", "agent"):  # the owner, all switches on: only the scope is missing
        assert expected_outcome(kind, action, _roles(_O), False, frozenset(), fewer) == DENIED

    run_id = world.do(Principal.web(owner), launch.start_run, benchmark_id, BASELINE).id

    def check(ctx: Context) -> str:
        on_object = row.target in (_BM, _RUN)
        benchmark = ctx.session.get(Benchmark, benchmark_id) if on_object else None
        run = ctx.session.get(Run, run_id) if row.target is _RUN else None
        return outcome(ctx, action, benchmark, run)[0]

    credentials = _credentials(world, owner, row.scope)
    got = {name: world.ctx_call(principal, check) for name, principal in credentials.items()}
    assert got == dict.fromkeys(credentials, DENIED)


# --- end to end through real services -----------------------------------------------------


# Everything creating a benchmark writes: the benchmark, its questions, phase and task, the
# audit event and the rate-limit ledger row.
CREATION_TABLES = (Benchmark, Question, Phase, Task, PhaseTask, AuditEvent, RateLimitEvent)


def _row_counts(world: World) -> dict[str, int]:
    def count(ctx: Context) -> dict[str, int]:
        return {
            table.__tablename__: int(
                ctx.session.scalar(select(func.count()).select_from(table)) or 0
            )
            for table in CREATION_TABLES
        }

    return world.ctx_call(OPERATOR, count)


def test_read_only_token_cannot_create_and_nothing_is_written(world: World) -> None:
    owner = world.user("ana@example.com")
    reader = world.api(world.token(owner, ["read"]))
    before = _row_counts(world)
    with pytest.raises(PermissionDenied) as refused:
        world.do(reader, lifecycle.create_benchmark, QA)
    assert "create" in refused.value.message
    assert _row_counts(world) == before
    assert world.do(reader, lifecycle.list_benchmarks) == []


def test_agent_cannot_unpublish_even_for_the_owner(world: World) -> None:
    owner = world.user("ana@example.com")
    benchmark_id = world.benchmark(owner, QA)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark_id)
    agent = world.principal(PrincipalKind.AGENT, owner)
    with pytest.raises(PermissionDenied) as refused:
        world.do(agent, lifecycle.unpublish_benchmark, benchmark_id)
    assert refused.value.details["page"] == f"/benchmarks/{benchmark_id}/settings"
    assert refused.value.details["action"] == Action.BENCHMARK_UNPUBLISH.value
    assert world.do(agent, lifecycle.get_benchmark, benchmark_id).visibility == "published"
    # The same person in the web app may.
    unpublished = world.do(Principal.web(owner), lifecycle.unpublish_benchmark, benchmark_id)
    assert unpublished.visibility == "private"


def _turn(world: World, user_id: str) -> tuple[Principal, Principal, str]:
    """A personal token, and a turn credential minted under it (principal and secret)."""
    parent = world.api(world.token(user_id, sorted(ALL_SIX)))
    secret = world.do(parent, tokens.mint_turn_credential, "turn_1", ALL_SIX, timedelta(minutes=16))
    agent = world.do(OPERATOR, lambda ctx: tokens.authenticate_turn_credential(ctx, secret))
    return parent, agent, secret


def _dead(world: World, principal: Principal, benchmark_id: str) -> Iterator[str]:
    """Every way the principal should now be refused; yields what did not hold."""
    if world.ctx_call(principal, access.live_user) is not None:
        yield "live_user still returns the user"
    checks: dict[str, Callable[[Context], object]] = {
        "require": lambda ctx: access.require(ctx, Action.BENCHMARK_LIST),
        "get_benchmark": lambda ctx: lifecycle.get_benchmark(ctx, benchmark_id),
    }
    for name, call in checks.items():
        try:
            world.ctx_call(principal, call)
        except Unauthenticated:
            continue
        except Exception as exc:
            yield f"{name} raised {type(exc).__name__}, not Unauthenticated"
        else:
            yield f"{name} still works"


def test_revoking_the_parent_token_kills_the_turn_at_once(world: World) -> None:
    owner = world.user("ana@example.com")
    benchmark_id = world.benchmark(owner, QA)
    parent, agent, secret = _turn(world, owner)
    assert world.do(agent, lifecycle.get_benchmark, benchmark_id).id == benchmark_id
    world.do(Principal.web(owner), tokens.revoke_token, parent.token_id)
    # The agent keeps the principal it authenticated with at the start of the turn.
    assert list(_dead(world, agent, benchmark_id)) == []
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, lambda ctx: tokens.authenticate_turn_credential(ctx, secret))


def test_disabled_account_stops_its_tokens(world: World) -> None:
    owner = world.user("ana@example.com")
    benchmark_id = world.benchmark(owner, QA)
    secret = world.token(owner, sorted(ALL_SIX))
    api = world.api(secret)
    _, agent, _ = _turn(world, owner)
    assert world.do(api, lifecycle.get_benchmark, benchmark_id).id == benchmark_id
    world.do(OPERATOR, users.set_active, owner, False)
    for principal in (api, agent, Principal.web(owner)):
        assert list(_dead(world, principal, benchmark_id)) == [], principal.kind
    with pytest.raises(Unauthenticated):
        world.api(secret)


def test_removing_a_collaborator_removes_edit_rights_at_once(world: World) -> None:
    owner = world.user("ana@example.com")
    helper = world.user("bob@example.com")
    private = world.benchmark(owner, QA)
    published = world.benchmark(owner, MCQ)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, published)
    for benchmark_id in (private, published):
        world.collaborator(owner, benchmark_id, "bob@example.com")
    # A turn that started while bob was a collaborator, and his web session.
    _, agent, _ = _turn(world, helper)
    for principal in (agent, Principal.web(helper)):
        for benchmark_id in (private, published):
            change = {"title": f"Edited by {principal.kind}"}
            world.do(principal, lifecycle.edit_benchmark, benchmark_id, change)
    for benchmark_id in (private, published):
        world.do(Principal.web(owner), members.remove_collaborator, benchmark_id, helper)
    for principal in (agent, Principal.web(helper)):
        change = {"title": "Too late"}
        with pytest.raises(NotFound):  # private: bob may no longer know it exists
            world.do(principal, lifecycle.edit_benchmark, private, change)
        with pytest.raises(PermissionDenied):  # published: bob still sees it, may not edit
            world.do(principal, lifecycle.edit_benchmark, published, change)
    title = world.do(Principal.web(owner), lifecycle.get_benchmark, private).title
    assert title == "Edited by web"


def test_agent_switches_from_settings_and_operator_overrides(world: World) -> None:
    owner = world.user("ana@example.com")
    benchmark_id = world.benchmark(owner, QA)
    _, agent, _ = _turn(world, owner)

    def publish_allowed(env_value: bool) -> bool:
        def decide(ctx: Context) -> bool:
            settings = ctx.settings.model_copy(update={"agent_allow_publish": env_value})
            acting = Context(ctx.session, ctx.principal, settings, ctx.clock)
            benchmark = ctx.session.get(Benchmark, benchmark_id)
            return access.can(acting, Action.BENCHMARK_PUBLISH, benchmark)

        return world.ctx_call(agent, decide)

    assert publish_allowed(True)
    assert not publish_allowed(False)
    # The operator's run-time setting wins over the environment, in both directions.
    world.do(OPERATOR, deployment.set_setting, "agent_allow_publish", "true")
    assert publish_allowed(False)
    world.do(OPERATOR, deployment.set_setting, "agent_allow_publish", "false")
    assert not publish_allowed(True)
    with pytest.raises(PermissionDenied, match="switched off"):
        world.do(agent, lifecycle.publish_benchmark, benchmark_id)
