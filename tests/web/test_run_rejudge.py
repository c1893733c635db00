"""Judging again from a run's page: the button (with its CSRF token) only for those the service
lets re-judge, what it says, the answers waiting and then judged, and the service's refusals."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import judges, lifecycle, members
from benchgen.services.runs import launch, results
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import StubOpenAI
from tests.services import test_rejudging
from tests.services.test_rejudging import Judged, Script, judged_run
from tests.services.test_runs import work_all
from tests.support import World
from tests.web.support import WebUser

script = test_rejudging.script  # fixtures shared with the service tests
stub = test_rejudging.stub
BUTTON = "Judge the 3 answers again"


@pytest.fixture
def made(world: World, runtime: Runtime, stub: StubOpenAI) -> Judged:
    return judged_run(world, runtime, stub)


def browser(runtime: Runtime, email: str) -> Iterator[WebUser]:
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, email)


@pytest.fixture
def owner_web(runtime: Runtime, made: Judged) -> Iterator[WebUser]:
    yield from browser(runtime, "ana@example.com")


def _form(web: WebUser, run_id: str) -> object:
    return web.page(f"/runs/{run_id}").find("form", action=f"/runs/{run_id}/rejudge")


def test_the_owner_judges_the_failed_answers_again_from_the_page(
    world: World, runtime: Runtime, script: Script, made: Judged, owner_web: WebUser
) -> None:
    page = owner_web.page(f"/runs/{made.run}")
    form = page.find("form", action=f"/runs/{made.run}/rejudge")
    assert form is not None and BUTTON in form.text
    assert "the model is not asked again" in form.text
    assert form.find("input", attrs={"name": "csrf_token"}) is not None

    script.up = True
    response = owner_web.post(f"/runs/{made.run}/rejudge")
    assert response.status_code == 303 and response.headers["location"] == f"/runs/{made.run}"
    waiting = owner_web.page(f"/runs/{made.run}")
    text = " ".join(waiting.text.split())
    assert "3 answers went back to the AI judge" in text
    assert "3 answers waiting for the AI judge" in text
    assert waiting.find("form", action=f"/runs/{made.run}/rejudge") is None

    work_all(runtime)
    done = owner_web.page(f"/runs/{made.run}")
    assert done.find("form", action=f"/runs/{made.run}/rejudge") is None
    assert "waiting for the AI judge" not in done.text
    outcomes = [cell.text.strip() for cell in done.select("table.breakdown .outcome")]
    assert outcomes == ["correct", "correct", "wrong"]
    again = owner_web.post(f"/runs/{made.run}/rejudge")
    assert again.status_code == 409 and "nothing to judge again" in again.text


def test_no_button_for_who_may_not_and_the_refusal_says_why(
    world: World, runtime: Runtime, stub: StubOpenAI, made: Judged, owner_web: WebUser
) -> None:
    pia = world.user("pia@example.com", credits_=100)
    owner = Principal.web(made.ana)
    world.do(owner, lifecycle.publish_benchmark, made.benchmark)
    world.do(Principal.web(pia), members.join_benchmark, made.benchmark, True)
    args = ("openai_compat", "judge-1", stub.base_url, None)
    world.do(owner, judges.set_judge, made.benchmark, *args, True)
    theirs = world.do(Principal.web(pia), launch.start_run, made.benchmark, made.model).id
    work_all(runtime)
    world.do(owner, judges.set_judge, made.benchmark, *args, False)  # closed to others again
    for web in browser(runtime, "pia@example.com"):
        assert _form(web, theirs) is None
        refused = web.post(f"/runs/{theirs}/rejudge")
        assert refused.status_code == 403 and "not open to other users" in refused.text
        assert web.post(f"/runs/{made.run}/rejudge").status_code == 404  # not theirs to see
    outcomes = [row["outcome"] for row in world.do(owner, results.list_results, theirs)]
    assert outcomes == ["error"] * 3  # nothing was handed to the judge
    # The owner's team is offered it on the participant's run.
    assert _form(owner_web, theirs) is not None


def test_no_button_on_a_run_without_failed_judging(
    world: World, runtime: Runtime, made: Judged, owner_web: WebUser
) -> None:
    plain = world.benchmark(made.ana)
    run = world.do(Principal.web(made.ana), launch.start_run, plain, "mdl_builtin_echo").id
    work_all(runtime)
    assert _form(owner_web, run) is None
    refused = owner_web.post(f"/runs/{run}/rejudge")
    assert refused.status_code == 409 and "not scored by the AI judge" in refused.text


def test_the_button_needs_the_csrf_token(world: World, made: Judged, owner_web: WebUser) -> None:
    refused = owner_web.client.post(f"/runs/{made.run}/rejudge")
    assert refused.status_code == 403 and "sent from another site" in refused.text
    outcomes = [
        row["outcome"] for row in world.do(Principal.web(made.ana), results.list_results, made.run)
    ]
    assert outcomes == ["error"] * 3
