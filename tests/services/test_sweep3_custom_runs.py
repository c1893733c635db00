"""A catalogue model's run on a custom benchmark refuses the options its programs cannot
honour, at their field, before anything is reserved."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.services.benchmarks import bundles, lifecycle
from benchgen.services.runs import launch
from tests.bundle_factory import bundle, competition, require_sandbox
from tests.support import World

ECHO = "mdl_builtin_echo"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def test_a_custom_run_refuses_the_response_cache_it_would_drop(world: World) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=1000)
    made = world.do(Principal.web(ana), bundles.upload_bundle, bundle(competition()), "t.zip")
    world.do(Principal.web(ana), lifecycle.publish_benchmark, made.benchmark.id)
    web, bm, cached = Principal.web(bob), made.benchmark.id, {"cache": True}
    with pytest.raises(InvalidInput) as at_estimate:
        world.do(web, launch.estimate_run, bm, ECHO, cached)
    with pytest.raises(InvalidInput) as at_start:
        world.do(web, launch.start_run, bm, ECHO, None, cached)
    for refused in (at_estimate, at_start):
        assert refused.value.errors[0]["loc"] == ["cache"]
    assert world.do(web, launch.list_runs, bm) == []
    assert world.do(web, launch.start_run, bm, ECHO).status == "queued"
