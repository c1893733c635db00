"""Rescoring from a run's page: offered on finished runs to those the service lets rescore, a
dry run that stores nothing, then Apply of exactly the settings it showed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.jobs.handlers import WORKER
from benchgen.jobs.worker import Worker
from benchgen.services import audit, queue
from benchgen.services.benchmarks import lifecycle, scoring
from benchgen.services.runs import execution, launch
from benchgen.services.runtime import Runtime, transaction
from tests.support import OPERATOR, World
from tests.web.support import WebUser

RANDOM = "mdl_builtin_random"
# The random baseline answers a word of a one-word prompt, so it answers each prompt itself:
# exact match finds "4.0" wrong for 4, numeric scoring finds it right and "cat" no answer.
NUMBERS = {
    "title": "Numbers",
    "format": "qa",
    "questions": [
        {"prompt": "4.0", "answer": "4"},
        {"prompt": "7", "answer": "7"},
        {"prompt": "cat", "answer": "dog"},
    ],
}
NUMERIC = {"method": "numeric"}
DRY_RUN = "Rescore with the benchmark's current scoring"


@pytest.fixture
def owner(world: World) -> str:
    return world.user("owner@example.com", credits_=100)


@pytest.fixture
def benchmark(world: World, owner: str) -> str:
    return world.benchmark(owner, NUMBERS)


def browser(runtime: Runtime, email: str) -> Iterator[WebUser]:
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, email)


@pytest.fixture
def owner_web(runtime: Runtime, owner: str) -> Iterator[WebUser]:
    yield from browser(runtime, "owner@example.com")


def finish(world: World, runtime: Runtime, user_id: str, benchmark_id: str) -> str:
    run = world.do(Principal.web(user_id), launch.start_run, benchmark_id, RANDOM)
    while Worker(runtime).run_once():
        pass
    return run.id


@pytest.fixture
def owner_run(world: World, runtime: Runtime, owner: str, benchmark: str) -> str:
    """A finished run scored by exact match (1 of 3 right); the benchmark then moves to
    numeric scoring, under which 2 of 3 are right."""
    run_id = finish(world, runtime, owner, benchmark)
    world.do(Principal.web(owner), scoring.set_scoring, benchmark, NUMERIC)
    return run_id


def rescore_events(world: World, run_id: str) -> list[audit.AuditEvent]:
    events = world.do(OPERATOR, audit.list_events, run_id)
    return [event for event in events if event.action == audit.AuditAction.RUN_RESCORE]


def test_the_owner_is_offered_a_rescore_on_a_finished_run_not_on_a_running_one(
    world: World, runtime: Runtime, owner: str, benchmark: str, owner_web: WebUser
) -> None:
    done = finish(world, runtime, owner, benchmark)
    page = owner_web.page(f"/runs/{done}")
    form = page.find("form", action=f"/runs/{done}/rescore#rescore")
    assert form is not None and DRY_RUN in form.text
    assert form.find("input", attrs={"name": "csrf_token"}) is not None
    running = world.do(Principal.web(owner), launch.start_run, benchmark, RANDOM)
    with transaction(runtime, WORKER) as ctx:
        queue.claim(ctx, "w", timedelta(seconds=60))
        execution.begin_run(ctx, running.id)
    page = owner_web.page(f"/runs/{running.id}")
    assert page.select_one(".status-running") is not None
    assert DRY_RUN not in page.text
    assert page.find("form", action=f"/runs/{running.id}/rescore#rescore") is None
    refused = owner_web.post(f"/runs/{running.id}/rescore")
    assert refused.status_code == 409 and "Only finished runs can be rescored" in refused.text


def test_a_dry_run_shows_the_change_and_stores_nothing(
    world: World, owner: str, owner_web: WebUser, owner_run: str
) -> None:
    response = owner_web.post(f"/runs/{owner_run}/rescore")
    assert response.status_code == 200
    preview = BeautifulSoup(response.text, "html.parser").select_one("#rescore")
    assert preview is not None
    text = " ".join(preview.text.split())
    assert "numeric" in text and "2 verdict(s) would change" in text
    assert "accuracy 33.3% → 66.7%" in text
    assert "Question 1: wrong → correct" in text and "Question 3: wrong → no answer" in text
    run = world.do(Principal.web(owner), launch.get_run, owner_run)
    assert run.summary["accuracy"] == pytest.approx(1 / 3) and run.scoring["method"] == "exact"
    assert rescore_events(world, owner_run) == []


def test_apply_stores_exactly_what_the_dry_run_showed(
    world: World, owner: str, benchmark: str, owner_web: WebUser, owner_run: str
) -> None:
    dry = BeautifulSoup(owner_web.post(f"/runs/{owner_run}/rescore").text, "html.parser")
    apply = dry.find("form", action=f"/runs/{owner_run}/rescore/apply")
    assert apply is not None
    shown = str(apply.find("input", attrs={"name": "scoring"})["value"])  # type: ignore[index]
    # Changed after the dry run: Apply still stores what was shown.
    world.do(Principal.web(owner), scoring.set_scoring, benchmark, {"method": "exact"})
    response = owner_web.post(f"/runs/{owner_run}/rescore/apply", {"scoring": shown})
    assert response.status_code == 303 and response.headers["location"] == f"/runs/{owner_run}"
    run = world.do(Principal.web(owner), launch.get_run, owner_run)
    assert run.summary["accuracy"] == pytest.approx(2 / 3) and run.scoring["method"] == "numeric"
    assert [event.details["changed"] for event in rescore_events(world, owner_run)] == [2]
    page = owner_web.get(f"/runs/{owner_run}").text
    assert "Rescored: 2 verdict(s) changed; accuracy 33.3% → 66.7%." in page
    lost = owner_web.post(f"/runs/{owner_run}/rescore/apply", {"scoring": "<b>not json"})
    assert lost.status_code == 422 and "run the dry run again" in lost.text
    assert "<b>not json" not in lost.text


def test_an_outsider_gets_the_services_refusal(
    world: World, runtime: Runtime, owner: str, benchmark: str, owner_run: str
) -> None:
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    outsider = world.user("outsider@example.com", credits_=100)
    theirs = finish(world, runtime, outsider, benchmark)
    for web in browser(runtime, "outsider@example.com"):
        # Their own run: they may see it but not rescore it with the benchmark's settings.
        assert DRY_RUN not in web.get(f"/runs/{theirs}").text
        for path in ("rescore", "rescore/apply"):
            refused = web.post(f"/runs/{theirs}/{path}", {"scoring": '{"method": "numeric"}'})
            assert refused.status_code == 403
            assert "rescore a run with other scoring settings" in refused.text
        # The owner's run on the same benchmark: not theirs to see at all.
        assert web.post(f"/runs/{owner_run}/rescore").status_code == 404
    assert rescore_events(world, theirs) == rescore_events(world, owner_run) == []


def test_rescore_forms_without_the_csrf_token_are_refused(
    world: World, owner: str, owner_web: WebUser, owner_run: str
) -> None:
    for path, data in (("rescore", {}), ("rescore/apply", {"scoring": '{"method": "numeric"}'})):
        refused = owner_web.client.post(f"/runs/{owner_run}/{path}", data=data)
        assert refused.status_code == 403 and "sent from another site" in refused.text
    run = world.do(Principal.web(owner), launch.get_run, owner_run)
    assert run.scoring["method"] == "exact" and rescore_events(world, owner_run) == []


def test_the_scoring_settings_page_says_where_past_runs_are_rescored(
    benchmark: str, owner_web: WebUser
) -> None:
    page = owner_web.page(f"/benchmarks/{benchmark}/settings/scoring")
    assert page.find("a", href=f"/benchmarks/{benchmark}/runs") is not None
    assert DRY_RUN in page.text
