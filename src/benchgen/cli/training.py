"""`benchgen training`: plan, launch, follow and cancel training jobs as a user, and see the
compute on offer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.text import Text

from benchgen.cli.common import (
    As,
    as_user,
    by_option,
    console,
    open_runtime,
    print_table,
    say_error,
    wrapping_table,
)
from benchgen.cli.doors import reported
from benchgen.cli.helptext import App
from benchgen.cli.runs import progress_bar
from benchgen.core.context import Context
from benchgen.core.statuses import TRAINING_FINAL, TrainingStatus
from benchgen.services.training import compute, jobs, plans
from benchgen.services.training.jobs import TrainingJobView

app = App(
    help="Training: fine-tune a local model on one of your datasets (LoRA or full), then "
    "evaluate the Trained model like any other.",
    no_args_is_help=True,
)
Base = Annotated[
    str,
    typer.Option(
        "--base",
        help="The base model's id (mdl_…): a local_hf or local_gguf model in "
        "`benchgen models list` (the operator adds them with `benchgen admin add-local-model`).",
    ),
]
DatasetId = Annotated[str, typer.Option("--dataset", help="One of your datasets (ds_…).")]
Sets = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="NAME=VALUE",
        help="A hyperparameter: epochs, learning_rate, batch_size, max_seq_length, lora_rank, "
        "lora_alpha, lora_dropout, target_modules (comma-separated). Repeat for more.",
    ),
]
JobType = Annotated[str, typer.Option("--type", help="lora (an adapter) or sft (every weight).")]
Gpu = Annotated[
    str | None,
    typer.Option("--gpu", help="Train on GPUs of this type (see `benchgen training compute`)."),
]
Gpus = Annotated[
    int | None, typer.Option("--gpus", help="How many GPUs of the --gpu type (default 1).")
]
Name = Annotated[str | None, typer.Option(help="The Trained model's name.")]
_FLOATS = {"learning_rate", "lora_dropout"}
HYPERPARAMETERS = tuple(plans.HyperparametersIn.model_fields)
# The service's fields as the options name them.
TRAINING_OPTIONS = {
    "base_model_id": "--base",
    "dataset_id": "--dataset",
    "job_type": "--type",
    "compute.gpu_type": "--gpu",
    "compute.gpus": "--gpus",
    "name": "--name",
    **{f"hyperparameters.{name}": f"--set {name}" for name in HYPERPARAMETERS},
}


@contextmanager
def _planning(as_email: str) -> Iterator[Context]:
    """`as_email`'s context for planning or starting a job: a refusal names the option typed
    (`--base`, `--set epochs`), not the service's field."""
    with (
        open_runtime() as runtime,
        reported(),
        as_user(runtime, as_email) as ctx,
        by_option(TRAINING_OPTIONS),
    ):
        yield ctx


def _request(
    base: str,
    dataset: str,
    sets: list[str] | None,
    job_type: str,
    gpu: str | None,
    gpus: int | None,
    name: str | None,
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "job_type": job_type,
        "base_model_id": base,
        "dataset_id": dataset,
        "hyperparameters": dict(_hyperparameter(item) for item in sets or []),
    }
    compute = {"gpu_type": gpu or None, "gpus": gpus}
    # Only what was given: the service names a count without a type, or a bad count.
    request["compute"] = {key: value for key, value in compute.items() if value is not None}
    if name:
        request["name"] = name
    return request


def _hyperparameter(item: str) -> tuple[str, Any]:
    name, sep, value = (part.strip() for part in item.partition("="))
    if not sep or not name or not value:
        say_error(f"--set {item!r}: give NAME=VALUE.")
        raise typer.Exit(2)
    if name not in HYPERPARAMETERS:
        say_error(
            f"--set {name}: no such hyperparameter; give one of {', '.join(HYPERPARAMETERS)}."
        )
        raise typer.Exit(2)
    if name == "target_modules":
        return name, [part.strip() for part in value.split(",") if part.strip()]
    try:
        return name, float(value) if name in _FLOATS else int(value)
    except ValueError:
        wanted = "a number" if name in _FLOATS else "a whole number (an integer)"
        say_error(f"--set {name}: {value!r} is not {wanted}.")
        raise typer.Exit(2) from None


@app.command("plan")
def plan(
    as_email: As,
    base: Base,
    dataset: DatasetId,
    sets: Sets = None,
    job_type: JobType = "lora",
    gpu: Gpu = None,
    gpus: Gpus = None,
    name: Name = None,
) -> None:
    """Show the full plan of a training job (steps, memory, compute, duration, credits)
    without launching it.

    \b
    Examples:
      $ benchgen training plan --base mdl_… --dataset ds_… --set epochs=3 --as ana@example.com
    """
    request = _request(base, dataset, sets, job_type, gpu, gpus, name)
    with _planning(as_email) as ctx:
        shown = plans.plan_training(ctx, request)
    console.print(Text(shown.text()))


