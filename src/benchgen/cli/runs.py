"""`benchgen run`: launch a run and work on it here, following it with a progress bar."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from benchgen.cli.common import (
    As,
    as_user,
    by_option,
    cli_principal,
    console,
    interrupted_status,
    open_runtime,
    say_error,
    sigterm_as_interrupt,
)
from benchgen.cli.helptext import App
from benchgen.core.errors import Conflict
from benchgen.core.statuses import RUN_ACTIVE, RunStatus
from benchgen.core.text import plural
from benchgen.jobs.worker import start_workers, stop_workers
from benchgen.services.runs import launch, retries
from benchgen.services.runtime import Runtime, transaction

if TYPE_CHECKING:
    import threading

    from rich.progress import Progress

    from benchgen.core.context import Principal
    from benchgen.jobs.worker import Runner

POLL_S = 0.25
# The run's fields as its options name them; "subset.n" by whichever of --first and --random
# set it (`run` adds it).
RUN_OPTIONS = {
    "benchmark_id": "--benchmark",
    "model_id": "--model",
    "max_credits": "--max-credits",
    "subset.tags": "--tag",
    "subset.seed": "--subset-seed",
    "settings.chain_of_thought": "--step-by-step",
    **{
        f"settings.{field}": f"--{field.replace('_', '-')}"
        for field in (
            "samples",
            "temperature",
            "top_p",
            "max_tokens",
            "stop",
            "system_prompt",
            "few_shot",
            "seed",
        )
    },
}
commands = App()


@commands.command()
def run(
    command: typer.Context,
    as_email: As,
    benchmark: Annotated[
        str, typer.Option(metavar="ID", help="Benchmark id (bm_…); required unless --retry.")
    ] = "",
    model: Annotated[
        str,
        typer.Option(
            metavar="ID",
            help="Model id (mdl_…; see `benchgen models list`); required unless --retry.",
        ),
    ] = "",
    wait: Annotated[bool, typer.Option(help="Work on it here and show progress.")] = True,
    retry: Annotated[
        str,
        typer.Option(
            metavar="RUN_ID",
            help="Instead: ask a finished run's errored questions again (run_…).",
        ),
    ] = "",
    first: Annotated[
        int | None, typer.Option(metavar="N", help="Only the first N questions.")
    ] = None,
    draw: Annotated[
        int | None,
        typer.Option(
            "--random", metavar="N", help="Only N questions drawn at random (see --subset-seed)."
        ),
    ] = None,
    subset_seed: Annotated[int, typer.Option(help="Which random draw --random takes.")] = 0,
    tag: Annotated[
        list[str] | None,
        typer.Option(help="Only questions holding this tag (repeatable: any of them)."),
    ] = None,
    samples: Annotated[int, typer.Option(help="Answers asked per question (1-20).")] = 1,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = None,
    top_p: Annotated[
        float | None, typer.Option(help="Nucleus sampling (above 0, up to 1).")
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Longest answer, in tokens.")] = None,
    stop: Annotated[
        list[str] | None, typer.Option(help="A stop sequence (repeatable, up to 4).")
    ] = None,
    system_prompt: Annotated[str, typer.Option(help="A system prompt for every question.")] = "",
    few_shot: Annotated[
        int, typer.Option(help="Worked examples from the benchmark before each question (0-10).")
    ] = 0,
    step_by_step: Annotated[
        bool, typer.Option(help="Ask the model to reason step by step before answering.")
    ] = False,
    seed: Annotated[int | None, typer.Option(help="Sampling seed.")] = None,
    cache: Annotated[bool, typer.Option(help="Reuse your cached replies.")] = False,
    max_credits: Annotated[int | None, typer.Option(help="Refuse to start above this.")] = None,
) -> None:
    """Launch a run (credits are reserved up front) and follow it with a progress bar.

    Give --benchmark and --model for a new run, or --retry with a finished run's id to ask its
    errored questions again. The options are those of docs/run-settings.md; one the model's
    provider cannot take is refused before anything starts. Followed, a run that does not
    complete (it failed, or was cancelled) exits with status 1.

    The run is worked on in this process: Ctrl-C or SIGTERM (`kill`, `docker stop`, a CI
    job's timeout) cancels it, keeping the answers it has (and their cost), says where it
    stands and exits with status 130 (Ctrl-C) or 143 (SIGTERM). With --no-wait the run is
    queued for `benchgen serve` or `benchgen worker` and the command returns at once.

    \b
    Examples:
      $ benchgen run --as ana@example.com --benchmark bm_… --model mdl_builtin_echo
      $ benchgen run --as ana@example.com --benchmark bm_… --model mdl_… --first 20 --samples 3
      $ benchgen run --as ana@example.com --retry run_…
    """
    settings = {
        "samples": samples,
        "temperature": temperature,
        "top_p": top_p,
        "max_tokens": max_tokens,
        "stop": stop or [],
        "system_prompt": system_prompt,
        "few_shot": few_shot,
        "chain_of_thought": "step_by_step" if step_by_step else None,
        "seed": seed,
    }
    options = {
        "settings": settings,
        "subset": _subset(first, draw, subset_seed, tag),
        "cache": cache,
        "max_credits": max_credits,
    }
    if retry:
        _require_retry_alone(command)
    with open_runtime() as runtime:
        named = {**RUN_OPTIONS, "subset.n": "--random" if draw is not None else "--first"}
        with as_user(runtime, as_email) as ctx, by_option(named):
            if retry:
                started = retries.retry_errored(ctx, retry)
            elif benchmark and model:
                started = launch.start_run(ctx, benchmark, model, None, options)
            else:
                raise typer.BadParameter("give --benchmark and --model, or --retry RUN_ID")
        queued = f"Run {started.id} queued, up to {started.estimated_cost} credits."
        if not wait:
            console.print(queued)
            return
        current = follow_run(runtime, as_email, started.id, started.question_count, queued)
    say_outcome(current)
    if current.status == RunStatus.FAILED:
        say_error(current.error)
    # Cancelled elsewhere (the web app, another command) it exited 0, as if it had completed:
    # a script went on with a part of the benchmark's answers.
    if current.status != RunStatus.COMPLETED:
        raise typer.Exit(1)


def say_outcome(current: launch.RunView) -> None:
    """The run's status line: its scores, errors and what it cost, and how much of it was
    done when it ended early (a cancelled run's accuracy read as the whole benchmark's)."""
    # "errors" alone read as a score where a custom benchmark has an `errors` column.
    totals = f"{plural(current.error_count, 'question')} failed, {current.cost} credits"
    done, total = current.done_count, current.question_count
    part = f" ({done}/{total} answered)" if done < total else ""
    console.print(f"{current.status}{part}: {_scores(current)}, {totals}")


def _require_retry_alone(command: typer.Context) -> None:
    """A retry asks again with the run's own settings: any run option beside it would be
    silently dropped (a --max-credits cap among them)."""
    given = [
        f"--{name.replace('_', '-')}"
        for name in command.params
        if name not in ("as_email", "retry", "wait") and _typed(command, name)
    ]
    if given:
        raise typer.BadParameter(
            f"a retry asks the run's errored questions with its own settings; leave out "
            f"{', '.join(given)}",
            param_hint="--retry",
        )


def _typed(command: typer.Context, name: str) -> bool:
    """Whether the option `name` was given on the command line (not left at its default)."""
    source = command.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _subset(
    first: int | None, draw: int | None, seed: int, tags: list[str] | None
) -> dict[str, object] | None:
    """The one subset the options ask for (None: every question)."""
    chosen: list[dict[str, object]] = []
    # `is not None`: 0 is a choice the service refuses, not "every question" (a full run).
    if first is not None:
        chosen.append({"kind": "first", "n": first})
    if draw is not None:
        chosen.append({"kind": "random", "n": draw, "seed": seed})
    if tags:
        chosen.append({"kind": "tags", "tags": tags})
    if len(chosen) > 1:
        raise typer.BadParameter("give one of --first, --random and --tag")
    return chosen[0] if chosen else None


def _scores(current: launch.RunView) -> str:
    """The run's accuracy, or a custom benchmark's scores: its bundle's leaderboard columns."""
    accuracy = current.summary.get("accuracy")
    if accuracy is None and current.scores:
        return ", ".join(
            f"{key} {value:g}" if isinstance(value, float | int) else f"{key} {value}"
            for key, value in current.scores.items()
        )
    return "accuracy " + ("—" if accuracy is None else f"{accuracy:.1%}")


def follow_run(
    runtime: Runtime, email: str, run_id: str, total: int, heading: str = ""
) -> launch.RunView:
    """Work on a queued run in this process, with a progress bar under `heading`, until it ends.

    Ctrl-C, or SIGTERM, cancels the run: the worker stops between answers and the run keeps
    (and is charged for) the answers it has; the command then says so and exits 130, or 143
    for SIGTERM (which ended the process at once, mid-answer, the run left "running" with no
    worker). A second one leaves at once, exiting 130 or 143 as well, and the run, asked to
    stop, ends when a worker next takes it."""
    # Read-only polls as a principal resolved once: the worker thread shares this process (and
    # its interpreter lock) with the progress bar, which should cost it next to nothing. For the
    # same reason nothing is printed (nor Rich loaded) until the worker has had a poll's time to
    # send its first model requests.
    principal = cli_principal(runtime, email)
    with sigterm_as_interrupt():
        workers = start_workers(runtime, 1)
        try:
            current = _watch(runtime, principal, run_id, total, heading)
        except KeyboardInterrupt as stop:
            status = interrupted_status(stop)
            try:
                _cancel(runtime, principal, run_id, status)
                stop_workers(workers)
                _say_cancelled(runtime, principal, run_id, status)
            except KeyboardInterrupt as again:
                _leave_at_once(workers, run_id, interrupted_status(again))
        except BaseException:
            stop_workers(workers)
            raise
        stop_workers(workers)
    return current


def _watch(
    runtime: Runtime, principal: Principal, run_id: str, total: int, heading: str
) -> launch.RunView:
    time.sleep(POLL_S)
    if heading:
        console.print(heading)
    with progress_bar() as progress:
        task = progress.add_task("Processing", total=total)
        while True:
            with transaction(runtime, principal, write=False) as ctx:
                current = launch.get_run(ctx, run_id)
            progress.update(task, completed=current.done_count)
            if current.status not in RUN_ACTIVE:
                return current
            time.sleep(POLL_S)


def _cancel(runtime: Runtime, principal: Principal, run_id: str, status: int) -> None:
    why = "Terminated: cancelling" if status == 143 else "Cancelling"
    console.print(f"{why} run {run_id} (Ctrl-C again to leave now)…")
    # It may have ended in the meantime: then there is nothing to cancel.
    with contextlib.suppress(Conflict), transaction(runtime, principal) as ctx:
        launch.cancel_run(ctx, run_id)


def _leave_at_once(
    workers: list[tuple[Runner, threading.Thread]], run_id: str, status: int
) -> NoReturn:
    """A second Ctrl-C or SIGTERM while cancelling: the job goes back to the queue unwaited
    for, and the command exits `status`. It ended in Click's "Aborted!" and exit status 1,
    which a script read as the run's failure, not as the interrupt it was."""
    stop_workers(workers, timeout_s=0)
    console.print(
        f"Left without waiting: run {run_id} may still be finishing its cancel, which a "
        "worker completes when it next takes the run (`benchgen worker`)."
    )
    raise typer.Exit(status)


def _say_cancelled(runtime: Runtime, principal: Principal, run_id: str, status: int) -> NoReturn:
    """After Ctrl-C or SIGTERM: where the run stands, then exit `status` (the shell's code for
    that interrupt)."""
    with transaction(runtime, principal, write=False) as ctx:
        current = launch.get_run(ctx, run_id)
    if current.status in RUN_ACTIVE:
        console.print(f"Run {run_id} stops when a worker next takes it (`benchgen worker`).")
    else:
        say_outcome(current)
    raise typer.Exit(status)


def progress_bar() -> Progress:
    """The bar that follows a run: questions (or tasks) done, and the time it has taken."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    return Progress(*columns, TimeElapsedColumn(), console=console.rich)
