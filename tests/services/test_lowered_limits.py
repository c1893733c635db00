"""A new bundle version that lowers a phase's `max_submissions` below what a participant made:
the refusal says how many they made and how many the phase now allows."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict
from benchgen.services.benchmarks import bundles, lifecycle
from benchgen.services.runs import submissions
from tests.bundle_factory import bundle, competition, require_sandbox, results
from tests.support import World


def _with_cap(cap: int) -> bytes:
    comp = competition()
    comp["phases"][0]["max_submissions"] = cap
    return bundle(comp)


def test_a_lowered_cap_is_refused_with_the_counts(world: World) -> None:
    require_sandbox()
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    owner, sender = Principal.web(ana), Principal.web(bob)
    made = world.do(owner, bundles.upload_bundle, _with_cap(3), "v1.zip")
    benchmark = made.benchmark.id
    world.do(owner, lifecycle.publish_benchmark, benchmark)
    for _ in range(3):
        world.do(sender, submissions.submit, benchmark, results({}), "s.zip")
    world.do(owner, bundles.upload_bundle_version, benchmark, _with_cap(1), "v2.zip")
    with pytest.raises(Conflict) as refused:
        world.do(sender, submissions.submit, benchmark, results({}), "s.zip")
    assert refused.value.message == (
        "You have used 3 of the 1 submissions phase 'Development' allows."
    )
    assert refused.value.details["made"] == 3
