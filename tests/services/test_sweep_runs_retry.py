"""Retrying a run's errors: refused while an earlier retry of it is under way, and as a
conflict (not a missing run) once its model was removed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict
from benchgen.db.tables import Model
from benchgen.services.runs import launch, retries
from benchgen.services.runs.launch import RunView
from benchgen.services.runtime import Runtime
from tests.services import test_runs
from tests.services.test_runs import BIG_MCQ, priced_model, work_all
from tests.services.test_subsets_retry import failing_stub
from tests.support import OPERATOR, World, at_once

open_loopback = test_runs.open_loopback  # a fixture shared with the runs tests


@pytest.mark.both_backends
@pytest.mark.usefixtures("quick_retries")
def test_a_second_retry_waits_for_the_first(world: World, open_loopback: Runtime) -> None:
    with _errored_run(world, open_loopback) as (web, _, original):
        outcomes = at_once([lambda: world.do(web, retries.retry_errored, original)] * 2)
        started = [o for o in outcomes if isinstance(o, RunView)]
        refused = [o for o in outcomes if isinstance(o, Conflict)]
        assert len(started) == 1 and len(refused) == 1, outcomes
        assert refused[0].details == {"id": started[0].id}
        assert "already being retried" in refused[0].message
        # Only one retry's estimate was reserved.
        assert world.do(web, launch.get_run, started[0].id).estimated_cost == 4
        work_all(open_loopback)  # still failing: the retry ends with the same errors
    again = world.do(web, retries.retry_errored, original)  # the first has finished
    assert again.retry_of == original


@pytest.mark.usefixtures("quick_retries")
def test_a_retry_after_its_model_was_removed_is_a_conflict(
    world: World, open_loopback: Runtime
) -> None:
    with _errored_run(world, open_loopback) as (web, model, original):

        def remove(ctx: Context) -> None:
            row = ctx.session.get(Model, model)
            assert row is not None
            row.deleted_at = ctx.now()

        world.ctx_call(OPERATOR, remove)
        with pytest.raises(Conflict) as refused:  # not 404: the run is there, its model is not
            world.do(web, retries.retry_errored, original)
    assert refused.value.details == {"model_id": model}
    assert "removed" in refused.value.message


@contextmanager
def _errored_run(world: World, runtime: Runtime) -> Iterator[tuple[Principal, str, str]]:
    """Ana's finished run with two errored questions, while its stub still fails them: her
    principal, the model and the run."""
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    web = Principal.web(ana)
    with failing_stub() as stub:
        model = priced_model(world, stub, per_question=2)
        original = world.do(web, launch.start_run, bm, model).id
        work_all(runtime)
        yield web, model, original
