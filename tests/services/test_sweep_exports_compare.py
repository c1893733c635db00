"""One item's result explained: a position no question can have is refused as input, naming
`position`, on every database (PostgreSQL's integers end at 2**31 - 1)."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.services.runs import compare
from benchgen.services.runtime import Runtime
from tests.services.test_rescoring_leaderboards import ECHO, finished_run
from tests.support import QA, World

pytestmark = pytest.mark.both_backends  # the query failed on PostgreSQL only


@pytest.mark.parametrize("position", [-1, 2**31, 2**63])
def test_a_position_out_of_range_is_refused_naming_it(
    world: World, runtime: Runtime, position: int
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    run_id = finished_run(world, runtime, ana, bm, ECHO)
    with pytest.raises(InvalidInput) as refused:
        world.do(Principal.web(ana), compare.explain_result, run_id, position)
    assert refused.value.errors[0]["loc"] == ["position"]
