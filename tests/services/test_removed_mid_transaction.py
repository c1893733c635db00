"""A collaborator removed while their unit of work is under way loses the right at the lock."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import NotFound
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import lifecycle, members, question_edits
from benchgen.services.runtime import transaction
from tests.support import QA, World


@pytest.fixture
def backend() -> str:
    """PostgreSQL: there the removal commits while the editor's transaction is open (SQLite's
    writer holds the whole database from its first statement)."""
    return "postgres"


def test_an_edit_checked_before_the_removal_is_refused_after_it(world: World) -> None:
    """The membership read for the first check was remembered past the benchmark's lock: the
    owner's removal, committed in between, let the edit through all the same."""
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    world.user("bo@example.com")
    bo = world.collaborator(ana, bm, "bo@example.com")
    with pytest.raises(NotFound), transaction(world.rt, Principal.web(bo)) as ctx:
        lifecycle.get_benchmark_for(ctx, bm, Action.BENCHMARK_EDIT)  # the editor's page
        world.do(Principal.web(ana), members.remove_collaborator, bm, bo)
        question_edits.replace_question(
            ctx, bm, 0, {"prompt": "Capital of Peru?", "answer": "Lima"}
        )
    prompts = [q["prompt"] for q in world.do(Principal.web(ana), lifecycle.list_questions, bm)]
    assert "Capital of Peru?" not in prompts
