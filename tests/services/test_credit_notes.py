"""A grant's note: the account's holder reads it in their ledger, and the audit log keeps it."""

from __future__ import annotations

import pytest

from benchgen.core.errors import InvalidInput
from benchgen.services import audit
from benchgen.services.accounts import _ledger, credits
from tests.support import OPERATOR, World


@pytest.mark.both_backends
def test_the_audit_log_keeps_why_credits_were_granted(world: World) -> None:
    ana = world.user("ana@example.com")
    world.do(OPERATOR, credits.grant_credits, ana, 25, "  refund for the outage  ")
    [event] = world.do(OPERATOR, audit.list_events, ana, action="credits.grant")
    assert event.details == {"amount": 25, "note": "refund for the outage"}


@pytest.mark.parametrize(
    ("note", "problem"),
    [
        ("x" * 501, "at most 500 characters"),  # was cut to 500 in silence
        ("refund \u202egnitset", "RIGHT-TO-LEFT OVERRIDE"),  # reads reversed in the holder's ledger
        ("line one\nline two", "control"),
    ],
)
def test_a_note_that_cannot_be_shown_as_typed_grants_nothing(
    world: World, note: str, problem: str
) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(InvalidInput, match=problem) as caught:
        world.do(OPERATOR, credits.grant_credits, ana, 25, note)
    assert caught.value.errors[0]["loc"] == ["note"]
    assert world.do(OPERATOR, _ledger.balance_of, ana) == 0
    assert world.do(OPERATOR, audit.list_events, ana, action="credits.grant") == []
