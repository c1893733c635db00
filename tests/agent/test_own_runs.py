"""The agent's "my runs" are the runs the user launched: a participant's run on the user's own
benchmark is theirs, not the user's (it was the one "is it done?" reported)."""

from __future__ import annotations

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle, members
from benchgen.services.runs import launch
from tests.agent.test_offline_planner import RANDOM, Chat
from tests.support import World


def test_is_it_done_and_my_runs_leave_participants_runs_out(
    world: World, clock: ManualClock
) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    own = world.do(chat.web, launch.start_run, bm, RANDOM)
    world.do(chat.web, lifecycle.publish_benchmark, bm)
    pia = Principal.web(world.user("pia@example.com"))
    world.do(pia, members.join_benchmark, bm, True)
    clock.advance(seconds=5)
    theirs = world.do(pia, launch.start_run, bm, RANDOM)  # newer, on the user's benchmark
    status = chat.say("is it done?")
    assert status.reply.startswith(f"Run {own.id} "), status.reply
    assert theirs.id not in status.reply
    listed = chat.say("list my runs")
    assert own.id in listed.reply and theirs.id not in listed.reply, listed.reply
