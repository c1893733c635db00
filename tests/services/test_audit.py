"""The audit log: every benchmark, membership and mail change records who, through which door,
did what to which object; and how a person reads the actor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from benchgen.core.clock import ManualClock
from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput, PermissionDenied
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import AuditEvent
from benchgen.services import audit
from benchgen.services.benchmarks import invitations, lifecycle, members, outbox, phases
from tests.support import MCQ, QA, World

OPERATOR = Principal.cli()


@dataclass(frozen=True)
class Event:
    """An audit row as plain data."""

    id: str
    at: datetime
    user_id: str | None
    door: str
    action: str
    object_type: str
    object_id: str
    details: dict[str, Any]


def events(world: World, action: str | None = None) -> list[Event]:
    """Audit rows, optionally of one action, in the order they were written (the clock moves)."""

    def read(ctx: Context) -> list[Event]:
        query = select(AuditEvent).order_by(AuditEvent.at, AuditEvent.id)
        if action is not None:
            query = query.where(AuditEvent.action == action)
        return [
            Event(
                r.id,
                r.at if r.at.tzinfo else r.at.replace(tzinfo=UTC),
                r.user_id,
                r.door,
                r.action,
                r.object_type,
                r.object_id,
                r.details,
            )
            for r in ctx.session.scalars(query)
        ]

    return world.ctx_call(OPERATOR, read)


def only(world: World, action: str) -> Event:
    """The one audit row of `action`."""
    found = events(world, action)
    assert len(found) == 1, [e.action for e in found]
    return found[0]


def expected_door(principal: Principal) -> str:
    """The door string written independently of `Principal.door`."""
    if principal.kind is PrincipalKind.API:
        assert principal.token_id is not None and principal.token_id.startswith("tok_")
        return f"api:{principal.token_id}"
    if principal.kind is PrincipalKind.AGENT:
        assert principal.turn_id == "turn_test"
        return "agent:turn_test"
    return principal.kind.value


DOORS = [PrincipalKind.WEB, PrincipalKind.CLI, PrincipalKind.API, PrincipalKind.AGENT]


# --- the delegable mutations, through every door ----------------------------------------------


@pytest.mark.both_backends
@pytest.mark.parametrize("kind", DOORS, ids=[kind.value for kind in DOORS])
def test_benchmark_changes_are_audited_with_user_and_door(
    world: World, clock: ManualClock, kind: PrincipalKind
) -> None:
    user = world.user("ana@example.com")
    who = world.principal(kind, user)
    door = expected_door(who)

    clock.advance(minutes=1)
    bm = world.do(who, lifecycle.create_benchmark, QA).benchmark.id
    assert bm.startswith("bm_")
    created = only(world, "benchmark.create")
    assert (created.user_id, created.door, created.object_type, created.object_id) == (
        user,
        door,
        "benchmark",
        bm,
    )
    assert created.details == {"title": "Capitals", "format": "qa", "questions": 2}
    assert created.at == clock.now()

    clock.advance(minutes=1)
    world.do(who, lifecycle.edit_benchmark, bm, {"title": "World capitals"})
    clock.advance(minutes=1)
    world.do(who, lifecycle.edit_benchmark, bm, {"questions": QA["questions"][:1]})
    edits = events(world, "benchmark.edit")
    assert [(e.user_id, e.door, e.object_id, e.details) for e in edits] == [
        (user, door, bm, {"fields": ["title"], "questions_changed": False, "version": 1}),
        (user, door, bm, {"fields": [], "questions_changed": True, "version": 2}),
    ]

    clock.advance(minutes=1)
    world.do(who, lifecycle.publish_benchmark, bm)
    world.do(who, lifecycle.publish_benchmark, bm)  # idempotent: no second row
    published = only(world, "benchmark.publish")
    assert (published.user_id, published.door, published.object_id) == (user, door, bm)

    clock.advance(minutes=1)
    world.do(who, lifecycle.freeze_questions, bm)
    world.do(who, lifecycle.freeze_questions, bm)  # already frozen: no second row
    frozen = only(world, "benchmark.freeze")
    assert (frozen.user_id, frozen.door, frozen.object_id, frozen.details) == (
        user,
        door,
        bm,
        {"version": 2},
    )

    mine = [e.action for e in events(world) if e.object_id == bm]
    assert mine == [
        "benchmark.create",
        "benchmark.edit",
        "benchmark.edit",
        "benchmark.publish",
        "benchmark.freeze",
    ]


@pytest.mark.parametrize("kind", DOORS, ids=[kind.value for kind in DOORS])
def test_a_refused_or_invalid_change_records_nothing(world: World, kind: PrincipalKind) -> None:
    user = world.user("ana@example.com")
    bm = world.benchmark(user, MCQ)
    who = world.principal(kind, user)
    before = events(world)
    with pytest.raises(InvalidInput):
        world.do(who, lifecycle.create_benchmark, {**QA, "title": ""})
    with pytest.raises(InvalidInput):
        world.do(who, lifecycle.edit_benchmark, bm, {"questions": [{"prompt": "p", "answer": ""}]})
    if kind in (PrincipalKind.API, PrincipalKind.AGENT):
        with pytest.raises(PermissionDenied):
            world.do(who, lifecycle.delete_benchmark, bm)
    assert events(world) == before


# --- session-only mutations (web app and CLI) ---------------------------------------------------


@pytest.mark.both_backends
@pytest.mark.parametrize("kind", [PrincipalKind.WEB, PrincipalKind.CLI], ids=["web", "cli"])
def test_owner_settings_changes_are_audited(
    world: World, clock: ManualClock, kind: PrincipalKind
) -> None:
    owner = world.user("owner@example.com")
    bob = world.user("bob@example.com")
    cat = world.user("cat@partner.org")
    bm = world.benchmark(owner, MCQ)
    who = world.principal(kind, owner)
    door = kind.value
    clock.advance(seconds=1)
    sent = world.do(who, invitations.invite_collaborator, bm, "bob@example.com")
    invited = only(world, "collaborator.invite")
    assert (invited.user_id, invited.door, invited.object_type, invited.object_id) == (
        owner,
        door,
        "benchmark",
        bm,
    )
    assert invited.details == {"invitation_id": sent.id, "email": "bob@example.com"}
    # The invited person adds themself, accepting: the log names them, not the owner.
    clock.advance(seconds=1)
    (secret,) = world.invitations("bob@example.com")
    world.do(world.principal(kind, bob), invitations.accept_invitation, secret)
    added = only(world, "collaborator.add")
    assert (added.user_id, added.door, added.object_id, added.details) == (
        bob,
        door,
        bm,
        {"user_id": bob, "invitation_id": sent.id},
    )
    steps: list[tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
        ("collaborator.remove", members.remove_collaborator, (bob,), {"user_id": bob}),
        (
            "whitelist.add",
            members.add_whitelist_entries,
            (["@partner.org", "x@y.org"],),
            {"entries": ["@partner.org", "x@y.org"]},
        ),
        ("whitelist.remove", members.remove_whitelist_entry, ("x@y.org",), {"entry": "x@y.org"}),
    ]
    for action, call, args, details in steps:
        clock.advance(seconds=1)
        world.do(who, call, bm, *args)
        event = only(world, action)
        assert (event.user_id, event.door, event.object_type, event.object_id) == (
            owner,
            door,
            "benchmark",
            bm,
        )
        assert event.details == details
        assert event.at == clock.now()

    clock.advance(seconds=1)
    world.do(world.principal(kind, cat), members.join_benchmark, bm, True)
    joined = only(world, "participant.join")
    assert (joined.user_id, joined.door, joined.object_id, joined.details) == (cat, door, bm, {})

    clock.advance(seconds=1)
    world.do(who, members.set_participant_status, bm, cat, "removed")
    status = only(world, "participant.status")
    assert (status.user_id, status.door, status.object_id, status.details) == (
        owner,
        door,
        bm,
        {"user_id": cat, "status": "removed"},
    )

    clock.advance(seconds=1)
    sent = world.do(who, outbox.send_participant_email, bm, "Hello", "Body", ("removed",))
    assert sent.recipients == ["cat@partner.org"]
    mail = only(world, "participants.email")
    assert (mail.user_id, mail.door, mail.object_id) == (owner, door, bm)
    assert mail.details["recipients"] == 1
    assert mail.details["subject"] == "Hello"
    assert mail.details["batch_id"].startswith("mailb_")

    clock.advance(seconds=1)
    added = world.do(who, phases.add_phase, bm, "Final")
    phase_add = only(world, "phase.add")
    assert (phase_add.user_id, phase_add.door, phase_add.object_id, phase_add.details) == (
        owner,
        door,
        bm,
        {"phase_id": added.id, "name": "Final"},
    )
    clock.advance(seconds=1)
    world.do(who, phases.remove_phase, bm, added.id)
    phase_remove = only(world, "phase.remove")
    assert (phase_remove.user_id, phase_remove.door, phase_remove.details) == (
        owner,
        door,
        {"phase_id": added.id},
    )

    clock.advance(seconds=1)
    world.do(who, lifecycle.publish_benchmark, bm)
    clock.advance(seconds=1)
    world.do(who, lifecycle.unpublish_benchmark, bm)
    world.do(who, lifecycle.unpublish_benchmark, bm)  # already private: no second row
    unpublished = only(world, "benchmark.unpublish")
    assert (unpublished.user_id, unpublished.door, unpublished.object_id) == (owner, door, bm)

    clock.advance(seconds=1)
    world.do(who, lifecycle.delete_benchmark, bm)
    deleted = only(world, "benchmark.delete")
    assert (deleted.user_id, deleted.door, deleted.object_id) == (owner, door, bm)

    assert [e.action for e in events(world) if e.object_id == bm] == [
        "benchmark.create",
        "collaborator.invite",
        "collaborator.add",
        "collaborator.remove",
        "whitelist.add",
        "whitelist.remove",
        "participant.join",
        "participant.status",
        "participants.email",
        "phase.add",
        "phase.remove",
        "benchmark.publish",
        "benchmark.unpublish",
        "benchmark.delete",
    ]


def test_refused_settings_changes_record_nothing(world: World) -> None:
    owner = world.user("owner@example.com")
    world.user("bob@example.com")
    bm = world.benchmark(owner, MCQ)
    web = Principal.web(owner)
    before = events(world)
    with pytest.raises(InvalidInput):
        world.do(web, members.add_whitelist_entries, bm, ["ok@example.com", "nope"])
    with pytest.raises(InvalidInput):
        world.do(web, outbox.send_participant_email, bm, "Hello", "Body")
    with pytest.raises(InvalidInput):
        world.do(web, phases.add_phase, bm, "")
    assert events(world) == before


# --- reading the actor ------------------------------------------------------------------------


def describe(world: World, event_id: str) -> str:
    return world.ctx_call(
        OPERATOR, lambda ctx: audit.describe_actor(ctx, ctx.session.get(AuditEvent, event_id))
    )


def test_describe_actor_names_the_person_and_the_agent_acting_for_them(world: World) -> None:
    ana = world.user("ana@example.com")
    readers = {kind: world.principal(kind, ana) for kind in DOORS}
    for kind, who in readers.items():
        world.do(who, lifecycle.create_benchmark, {**QA, "title": f"By {kind.value}"})
    rows = {e.details["title"]: e for e in events(world, "benchmark.create")}
    assert describe(world, rows["By web"].id) == "ana@example.com"
    assert describe(world, rows["By cli"].id) == "ana@example.com"
    assert describe(world, rows["By api"].id) == "ana@example.com"
    agent = rows["By agent"]
    assert agent.door == "agent:turn_test"
    assert describe(world, agent.id) == "agent acting for ana@example.com"


def test_describe_actor_for_the_operator_and_a_system_job(world: World) -> None:
    world.user("ana@example.com")  # the operator creates the account
    created = only(world, "user.create")
    assert (created.user_id, created.door) == (None, "cli")
    assert describe(world, created.id) == "operator"
    job = Principal.system("sweeper", frozenset())
    event_id = world.ctx_call(job, lambda ctx: audit.record(ctx, "x.sweep", "run", "run_1").id)
    assert describe(world, event_id) == "system:sweeper"


@pytest.mark.both_backends
def test_list_events_is_for_admins_and_the_operator(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    admin = world.user("root@example.com", admin=True)
    clock.advance(minutes=1)
    first = world.benchmark(ana, QA)
    clock.advance(minutes=1)
    second = world.benchmark(ana, MCQ)
    clock.advance(minutes=1)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, first)
    for reader in (OPERATOR, Principal.web(admin)):
        listed = world.do(reader, audit.list_events, object_id=first)
        assert [(e.action, e.object_id) for e in listed] == [
            ("benchmark.publish", first),
            ("benchmark.create", first),
        ]
        newest = world.do(reader, audit.list_events, limit=2)
        assert [(e.action, e.object_id) for e in newest] == [
            ("benchmark.publish", first),
            ("benchmark.create", second),
        ]
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(ana), audit.list_events)
    api = world.principal(PrincipalKind.API, admin)
    with pytest.raises(PermissionDenied):
        world.do(api, audit.list_events)
