"""A bundle change the agent proposes, and its approval, run the bundle's programs with no unit
of work open, as the upload doors do: on SQLite a write transaction holds the lock of the whole
database, so every other write on the server waited for them. What is stored after they ran is
checked again: the scratch bytes the preview hashed, and the permission to edit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.permissions import PrincipalKind
from benchgen.services import deployment
from benchgen.services.benchmarks import bundles, lifecycle
from benchgen.services.chat import _proposal_kinds, proposals, scratch
from benchgen.services.chat.conversations import TurnView
from tests.agent.scripted import Script, new_conversation, say
from tests.bundle_factory import SCORER, HeldPrograms, bundle, require_sandbox
from tests.support import OPERATOR, World

# A slow write is one that waited for the lock: the programs are held far longer than this.
PROMPT_S = 1.5
FIXED = SCORER.replace("print('scored'", "print('rescored'")


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldPrograms]:
    require_sandbox()
    gate = HeldPrograms(monkeypatch)
    yield gate
    gate.release()


@pytest.fixture
def bm(world: World, ana: str) -> str:
    return world.do(Principal.web(ana), bundles.upload_bundle, bundle(), "b.zip").benchmark.id


def _propose_steps(bm: str) -> list[Any]:
    where = {"benchmark_id": bm}
    write = {**where, "path": "scoring_program/score.py", "content": FIXED}
    return [
        [("copy_bundle_to_scratch", where)],
        [("write_scratch_file", write)],
        [("propose_bundle_change", where)],
    ]


def _in_thread(turn: Callable[[], TurnView]) -> Callable[[], TurnView]:
    """Run `turn` on a thread of its own; the result joins it and returns the turn."""
    done: list[TurnView] = []
    thread = threading.Thread(target=lambda: done.append(turn()))
    thread.start()

    def joined() -> TurnView:
        thread.join(60)
        assert done, "the turn did not finish"
        return done[0]

    return joined


def _while_held(
    held: HeldPrograms, action: Callable[[], object], turn: Callable[[], TurnView]
) -> tuple[float, TurnView]:
    """How long `action` takes while the turn's programs are held; then they are released and
    the turn finished."""
    held.wait_started()
    started = time.monotonic()
    action()
    took = time.monotonic() - started
    held.release()
    return took, turn()


def _proposed(world: World, api: Principal, bm: str, held: HeldPrograms) -> tuple[str, TurnView]:
    """A bundle change proposed and shown (its preview's programs released at once)."""
    held.release()
    conv = new_conversation(world.rt, api)
    turn = say(world.rt, api, conv, Script(_propose_steps(bm)).brain(), "fix the scorer")
    assert turn.status == "awaiting_approval" and turn.proposal is not None, turn.reply
    held.rearm()
    return conv, turn


def _approve(world: World, api: Principal, conv: str, turn: TurnView) -> Callable[[], TurnView]:
    action = dict(turn.buttons[0]["action"])
    return _in_thread(lambda: say(world.rt, api, conv, Script().brain(), action=action))


def _version(world: World, ana: str, bm: str) -> int:
    return world.do(Principal.web(ana), bundles.get_bundle, bm).version


def _create_as_bob(world: World) -> Callable[[], object]:
    bob = world.user("bob@example.com")
    spec = {"title": "Meanwhile", "format": "qa"}
    return lambda: world.do(Principal.web(bob), lifecycle.create_benchmark, spec)


def _switch_agent_edits_off(world: World) -> Callable[[], object]:
    return lambda: world.do(OPERATOR, deployment.set_setting, "agent_allow_edit", "false")


@pytest.mark.parametrize("backend", ["sqlite"])
def test_other_writes_go_on_while_a_proposed_bundle_changes_programs_run(
    world: World, ana: str, api: Principal, bm: str, held: HeldPrograms
) -> None:
    create = _create_as_bob(world)
    conv = new_conversation(world.rt, api)
    turn = _in_thread(
        lambda: say(world.rt, api, conv, Script(_propose_steps(bm)).brain(), "fix the scorer")
    )
    took, shown = _while_held(held, create, turn)
    assert took < PROMPT_S, f"the write waited {took:.1f} s for the preview's programs"
    assert shown.status == "awaiting_approval" and shown.proposal is not None, shown.reply
    assert shown.proposal.preview["solutions"][0]["ok"], shown.proposal.preview


@pytest.mark.parametrize("backend", ["sqlite"])
def test_other_writes_go_on_while_an_approved_bundle_changes_programs_run(
    world: World, ana: str, api: Principal, bm: str, held: HeldPrograms
) -> None:
    create = _create_as_bob(world)
    conv, shown = _proposed(world, api, bm, held)
    approved = _approve(world, api, conv, shown)
    took, done = _while_held(held, create, approved)
    assert took < PROMPT_S, f"the write waited {took:.1f} s for the approval's programs"
    assert "version 2" in done.reply, done.reply
    assert shown.proposal is not None
    view = world.do(Principal.web(ana), bundles.get_bundle, bm)
    assert (view.version, view.sha256) == (2, shown.proposal.preview["sha256"])


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_scratch_changed_while_the_approvals_programs_run_is_not_uploaded(
    world: World, ana: str, api: Principal, bm: str, held: HeldPrograms
) -> None:
    conv, shown = _proposed(world, api, bm, held)
    approved = _approve(world, api, conv, shown)
    # The programs ran on the approved bytes; the write that stores them looks again.
    took, done = _while_held(
        held,
        lambda: world.do(api, scratch.write_scratch_file, conv, bm, "x.txt", "sneaky"),
        approved,
    )
    assert took < PROMPT_S, f"the scratch write waited {took:.1f} s for the programs"
    assert "changed after the preview" in done.reply, done.reply
    assert done.proposal is not None and done.proposal.status == "failed"
    assert _version(world, ana, bm) == 1


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_scratch_changed_while_the_previews_programs_run_is_not_proposed(
    world: World, ana: str, api: Principal, bm: str, held: HeldPrograms
) -> None:
    conv = new_conversation(world.rt, api)
    script = Script(_propose_steps(bm))
    turn = _in_thread(lambda: say(world.rt, api, conv, script.brain(), "fix the scorer"))
    took, shown = _while_held(
        held, lambda: world.do(api, scratch.write_scratch_file, conv, bm, "x.txt", "sneaky"), turn
    )
    assert took < PROMPT_S, f"the scratch write waited {took:.1f} s for the programs"
    # The solutions were scored on other bytes than the copy now holds: nothing to approve.
    assert shown.proposal is None and shown.status == "completed", shown.reply
    proposed = next(c for c in shown.tool_calls if c["tool"] == "propose_bundle_change")
    assert proposed["error"] == "conflict", proposed
    assert "changed while its programs ran" in script.seen[-1]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_an_approval_rechecks_permission_after_the_programs_ran(
    world: World, ana: str, api: Principal, bm: str, held: HeldPrograms
) -> None:
    conv, shown = _proposed(world, api, bm, held)
    approved = _approve(world, api, conv, shown)
    # The operator switches the agent's editing off while the approval's programs run.
    took, done = _while_held(held, _switch_agent_edits_off(world), approved)
    assert took < PROMPT_S, f"the operator waited {took:.1f} s for the programs"
    assert done.proposal is not None and done.proposal.status == "failed", done.reply
    assert done.proposal.error_code == "permission_denied", done.proposal
    assert "did not happen" in done.reply
    assert _version(world, ana, bm) == 1


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_proposal_rechecks_permission_after_the_programs_ran(
    world: World, ana: str, api: Principal, bm: str, held: HeldPrograms
) -> None:
    conv = new_conversation(world.rt, api)
    script = Script(_propose_steps(bm))
    turn = _in_thread(lambda: say(world.rt, api, conv, script.brain(), "fix the scorer"))
    took, shown = _while_held(held, _switch_agent_edits_off(world), turn)
    assert took < PROMPT_S, f"the operator waited {took:.1f} s for the programs"
    assert shown.proposal is None, shown.reply
    proposed = next(c for c in shown.tool_calls if c["tool"] == "propose_bundle_change")
    assert proposed["error"] == "permission_denied", proposed


@pytest.mark.parametrize("backend", ["sqlite"])
def test_an_approval_whose_programs_outlast_its_deadline_is_still_carried_out(
    world: World, ana: str, api: Principal, bm: str, held: HeldPrograms, clock: ManualClock
) -> None:
    # Approved in time, it began in time: the programs that now run outside the write must not
    # turn it into an expired proposal by the time the write claims it.
    conv, shown = _proposed(world, api, bm, held)
    clock.advance(minutes=9)
    approved = _approve(world, api, conv, shown)
    held.wait_started()
    clock.advance(minutes=2)
    held.release()
    done = approved()
    assert "version 2" in done.reply, done.reply
    assert _version(world, ana, bm) == 2


@pytest.mark.parametrize("call", ["propose", "execute"])
def test_a_bundle_change_never_runs_its_programs_inside_a_write(
    world: World, ana: str, api: Principal, bm: str, call: str
) -> None:
    # Without what the programs found (`Pending.inspect`), storing refuses before it reads the
    # scratch copy: the programs have nowhere to run inside the write.
    agent = world.principal(PrincipalKind.AGENT, ana)
    conv = new_conversation(world.rt, api)
    arguments = {"benchmark_id": bm, "conversation_id": conv}
    with pytest.raises(ValueError, match="programs already run"):
        if call == "propose":
            world.do(agent, proposals.propose, conv, "change_bundle", arguments)
        else:
            world.ctx_call(agent, lambda ctx: _proposal_kinds.perform(ctx, "change_bundle", {}))
