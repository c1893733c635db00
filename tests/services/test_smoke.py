"""A first end-to-end pass through the services."""

import pytest

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from tests.support import MCQ, World


@pytest.mark.both_backends
def test_create_and_read(world: World) -> None:
    owner = world.user("ana@example.com")
    bm = world.benchmark(owner, MCQ)
    view = world.do(Principal.web(owner), lifecycle.get_benchmark, bm)
    assert view.question_count == 2
    assert view.can_see_key
    qs = world.do(Principal.web(owner), lifecycle.list_questions, bm)
    assert qs[0]["answer"] == "B"
