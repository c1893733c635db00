"""The figures a researcher reads hold together at their edges: an interval holds its own
accuracy when every answer is right (or none is); a run with no answer is named; a question cut
short says so."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.evals.aggregate import summarize
from benchgen.evals.types import Scored
from benchgen.services.runs import compare, launch
from benchgen.services.runtime import Runtime
from tests.services.test_compare import FIRST, RANDOM, finished
from tests.support import World

# Its first question's start, then blank lines that flatten to nothing, then the question.
SPACED = {
    "title": "Spaced",
    "format": "mcq",
    "questions": [
        {"prompt": "Read this." + "\n" * 400 + "Which one?", "choices": ["x", "y"], "answer": "A"},
        {"prompt": "Short  one?", "choices": ["x", "y"], "answer": "B"},
    ],
}


def test_a_run_all_right_or_all_wrong_has_an_interval_holding_its_accuracy() -> None:
    right, wrong = Scored("correct", 1.0, "A"), Scored("wrong", 0.0, "B")
    for n in (4, 10, 14):  # sizes where rounding left the bound at 0.9999999999999999
        summary = summarize([right] * n + [wrong] * n, [("all",)] * n + [("none",)] * n)
        every, none = summary["per_tag"]["all"], summary["per_tag"]["none"]
        assert every["accuracy"] == every["ci_high"] == 1.0
        assert none["accuracy"] == none["ci_low"] == 0.0


def test_a_question_cut_short_ends_with_an_ellipsis_and_an_empty_run_is_named(
    world: World, runtime: Runtime
) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, SPACED)
    done = finished(world, runtime, owner, benchmark, FIRST)
    web = Principal.web(owner)
    found = world.do(web, compare.compare_runs, done, done)
    assert [item.prompt for item in found.items] == ["Read this.…", "Short one?"]
    empty = world.do(web, launch.start_run, benchmark, RANDOM).id
    world.do(web, launch.cancel_run, empty)
    for a, b, named in ((empty, done, "a"), (done, empty, "b")):
        with pytest.raises(InvalidInput, match="answered no question") as caught:
            world.do(web, compare.compare_runs, a, b)
        assert caught.value.errors[0]["loc"] == [named]
