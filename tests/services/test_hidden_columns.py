"""Hidden leaderboard columns: a participant never sees their own run's hidden scores (the run's
view, its log, its mail and webhook, the agent's tools), the organisers see them all."""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select

from benchgen.agent import tools
from benchgen.bundles.evaluation import TaskOutcome
from benchgen.core.context import Context, Principal
from benchgen.core.permissions import Scope
from benchgen.db.tables import Benchmark, OutboxEmail, Run, User
from benchgen.jobs import handlers
from benchgen.services.benchmarks import bundles, lifecycle, members
from benchgen.services.queue import Claimed
from benchgen.services.runs import (
    bundle_execution,
    launch,
    leaderboards,
    notifications,
    run_log,
    submissions,
)
from benchgen.services.runtime import Runtime
from tests.bundle_factory import ANSWERS, bundle, competition, require_sandbox, results
from tests.services.test_notifications import Receiver, open_local, receivers
from tests.services.test_runs import work_all
from tests.support import MCQ, OPERATOR, World

__all__ = ["open_local", "receivers"]  # fixtures used here

FIRST = "mdl_builtin_first"
WORKER = handlers.WORKER
SHOWN, SECRET = 0.5, 0.3141  # the visible column's score, the hidden one's
COLUMNS = [
    {"key": "accuracy", "title": "Accuracy", "index": 0},
    {"key": "secret", "title": "Secret", "index": 1, "hidden": True},
]


@dataclass(frozen=True)
class Board:
    """A custom benchmark with a hidden column: its owner's run and a participant's."""

    benchmark_id: str
    owner: str
    participant: str
    owners_run: str
    participants_run: str


def joined_with_hidden_column(world: World, owner: str, participant: str) -> str:
    """The tiny bundle with its errors column hidden, published by `owner` and joined by
    `participant` (needs the sandbox)."""
    require_sandbox()
    comp = competition()
    comp["leaderboards"][0]["columns"][1]["hidden"] = True  # errors: for the organisers
    made = world.do(Principal.web(owner), bundles.upload_bundle, bundle(comp), "tiny.zip")
    benchmark = made.benchmark.id
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    world.do(Principal.web(participant), members.join_benchmark, benchmark, True)
    return benchmark


def board_with_hidden_column(world: World, runtime: Runtime) -> Board:
    """Both runs finished and scored in the visible and the hidden column."""
    ana, sam = world.user("ana@example.com"), world.user("sam@example.com", credits_=100)
    bm = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    own = world.do(Principal.web(ana), launch.start_run, bm, FIRST).id
    theirs = world.do(Principal.web(sam), launch.start_run, bm, FIRST).id
    work_all(runtime)

    def hide(ctx: Context) -> None:
        benchmark = ctx.session.get(Benchmark, bm)
        assert benchmark is not None
        benchmark.format = "custom"
        benchmark.scoring = {"leaderboard": {"columns": COLUMNS}}
        for run_id in (own, theirs):
            run = ctx.session.get(Run, run_id)
            assert run is not None
            run.scores = {"accuracy": SHOWN, "secret": SECRET}
            run.summary = {"tasks": {"0": {"accuracy": SHOWN, "secret": SECRET}}}

    world.ctx_call(OPERATOR, hide)
    return Board(bm, ana, sam, own, theirs)


@pytest.fixture
def board(world: World, runtime: Runtime) -> Board:
    return board_with_hidden_column(world, runtime)


def test_a_participant_sees_the_visible_column_of_their_run_and_not_the_hidden_one(
    world: World, board: Board
) -> None:
    seen = world.do(Principal.web(board.participant), launch.get_run, board.participants_run)
    assert seen.scores == {"accuracy": SHOWN}
    assert seen.summary == {"tasks": {"0": {"accuracy": SHOWN}}}
    (listed,) = world.do(Principal.web(board.participant), launch.list_runs)
    assert listed.scores == {"accuracy": SHOWN} and str(SECRET) not in str(listed.summary)


def test_the_owner_collaborators_and_admins_see_every_column(world: World, board: Board) -> None:
    everything = {"accuracy": SHOWN, "secret": SECRET}
    world.user("col@example.com")
    col = world.collaborator(board.owner, board.benchmark_id, "col@example.com")
    for person in (board.owner, col):
        seen = world.do(Principal.web(person), launch.get_run, board.participants_run)
        assert seen.scores == everything
        assert seen.summary == {"tasks": {"0": everything}}
    admin = world.user("root@example.com", admin=True)

    def hidden_for(user_id: str) -> frozenset[str]:
        def decide(ctx: Context) -> frozenset[str]:
            run = ctx.session.get(Run, board.participants_run)
            viewer = ctx.session.get(User, user_id)
            assert run is not None and viewer is not None
            return leaderboards.hidden_from(ctx, run, viewer=viewer)

        return world.ctx_call(WORKER, decide)

    assert hidden_for(admin) == frozenset()
    assert hidden_for(board.participant) == {"secret"}


