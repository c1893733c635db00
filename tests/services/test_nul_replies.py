"""A reply or an error holding what no database stores (NUL, which PostgreSQL's text refuses; a
lone surrogate, which no UTF-8 holds) is stored with U+FFFD, and the run completes."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.evals.types import Answer
from benchgen.jobs.handlers import WORKER
from benchgen.services.runs import execution, launch, results
from tests.support import MCQ, World

pytestmark = pytest.mark.both_backends  # PostgreSQL refused the batch


@pytest.mark.parametrize(
    ("reply", "error", "stored"),
    [
        (
            "B\x00\nANSWER: B",
            "HTTP 500: bad\x00body",
            ("B\ufffd\nANSWER: B", "HTTP 500: bad\ufffdbody"),
        ),
        (  # JSON's "\ud800" is a valid reply
            "\udfffB\ud800\nANSWER: B",
            "HTTP 500: \udc80bad",
            ("\ufffdB\ufffd\nANSWER: B", "HTTP 500: \ufffdbad"),
        ),
    ],
    ids=["nul", "lone surrogates"],
)
def test_an_unstorable_character_is_recorded_as_u_fffd_and_the_run_completes(
    world: World, reply: str, error: str, stored: tuple[str, str]
) -> None:
    """The batch failed at every retry; the run was then given up and refunded in full,
    keeping the answers recorded before it: a reply asked for such a character got them free."""
    ana = world.user("ana@example.com")
    run = world.do(
        Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), "mdl_builtin_first"
    )
    plan = world.do(WORKER, execution.begin_run, run.id)
    assert plan is not None
    [(first, asked), (second, also)] = plan.work
    answers = [
        Answer(first.index, asked, reply, None, 3, 4, 5, 1),
        Answer(second.index, also, None, error, 0, 0, 5, 1),
    ]
    world.do(WORKER, execution.record_answers, plan, answers)
    world.do(WORKER, execution.finish_run, run.id, False)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert (done.status, done.done_count, done.error_count) == ("completed", 2, 1)
    rows = world.do(Principal.web(ana), results.list_results, run.id)
    assert [(row["raw"], row["extracted"], row["error"]) for row in rows] == [
        (stored[0], "B", None),
        (None, None, stored[1]),
    ]
