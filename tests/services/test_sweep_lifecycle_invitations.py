"""An owner revoking an invitation that stopped working meanwhile is told so in the owner's
words, not the invited person's."""

from __future__ import annotations

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict
from benchgen.services.benchmarks import invitations
from tests.support import QA, World


def _refusal(world: World, owner: str, bm: str, invitation_id: str) -> str:
    with pytest.raises(Conflict) as refused:
        world.do(Principal.web(owner), invitations.revoke_invitation, bm, invitation_id)
    return refused.value.message


def test_an_owner_revoking_a_spent_invitation_is_not_told_to_ask_the_owner(
    world: World, clock: ManualClock
) -> None:
    """Each refusal told the owner to ask the owner for a new invitation, or that it 'works
    once'."""
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, QA)
    owner = Principal.web(ana)
    revoked = world.do(owner, invitations.invite_collaborator, bm, "cyd@example.com")
    world.do(owner, invitations.revoke_invitation, bm, revoked.id)
    accepted = world.do(owner, invitations.invite_collaborator, bm, "bob@example.com")
    (secret,) = world.invitations("bob@example.com")
    world.do(Principal.web(bob), invitations.accept_invitation, secret)
    expired = world.do(owner, invitations.invite_collaborator, bm, "dee@example.com")
    clock.advance(days=8)
    messages = [_refusal(world, ana, bm, row.id) for row in (revoked, accepted, expired)]
    assert messages[0] == "This invitation was revoked already."
    assert messages[1] == (
        "bob@example.com accepted this invitation already: remove them as a collaborator instead."
    )
    assert messages[2].endswith("UTC already: there is nothing to revoke.")


def test_the_invited_person_is_still_told_to_ask_the_owner(
    world: World, clock: ManualClock
) -> None:
    """The holder's words did not change with the owner's."""
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, QA)
    world.do(Principal.web(ana), invitations.invite_collaborator, bm, "bob@example.com")
    (secret,) = world.invitations("bob@example.com")
    clock.advance(days=8)
    with pytest.raises(Conflict, match=r"expired on .* UTC; ask the owner for a new one"):
        world.do(Principal.web(bob), invitations.accept_invitation, secret)