def test_the_leaderboard_still_ranks_by_the_hidden_column(world: World, board: Board) -> None:
    def order(ctx: Context) -> None:
        for run_id, secret in ((board.owners_run, 0.1), (board.participants_run, 0.9)):
            run = ctx.session.get(Run, run_id)
            assert run is not None
            run.scores = {"secret": secret, "accuracy": SHOWN}

    world.ctx_call(OPERATOR, order)
    ranked = [{**c, "index": 1 - c["index"]} for c in COLUMNS]  # the hidden column first

    def rank_by_secret(ctx: Context) -> None:
        benchmark = ctx.session.get(Benchmark, board.benchmark_id)
        assert benchmark is not None
        benchmark.scoring = {"leaderboard": {"columns": ranked}}

    world.ctx_call(OPERATOR, rank_by_secret)
    for run_id in (board.owners_run, board.participants_run):
        world.do(Principal.web(board.owner), leaderboards.add_to_leaderboard, run_id)
    shown = world.do(
        Principal.web(board.participant), leaderboards.get_leaderboard, board.benchmark_id
    )
    assert [row.run_id for row in shown.rows] == [board.participants_run, board.owners_run]
    assert shown.columns == ["accuracy"]
    assert all(row.scores == {"accuracy": SHOWN} for row in shown.rows)


def test_a_tasks_log_line_leaves_the_hidden_column_out(world: World, board: Board) -> None:
    outcome = TaskOutcome(0, {"accuracy": SHOWN, "secret": SECRET}, [], None, None)
    done = bundle_execution.DoneTask(outcome, None)
    world.do(WORKER, bundle_execution.record_task, board.participants_run, done)
    lines = world.do(Principal.web(board.participant), run_log.read_log, board.participants_run)
    (line,) = [entry.line for entry in lines if entry.line.startswith("Task 0")]
    assert "accuracy" in line and "secret" not in line and str(SECRET) not in line


def _notified(world: World, runtime: Runtime, user_id: str, run_id: str, hook: Receiver) -> None:
    """Mail and a webhook on for `user_id`, then the run's end notified again."""

    def verify(ctx: Context) -> None:
        user = ctx.session.get(User, user_id)
        assert user is not None
        user.email_verified_at = ctx.now()

    world.ctx_call(OPERATOR, verify)
    world.do(Principal.web(user_id), notifications.update_notification_settings, True, hook.url)
    world.do(WORKER, notifications.notify_run_finished, run_id)
    handlers.execute_run(runtime, Claimed("job_again", "run", {"run_id": run_id}, 2, False))


def _letter(world: World, run_id: str) -> str:
    def body(ctx: Context) -> str:
        found = ctx.session.scalars(select(OutboxEmail).where(OutboxEmail.body.contains(run_id)))
        (letter,) = found
        return letter.body

    return world.ctx_call(WORKER, body)


def test_the_mail_and_webhook_show_a_participant_only_the_visible_column(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    board = board_with_hidden_column(world, open_local)
    mine, theirs = receivers
    _notified(world, open_local, board.participant, board.participants_run, theirs)
    _notified(world, open_local, board.owner, board.owners_run, mine)

    assert json.loads(theirs.seen[0][1])["scores"] == {"accuracy": SHOWN}
    letter = _letter(world, board.participants_run)
    assert f"accuracy {SHOWN}" in letter and "secret" not in letter
    assert json.loads(mine.seen[0][1])["scores"] == {"accuracy": SHOWN, "secret": SECRET}
    assert f"secret {SECRET}" in _letter(world, board.owners_run)


class _Deps:
    """The agent's turn state, as far as its tools use it: each call in a unit of work."""

    def __init__(self, world: World, principal: Principal) -> None:
        self.world, self.principal = world, principal

    def call(self, name: str, args: dict[str, Any], work: Any, write: bool) -> Any:
        return self.world.do(self.principal, work)


def test_the_agents_run_tools_show_a_participant_only_the_visible_column(
    world: World, board: Board
) -> None:
    def told(user_id: str) -> Any:
        turn = world.turn(Principal.web(user_id), frozenset({Scope.READ}))
        agent = SimpleNamespace(deps=_Deps(world, turn))
        return tools.run_status(agent, board.participants_run)["run"]  # type: ignore[arg-type]

    participant = told(board.participant)
    assert participant["scores"] == {"accuracy": SHOWN}
    assert str(SECRET) not in json.dumps(participant)
    assert told(board.owner)["scores"] == {"accuracy": SHOWN, "secret": SECRET}


def test_a_submission_scored_by_its_bundle_hides_the_hidden_column_from_its_participant(
    world: World, runtime: Runtime
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    benchmark = joined_with_hidden_column(world, ana, bob)
    run_id = world.do(
        Principal.web(bob), submissions.submit, benchmark, results(ANSWERS), "a.zip"
    ).id
    work_all(runtime)

    theirs = world.do(Principal.web(bob), launch.get_run, run_id)
    assert theirs.status == "completed" and set(theirs.scores) == {"accuracy", "combined"}
    assert "errors" not in json.dumps(theirs.summary)
    lines = world.do(Principal.web(bob), run_log.read_log, run_id)
    (task,) = [entry.line for entry in lines if entry.line.startswith("Task 0")]
    assert "'accuracy'" in task and "'errors'" not in task
    owners = world.do(Principal.web(ana), launch.get_run, run_id)
    assert set(owners.scores) == {"accuracy", "combined", "errors"}
    # A next version shows the column: the run scored while it was hidden keeps it hidden.
    world.do(Principal.web(ana), bundles.upload_bundle_version, benchmark, bundle(), "v2.zip")
    assert set(world.do(Principal.web(bob), launch.get_run, run_id).scores) == set(theirs.scores)
