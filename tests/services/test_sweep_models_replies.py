"""Replies a hostile endpoint shapes to fail their batch are stored, and the run completes."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.evals.types import Answer
from benchgen.jobs.handlers import WORKER
from benchgen.services.runs import execution, launch, results
from tests.support import MCQ, World

pytestmark = pytest.mark.both_backends


def test_lone_surrogates_in_a_reply_or_an_error_are_stored_as_u_fffd(world: World) -> None:
    """JSON's "\\ud800" is a valid reply no UTF-8 can hold: the batch failed on both databases
    at every retry, and the run was refunded in full, the answers recorded before it kept."""
    ana = world.user("ana@example.com")
    run = world.do(
        Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), "mdl_builtin_first"
    )
    plan = world.do(WORKER, execution.begin_run, run.id)
    assert plan is not None
    [(first, asked), (second, also)] = plan.work
    answers = [
        Answer(first.index, asked, "\udfffB\ud800\nANSWER: B", None, 3, 4, 5, 1),
        Answer(second.index, also, None, "HTTP 500: \udc80bad", 0, 0, 5, 1),
    ]
    world.do(WORKER, execution.record_answers, plan, answers)
    world.do(WORKER, execution.finish_run, run.id, False)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert (done.status, done.done_count, done.error_count) == ("completed", 2, 1)
    rows = world.do(Principal.web(ana), results.list_results, run.id)
    assert [(row["raw"], row["extracted"], row["error"]) for row in rows] == [
        ("\ufffdB\ufffd\nANSWER: B", "B", None),
        (None, None, "HTTP 500: \ufffdbad"),
    ]
