"""A run whose model is deleted while it waits in the queue runs the model as it was when the run
started (models are only soft-deleted), and ends as any run does: never stuck, never refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchgen.core.context import Principal
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import StubOpenAI
from tests.support import QA, World


@pytest.fixture
def stub(runtime: Runtime) -> Iterator[StubOpenAI]:
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    with StubOpenAI() as server:
        yield server


def test_a_run_whose_model_is_deleted_while_queued_runs_to_its_end(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    web = Principal.web(ana)
    spec = {
        "name": "Mine",
        "kind": "openai_compat",
        "endpoint_model": "m",
        "base_url": stub.base_url,
    }
    model = world.do(web, models.create_model, spec).id
    benchmark = world.benchmark(ana, QA)
    run = world.do(web, launch.start_run, benchmark, model)
    world.do(web, models.delete_model, model)
    while Worker(runtime).run_once():
        pass
    done = world.do(web, launch.get_run, run.id)
    assert (done.status, done.error, done.done_count, done.model_name) == (
        "completed",
        "",
        2,
        "Mine",
    )
