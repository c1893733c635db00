"""Reported agent replies: your own finished replies, once each, read and resolved by admins."""

from __future__ import annotations

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from benchgen.core.permissions import PrincipalKind
from benchgen.services import audit
from benchgen.services.accounts import tokens
from benchgen.services.chat import reports
from tests.agent.scripted import Script, new_conversation, say
from tests.support import OPERATOR, World


@pytest.fixture
def chatted(world: World) -> tuple[str, str, str]:
    """Ana's conversation with one finished turn; (user id, conversation id, turn id)."""
    ana = world.user("ana@example.com")
    conv = new_conversation(world.rt, Principal.web(ana))
    turn = say(world.rt, Principal.web(ana), conv, Script(["A dubious answer."]).brain(), "hi")
    return ana, conv, turn.id


@pytest.mark.both_backends
def test_a_report_keeps_the_reply_and_note_until_an_admin_resolves_it(
    world: World, clock: ManualClock, chatted: tuple[str, str, str]
) -> None:
    ana, conv, turn = chatted
    made = world.do(Principal.web(ana), reports.report_reply, conv, turn, "  Wrong!\nSee 2+2.  ")
    assert (made.reply, made.note, made.user_email) == (
        "A dubious answer.",
        "Wrong!\nSee 2+2.",
        "ana@example.com",
    )
    admin = Principal.web(world.user("root@example.com", admin=True))
    (listed,) = world.do(admin, reports.list_reports)
    assert (listed.id, listed.turn_id, listed.resolved_at) == (made.id, turn, None)
    assert world.do(OPERATOR, reports.list_reports, True) == []
    clock.advance(minutes=1)
    resolved = world.do(admin, reports.resolve_report, made.id)
    assert resolved.resolved_at is not None
    assert world.do(admin, reports.list_reports) == []
    assert [r.id for r in world.do(admin, reports.list_reports, True)] == [made.id]
    with pytest.raises(Conflict):
        world.do(admin, reports.resolve_report, made.id)
    with pytest.raises(NotFound):
        world.do(admin, reports.resolve_report, "rep_nope")
    actions = [e.action for e in world.do(admin, audit.list_events, made.id)]
    assert actions == ["reply.resolve", "reply.report"]


def test_only_my_finished_replies_once_each(world: World, chatted: tuple[str, str, str]) -> None:
    ana, conv, turn = chatted
    bob = Principal.web(world.user("bob@example.com"))
    with pytest.raises(NotFound):
        world.do(bob, reports.report_reply, conv, turn, "")
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), reports.report_reply, conv, turn, "x" * 2001)
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), reports.report_reply, conv, turn, "bidi \u202e trick")
    world.do(Principal.web(ana), reports.report_reply, conv, turn)
    with pytest.raises(Conflict, match="already reported"):
        world.do(Principal.web(ana), reports.report_reply, conv, turn, "again")
    agent = world.principal(PrincipalKind.AGENT, ana)
    with pytest.raises(PermissionDenied):
        world.do(agent, reports.report_reply, conv, turn, "")


def test_a_token_in_a_note_is_revoked_and_hidden(
    world: World, chatted: tuple[str, str, str]
) -> None:
    ana, conv, turn = chatted
    secret = world.token(ana, ["read"])
    made = world.do(Principal.web(ana), reports.report_reply, conv, turn, f"mine: {secret}")
    assert secret not in made.note and "redacted" in made.note
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, lambda ctx: tokens.authenticate_token(ctx, secret))


def test_reports_are_for_admins_only(world: World, chatted: tuple[str, str, str]) -> None:
    ana, conv, turn = chatted
    made = world.do(Principal.web(ana), reports.report_reply, conv, turn)
    for reader in (Principal.web(ana), world.principal(PrincipalKind.API, ana)):
        with pytest.raises(PermissionDenied):
            world.do(reader, reports.list_reports)
        with pytest.raises(PermissionDenied):
            world.do(reader, reports.resolve_report, made.id)
