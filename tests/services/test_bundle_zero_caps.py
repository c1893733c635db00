"""A phase's submission cap of 0 is no cap, as on Codabench: published bundles (Codabench's own
iris and mini-automl examples) write `max_submissions_per_day: 0` for their final phase."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.services.benchmarks import bundles
from benchgen.services.runs import submissions
from tests.bundle_factory import ANSWERS, bundle, competition, require_sandbox, results
from tests.support import World


@pytest.mark.parametrize("cap", ["max_submissions", "max_submissions_per_day"])
def test_a_cap_of_zero_takes_submissions(world: World, cap: str) -> None:
    require_sandbox()
    ana = Principal.web(world.user("ana@example.com"))
    comp = competition()
    comp["phases"][0].pop("max_submissions")
    comp["phases"][0][cap] = 0
    created = world.do(ana, bundles.upload_bundle, bundle(comp), "zero.zip")
    bm = created.benchmark.id
    for name in ("one.zip", "two.zip"):
        run = world.do(ana, submissions.submit, bm, results(ANSWERS), name)
        assert run.status == "queued"
