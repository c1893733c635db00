"""Reported replies resolved by two admins at the same moment: one resolves it, the others are
told it already was, and the audit holds one resolution."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict
from benchgen.services import audit
from benchgen.services.chat import reports
from tests.agent.scripted import Script, new_conversation, say
from tests.support import OPERATOR, World, at_once


@pytest.mark.both_backends  # PostgreSQL lets every resolver read the open report at once
def test_a_report_resolved_by_admins_at_once_is_resolved_and_audited_once(world: World) -> None:
    """Each found the report open and set it resolved: all succeeded, each audited."""
    ana = world.user("ana@example.com")
    conv = new_conversation(world.rt, Principal.web(ana))
    turn = say(world.rt, Principal.web(ana), conv, Script(["A dubious answer."]).brain(), "hi")
    made = world.do(Principal.web(ana), reports.report_reply, conv, turn.id)
    admins = [Principal.web(world.user(f"admin{n}@example.com", admin=True)) for n in range(4)]
    outcomes = at_once([lambda a=a: world.do(a, reports.resolve_report, made.id) for a in admins])
    refused = [o for o in outcomes if isinstance(o, Conflict)]
    assert len(refused) == 3, outcomes
    assert all("already resolved" in o.message for o in refused)
    (resolved,) = [o for o in outcomes if isinstance(o, reports.ReportView)]
    assert resolved.resolved_at is not None
    events = world.do(OPERATOR, audit.list_events, made.id, action="reply.resolve")
    assert len(events) == 1