@app.command("start")
def start(
    as_email: As,
    base: Base,
    dataset: DatasetId,
    sets: Sets = None,
    job_type: JobType = "lora",
    gpu: Gpu = None,
    gpus: Gpus = None,
    name: Name = None,
    wait: Annotated[
        bool,
        typer.Option(
            help="Follow the job until it ends; exit with status 1 unless it completed. Ctrl-C "
            "stops only the following: the job goes on."
        ),
    ] = False,
) -> None:
    """Launch a training job; its estimated credits are reserved. A worker trains it
    (`benchgen serve` or `benchgen worker`).

    \b
    Examples:
      $ benchgen training start --base mdl_… --dataset ds_… --set epochs=3 --wait \\
          --as ana@example.com
    """
    request = _request(base, dataset, sets, job_type, gpu, gpus, name)
    with _planning(as_email) as ctx:
        job = jobs.start_training(ctx, request)
    console.print(Text.assemble("Queued training job ", (job.id, "bold"), f": {job.name}"))
    if job.waiting_for:
        console.print(Text(job.waiting_for))
    if wait:
        _follow(as_email, job.id, job.total_steps)


def _follow(as_email: str, training_id: str, total: int) -> None:
    """Show the job's steps and loss until it ends. A failed or cancelled job exits 1 (it
    exited 0, and a script went on to evaluate a model never made). Ctrl-C leaves the job to
    its worker, which is not this process, and says so (it ended silently)."""
    try:
        with open_runtime() as runtime, progress_bar() as progress:
            task = progress.add_task("training", total=total)
            while True:
                with as_user(runtime, as_email) as ctx:
                    job = jobs.get_training_job(ctx, training_id)
                loss = "" if job.last_loss is None else f"loss {job.last_loss:.4f}"
                progress.update(task, completed=job.steps_done, description=f"training {loss}")
                if job.status in TRAINING_FINAL:
                    break
                time.sleep(1)
    except KeyboardInterrupt:
        console.print(
            f"Stopped following training job {training_id}; it goes on "
            f"(`benchgen training cancel {training_id}` stops it)."
        )
        raise typer.Exit(130) from None
    _print_end(job)
    if job.status != TrainingStatus.COMPLETED:
        raise typer.Exit(1)


def _print_end(job: TrainingJobView) -> None:
    console.print(
        f"{job.status}: {job.steps_done}/{job.total_steps} steps, {job.credits_charged} credits"
    )
    if job.trained_model_id:
        console.print(Text.assemble("Trained model ", (job.trained_model_id, "bold")))
    if job.error:
        console.print(Text(job.error, style="red"))


@app.command("list")
def list_jobs(as_email: As) -> None:
    """Your training jobs, newest first (the 200 newest).

    \b
    Examples:
      $ benchgen training list --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        rows = jobs.list_training_jobs(ctx, 200)
    table = wrapping_table("name", "status", "steps", "loss", "credits")
    table.add_column("id", no_wrap=True, min_width=23)
    for row in rows:
        loss = "" if row.last_loss is None else f"{row.last_loss:.4f}"
        steps = f"{row.steps_done}/{row.total_steps}"
        table.add_row(row.name, row.status, steps, loss, str(row.credits_charged), row.id)
    print_table(table, "No training jobs yet: `benchgen training plan` shows what one would do.")


@app.command("show")
def show(
    training_id: Annotated[str, typer.Argument(help="The job's id (tr_…).")], as_email: As
) -> None:
    """One job's status and its log (each step's loss, learning rate and throughput).

    \b
    Examples:
      $ benchgen training show tr_… --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        job = jobs.get_training_job(ctx, training_id)
        lines = _whole_log(ctx, training_id)
    for line in lines:
        console.print(Text(f"{line.at:%H:%M:%S} {line.line}"))
    if job.waiting_for:
        console.print(Text(job.waiting_for))
    _print_end(job)


def _whole_log(ctx: Context, training_id: str) -> list[jobs.TrainingLogLine]:
    """Every line of the job's log, a page at a time (a long job's end lies past the first)."""
    lines: list[jobs.TrainingLogLine] = []
    while True:
        after = lines[-1].id if lines else 0
        page = jobs.read_training_log(ctx, training_id, after, jobs.MAX_LOG_PAGE)
        lines.extend(page)
        if len(page) < jobs.MAX_LOG_PAGE:
            return lines


@app.command("cancel")
def cancel(
    training_id: Annotated[str, typer.Argument(help="The job's id (tr_…).")], as_email: As
) -> None:
    """Cancel a queued job (nothing charged) or stop a running one after its current step.

    \b
    Examples:
      $ benchgen training cancel tr_… --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        job = jobs.cancel_training_job(ctx, training_id)
    console.print(f"{job.id}: {job.status if job.status in TRAINING_FINAL else 'stopping'}")


@app.command("compute")
def show_compute(as_email: As) -> None:
    """The compute pools offered for training and what is free right now.

    \b
    Examples:
      $ benchgen training compute --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        pools = compute.compute_inventory(ctx)
    table = wrapping_table("pool", "total", "in use", "free", "waiting")
    for pool in pools:
        table.add_row(
            pool.pool, str(pool.total), str(pool.in_use), str(pool.free), str(pool.queued)
        )
    console.print(table)


commands = App()
commands.add_typer(app, name="training")
