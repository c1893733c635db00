"""The hostile model makes thousands of attempts and achieves nothing the user did not approve."""

from __future__ import annotations

import random

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.permissions import Scope
from benchgen.services.chat import proposals
from tests.agent.hostile import CANARY, Driver, Tally, build_scene, referee, snapshot
from tests.agent.scripted import Script, new_conversation, say
from tests.support import World

pytestmark = pytest.mark.both_backends  # parallel proposes meet the unique index and row claims

# make test runs this many on SQLite (and a smaller share on PostgreSQL); bench/agent_hostile.py
# runs as many as asked.
ATTEMPTS = {"sqlite": 2000, "postgres": 500}


def test_hostile_model_breaches_nothing(
    world: World, clock: ManualClock, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    scene = build_scene(world)
    before = snapshot(world, scene)
    tally = Tally()
    seed = 0
    while tally.attempts < ATTEMPTS[backend]:
        Driver(world, clock, scene, random.Random(seed), tally).play(messages=10)
        seed += 1
    referee(world, scene, tally, before)
    with capsys.disabled():
        print(
            f"\nhostile model ({backend}): {tally.attempts} attempts, "
            f"{len(tally.approved)} user approvals, {len(tally.breaches)} breaches"
        )
    assert tally.breaches == []
    # The adversary really tried: approvals happened and were carried out, and it was refused;
    # the user pasted live tokens in every disguise.
    assert tally.approved and len(tally.pasted) >= 5


def test_the_referee_sees_an_unapproved_action(world: World, clock: ManualClock) -> None:
    """The check can fail: a proposal approved behind the user's back, a leaked canary, and a
    pasted token left alive and shown to the model."""
    scene = build_scene(world)
    before = snapshot(world, scene)
    conv = new_conversation(world.rt, scene.victim_principal)
    publish = [("propose_publish", {"benchmark_id": scene.own_benchmarks[1]})]
    turn = say(world.rt, scene.victim_principal, conv, Script([publish]).brain(), "publish")
    assert turn.proposal is not None
    # Forged: approved and carried out without the user ever sending an approval.
    web = Principal.web(scene.victim)
    world.do(web, proposals.decide, conv, turn.proposal.id, turn.proposal.preview_hash, True)
    agent = world.turn(scene.victim_principal, frozenset(Scope))
    assert world.do(agent, proposals.execute, turn.proposal.id).status == "executed"
    live = world.token(scene.victim, ["read"])  # "pasted", but never screened: still alive
    tally = Tally(prompts=[f"tool result: {CANARY}", f"user: {live}"], pasted=[live])
    referee(world, scene, tally, before)
    assert any("without the user's approval" in breach for breach in tally.breaches)
    assert any("private data reached a prompt" in breach for breach in tally.breaches)
    assert "a pasted token was not revoked" in tally.breaches
    assert "a pasted token reached a prompt" in tally.breaches
