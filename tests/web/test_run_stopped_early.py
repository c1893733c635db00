"""A run stopped before any answer came back: its page says it has no score (not "None"), and
there is nothing to rescore, so rescoring is neither offered nor done."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict
from benchgen.jobs.handlers import WORKER
from benchgen.services import audit, queue
from benchgen.services.runs import execution, launch, rescoring
from benchgen.services.runtime import Runtime, transaction
from tests.support import OPERATOR, QA, World
from tests.web.support import WebUser


@pytest.fixture
def owner(world: World) -> str:
    return world.user("owner@example.com", credits_=100)


@pytest.fixture
def owner_web(runtime: Runtime, owner: str) -> Iterator[WebUser]:
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, "owner@example.com")


@pytest.fixture
def stopped(world: World, runtime: Runtime, owner: str) -> str:
    """A run a worker began, then closed as cancelled before any answer was stored."""
    benchmark = world.benchmark(owner, QA)
    run = world.do(Principal.web(owner), launch.start_run, benchmark, "mdl_builtin_echo")
    with transaction(runtime, WORKER) as ctx:
        queue.claim(ctx, "w", timedelta(seconds=60))
        execution.begin_run(ctx, run.id)
    with transaction(runtime, WORKER) as ctx:
        execution.finish_run(ctx, run.id, cancelled=True)
    return run.id


def test_the_page_says_no_score_rather_than_none(
    world: World, owner: str, owner_web: WebUser, stopped: str
) -> None:
    run = world.do(Principal.web(owner), launch.get_run, stopped)
    assert run.status == "cancelled" and run.scores == {"accuracy": None}
    page = owner_web.page(f"/runs/{stopped}")
    scores = page.find("section", attrs={"aria-labelledby": "scores-title"})
    assert scores is not None
    text = " ".join(scores.text.split())
    assert "No score yet." in text and "None" not in text
    assert page.find("form", action=f"/runs/{stopped}/rescore#rescore") is None


def test_rescoring_it_is_refused_and_stores_nothing(world: World, owner: str, stopped: str) -> None:
    with pytest.raises(Conflict, match="nothing to rescore"):
        world.do(Principal.web(owner), rescoring.rescore_run, stopped, None, True)
    with pytest.raises(Conflict):
        world.do(Principal.web(owner), rescoring.rescore_run, stopped, {"method": "includes"})
    assert not world.do(Principal.web(owner), rescoring.can_rescore, stopped)
    run = world.do(Principal.web(owner), launch.get_run, stopped)
    assert run.scoring["method"] == "exact"
    events = world.do(OPERATOR, audit.list_events, stopped)
    assert audit.AuditAction.RUN_RESCORE not in [event.action for event in events]
