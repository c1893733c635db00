"""Disabling an account stops what it had going: its runs and training jobs, not only its
sessions, tokens and agent turns."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.db.tables import AuditEvent, Run, TrainingJob
from benchgen.jobs.handlers import WORKER
from benchgen.services import models
from benchgen.services.accounts import _ledger, users
from benchgen.services.datasets import datasets
from benchgen.services.runs import execution, launch
from benchgen.services.training import execution as training_execution
from benchgen.services.training import jobs
from tests.support import MCQ, OPERATOR, World

MODEL = "mdl_builtin_first"
SMOL = {"name": "Smol", "kind": "local_gguf", "endpoint_model": "smollm2"}
ROWS = b'{"prompt":"a","completion":"b"}\n' * 8


def _status(world: World, table: type[Run] | type[TrainingJob], row_id: str) -> str:
    return str(world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(table, row_id).status))


@pytest.mark.both_backends
def test_disabling_stops_the_accounts_queued_and_running_runs(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    eve = world.user("eve@example.com", credits_=100)
    bm = world.benchmark(ana, MCQ)
    queued = world.do(Principal.web(ana), launch.start_run, bm, MODEL).id
    running = world.do(Principal.web(ana), launch.start_run, bm, MODEL).id
    others = world.do(Principal.web(ana), launch.start_run, bm, MODEL).id
    assert world.do(WORKER, execution.begin_run, running) is not None
    world.do(OPERATOR, users.set_active, eve, False)  # someone else's: ana's runs go on
    assert not world.do(WORKER, execution.is_cancel_requested, others)

    world.do(OPERATOR, users.set_active, ana, False)

    assert world.do(WORKER, execution.is_cancel_requested, running)  # stops between answers
    assert world.do(WORKER, execution.begin_run, queued) is None  # never starts
    assert _status(world, Run, queued) == "cancelled"
    world.do(WORKER, execution.finish_run, running, cancelled=True)
    assert _status(world, Run, running) == "cancelled"
    assert world.do(OPERATOR, _ledger.balance_of, ana) == 100


@pytest.mark.skipif(models.smollm2_path() is None, reason="the packaged SmolLM2 is not installed")
def test_disabling_stops_the_accounts_training_jobs(world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com", credits_=1000)
    web = Principal.web(ana)
    base = world.do(OPERATOR, models.create_platform_model, SMOL).id
    data = world.do(web, datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"}).id
    made = world.do(web, jobs.start_training, {"base_model_id": base, "dataset_id": data})

    world.do(OPERATOR, users.set_active, ana, False)

    assert world.do(WORKER, training_execution.begin_training, made.id, tmp_path) is None
    assert _status(world, TrainingJob, made.id) == "cancelled"
    assert world.do(OPERATOR, _ledger.balance_of, ana) == 1000


def test_enabling_again_starts_nothing_new(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, MCQ)
    run = world.do(Principal.web(ana), launch.start_run, bm, MODEL).id
    world.do(OPERATOR, users.set_active, ana, False)
    world.do(OPERATOR, users.set_active, ana, True)
    assert world.do(WORKER, execution.begin_run, run) is None
    assert _status(world, Run, run) == "cancelled"


def test_disabling_or_enabling_twice_changes_and_records_nothing_more(world: World) -> None:
    ana = world.user("ana@example.com")

    def recorded() -> int:
        count = select(func.count()).select_from(AuditEvent).where(AuditEvent.object_id == ana)
        return int(world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalar(count)))

    before = recorded()  # the account's creation
    world.do(OPERATOR, users.set_active, ana, True)  # active already
    assert recorded() == before
    world.do(OPERATOR, users.set_active, ana, False)
    again = world.do(OPERATOR, users.set_active, ana, False)
    assert recorded() == before + 1 and not again.is_active
