"""What a reader of a published custom benchmark sees of its bundle: the rules, never what the
team alone may see (solutions, tasks' programs, unknown keys, and the warnings naming them)."""

from __future__ import annotations

from benchgen.core.context import Principal
from benchgen.services.benchmarks import bundles, lifecycle
from tests.bundle_factory import bundle, competition, require_sandbox
from tests.support import World


def test_readers_get_no_warnings_naming_the_teams_unknown_keys(world: World) -> None:
    require_sandbox()
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    comp = competition(private_answer_key="a-secret-note")
    created = world.do(Principal.web(ana), bundles.upload_bundle, bundle(comp), "tiny.zip")
    bm = created.benchmark.id
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    team = world.do(Principal.web(ana), bundles.get_bundle, bm)
    assert any("private_answer_key" in w["msg"] for w in team.competition["warnings"])
    public = world.do(Principal.web(bob), bundles.get_bundle, bm)
    assert public.warnings is None
    assert "private_answer_key" not in repr(public)
    assert public.competition["leaderboards"] == team.competition["leaderboards"]
