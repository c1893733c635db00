"""A reply or an error holding NUL, which PostgreSQL's text refuses, is stored with U+FFFD."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.evals.types import Answer
from benchgen.jobs.handlers import WORKER
from benchgen.services.runs import execution, launch, results
from tests.support import MCQ, World

pytestmark = pytest.mark.both_backends  # PostgreSQL refused the batch


def test_a_reply_with_nul_is_recorded_and_the_run_completes(world: World) -> None:
    """The batch failed on PostgreSQL at every retry; the run was then given up and refunded
    in full, keeping the answers recorded before it: a reply asked for NUL got them free."""
    ana = world.user("ana@example.com")
    run = world.do(
        Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), "mdl_builtin_first"
    )
    plan = world.do(WORKER, execution.begin_run, run.id)
    assert plan is not None
    [(first, asked), (second, also)] = plan.work
    answers = [
        Answer(first.index, asked, "B\x00\nANSWER: B", None, 3, 4, 5, 1),
        Answer(second.index, also, None, "HTTP 500: bad\x00body", 0, 0, 5, 1),
    ]
    world.do(WORKER, execution.record_answers, plan, answers)
    world.do(WORKER, execution.finish_run, run.id, False)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert (done.status, done.done_count, done.error_count) == ("completed", 2, 1)
    rows = world.do(Principal.web(ana), results.list_results, run.id)
    assert [(row["raw"], row["error"]) for row in rows] == [
        ("B\ufffd\nANSWER: B", None),
        (None, "HTTP 500: bad\ufffdbody"),
    ]
