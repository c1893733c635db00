"""The Evaluate tab of a custom benchmark whose first phase has ended: both forms offer the
phase open now; a participant the owner removed is told why their submission is refused."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import bundles, lifecycle, members, phases
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.bundle_factory import ANSWERS, bundle, competition, require_sandbox, results
from tests.support import World
from tests.web.support import WebUser


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


@dataclass
class Site:
    """Ana, who owns a published benchmark, and Bob, signed in."""

    world: World
    ana: str
    bob: str
    browser: WebUser
    benchmark: str


@pytest.fixture
def site(runtime: Runtime, world: World) -> Iterator[Site]:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=100)
    benchmark = published(world, ana)
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield Site(world, ana, bob, WebUser.sign_in(client, "bob@example.com"), benchmark)


def published(world: World, owner: str) -> str:
    """Development ended before the tests' clock starts (1 January 2026); Final is open."""
    comp = competition()
    comp["phases"][0].update(start="2025-11-01T00:00:00Z", end="2025-12-01T00:00:00Z")
    final = {**copy.deepcopy(comp["phases"][0]), "index": 1, "name": "Final"}
    final["start"] = "2025-12-01T00:00:00Z"
    del final["end"]
    comp["phases"].append(final)
    made = world.do(Principal.web(owner), bundles.upload_bundle, bundle(comp), "two.zip")
    world.do(Principal.web(owner), lifecycle.publish_benchmark, made.benchmark.id)
    return made.benchmark.id


def test_the_run_form_offers_the_phase_open_now(site: Site) -> None:
    """It offered the first phase, which had ended: starting the run as offered was refused."""
    bm, owner = site.benchmark, Principal.web(site.ana)
    page = site.browser.page(f"/benchmarks/{bm}/evaluate?model_id=mdl_builtin_echo")
    chosen = page.select_one("select#phase_id option[selected]")
    assert chosen is not None and chosen.get_text() == "Final"
    submit_phase = page.select_one("select#submit-phase option[selected]")
    assert submit_phase is not None and submit_phase.get_text() == "Final"
    started = site.browser.post(
        f"/benchmarks/{bm}/evaluate",
        {"model_id": "mdl_builtin_echo", "phase_id": chosen["value"]},
    )
    assert started.status_code == 303, started.text[:2000]
    final = site.world.do(owner, phases.list_phases, bm)[1]
    (run,) = site.world.do(owner, launch.list_runs, bm)
    assert run.phase_id == final.id


def test_a_removed_participant_is_told_why_a_run_or_submission_is_refused(site: Site) -> None:
    bm, owner = site.benchmark, Principal.web(site.ana)
    site.world.do(Principal.web(site.bob), members.join_benchmark, bm, True)
    site.world.do(owner, members.set_participant_status, bm, site.bob, "removed")
    files = {"submission": ("f.zip", results(ANSWERS), "application/zip")}
    refused = site.browser.post(f"/benchmarks/{bm}/submissions", {"kind": "auto"}, files=files)
    assert refused.status_code == 403
    assert "the owner removed you from this benchmark" in refused.text
    started = site.browser.post(f"/benchmarks/{bm}/evaluate", {"model_id": "mdl_builtin_echo"})
    assert started.status_code == 403
    assert "the owner removed you from this benchmark" in started.text
    assert site.world.do(owner, launch.list_runs, bm) == []


def test_a_removed_participant_is_offered_no_form_that_would_be_refused(site: Site) -> None:
    """The overview offered them the join form and the Evaluate tab its run and submission
    forms, each refused once sent."""
    bm, owner = site.benchmark, Principal.web(site.ana)
    site.world.do(Principal.web(site.bob), members.join_benchmark, bm, True)
    site.world.do(owner, members.set_participant_status, bm, site.bob, "removed")
    for path in (f"/benchmarks/{bm}", f"/benchmarks/{bm}/evaluate?model_id=mdl_builtin_echo"):
        page = site.browser.page(path)
        note = page.select_one("main [role=status]")
        assert note is not None and "the owner removed you" in note.get_text()
        actions = [form.get("action", "") for form in page.select("main form")]
        assert not any(a.endswith(("/join", "/evaluate", "/submissions")) for a in actions)
    site.world.do(owner, members.set_participant_status, bm, site.bob, "active")
    page = site.browser.page(f"/benchmarks/{bm}/evaluate?model_id=mdl_builtin_echo")
    assert page.select_one("form[action$='/evaluate'][method=post]") is not None


@pytest.mark.parametrize("typed", ["²", "abc", "1.0", "9" * 5000])
def test_a_phase_that_is_not_a_number_is_refused_naming_it(site: Site, typed: str) -> None:
    """A "²" passed isdigit() and failed int() (a 500); other text went to the default phase."""
    files = {"submission": ("f.zip", results(ANSWERS), "application/zip")}
    sent = site.browser.post(
        f"/benchmarks/{site.benchmark}/submissions", {"kind": "auto", "phase": typed}, files=files
    )
    assert sent.status_code == 422, sent.text[:2000]
    assert "Phase: must be a phase number" in sent.text
    assert site.world.do(Principal.web(site.ana), launch.list_runs, site.benchmark) == []
