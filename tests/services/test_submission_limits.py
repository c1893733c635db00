"""A phase's `max_submissions` and `max_submissions_per_day`: what counts against them, and no
overshoot when a participant sends several submissions at the same moment."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from benchgen.bundles.evaluation import TaskOutcome
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, RateLimited
from benchgen.jobs.handlers import WORKER
from benchgen.services.benchmarks import bundles, lifecycle
from benchgen.services.runs import bundle_execution, execution, launch, submissions
from tests.bundle_factory import bundle, competition, require_sandbox, results
from tests.support import World, at_once


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def _published(world: World, owner: str, **rules: int) -> str:
    comp = competition()
    comp["phases"][0].update(rules)
    created = world.do(Principal.web(owner), bundles.upload_bundle, bundle(comp), "tiny.zip")
    world.do(Principal.web(owner), lifecycle.publish_benchmark, created.benchmark.id)
    return created.benchmark.id


def _at_once(world: World, principal: Principal, benchmark: str, senders: int) -> list[Any]:
    """What `senders` submissions sent at the same moment came back with."""
    send = partial(world.do, principal, submissions.submit, benchmark, results({}), "s.zip")
    return at_once([send] * senders, timeout_s=60)


@pytest.mark.both_backends  # the limit holds by a lock: PostgreSQL does not serialise writers
@pytest.mark.parametrize(
    ("rule", "refusal"), [("max_submissions", Conflict), ("max_submissions_per_day", RateLimited)]
)
def test_submissions_sent_at_once_never_pass_the_last_free_slot(
    world: World, rule: str, refusal: type[Exception]
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    benchmark = _published(world, ana, **{rule: 2})
    outcomes = _at_once(world, Principal.web(bob), benchmark, 5)
    accepted = [o for o in outcomes if not isinstance(o, Exception)]
    refused = [o for o in outcomes if isinstance(o, refusal)]
    assert (len(accepted), len(refused)) == (2, 3), outcomes


def _submit(world: World, user: str, benchmark: str) -> str:
    return world.do(Principal.web(user), submissions.submit, benchmark, results({}), "s.zip").id


def _abandon(world: World, run_id: str, scored: dict[str, float] | None = None) -> None:
    """The worker ends the run through the platform's fault, after one task `scored` if given."""
    if scored is not None:
        done = bundle_execution.DoneTask(TaskOutcome(0, scored, [], None, None), None)
        world.do(WORKER, bundle_execution.record_task, run_id, done)
    world.do(WORKER, execution.abandon_run, run_id, "the worker kept dying")


def test_a_submission_that_ended_before_any_score_frees_its_slot(world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    benchmark = _published(world, ana, max_submissions=1, max_submissions_per_day=1)
    _abandon(world, _submit(world, bob, benchmark))
    world.do(Principal.web(bob), launch.cancel_run, _submit(world, bob, benchmark))
    _submit(world, bob, benchmark)
    with pytest.raises(Conflict, match="1 submissions"):
        _submit(world, bob, benchmark)


def test_a_submission_that_ended_after_a_task_scored_keeps_its_slot(world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    benchmark = _published(world, ana, max_submissions=1)
    first = _submit(world, bob, benchmark)
    _abandon(world, first, {"accuracy": 0.5})
    assert world.do(Principal.web(bob), launch.get_run, first).summary["tasks"]["0"]
    with pytest.raises(Conflict, match="1 submissions"):
        _submit(world, bob, benchmark)
