"""`benchgen rescore`, `models`, `leaderboard`, `judge`, `worker`: evaluation from the terminal."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Annotated, Any

import typer

from benchgen.cli.common import (
    As,
    as_user,
    by_option,
    cli_principal,
    console,
    interrupted_status,
    labelled,
    open_runtime,
    say_error,
    sigterm_as_interrupt,
    wrapping_table,
)
from benchgen.cli.helptext import App
from benchgen.core.config import MAX_WORKER_THREADS
from benchgen.core.context import Principal
from benchgen.core.text import plural
from benchgen.jobs.worker import Runner, Worker, start_workers, stop_workers
from benchgen.services import deployment, models, queue
from benchgen.services.benchmarks import judges
from benchgen.services.runs import launch, leaderboards, rejudging, rescoring
from benchgen.services.runtime import Runtime, transaction

WAIT_POLL_S = 0.25  # how often `judge again` looks whether the judge is done
models_app = App(help="The model catalogue.", no_args_is_help=True)
leaderboard_app = App(help="Put runs on a leaderboard or take them off.", no_args_is_help=True)
# The services' fields as `models add` and `judge set` name them.
ENDPOINT_OPTIONS = {
    "name": "--name",
    "kind": "--kind",
    "model": "--model",
    "endpoint_model": "--endpoint-model",
    "base_url": "--base-url",
    "api_key": "--api-key-env",
}


def rescore(
    run_id: Annotated[str, typer.Argument(help="Run id (run_…).")],
    as_email: As,
    apply: Annotated[bool, typer.Option(help="Store the new scores (default: dry run).")] = False,
    scoring: Annotated[
        str, typer.Option(help='Other settings as JSON, e.g. {"method": "f1"}.')
    ] = "",
) -> None:
    """Re-apply scoring to a run's saved answers without calling any model.

    \b
    Examples:
      $ benchgen rescore run_… --as ana@example.com
      $ benchgen rescore run_… --scoring '{"method": "f1"}' --apply --as ana@example.com
    """
    settings = _scoring_settings(scoring)
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        result = rescoring.rescore_run(ctx, run_id, settings, apply)
    before, after = result.before.get("accuracy"), result.after.get("accuracy")
    changed = plural(result.changed_count, "answer")
    console.print(
        f"Applied: {changed} changed; accuracy {before} → {after}"
        if apply
        else f"Dry run: {changed} would change; accuracy {before} → {after}"
    )
    for change in result.changes[:20]:
        console.print(
            f"  #{change['position']}: {change['before']['outcome']} → {change['after']['outcome']}"
        )


def _scoring_settings(text: str) -> dict[str, Any] | None:
    """`--scoring` as a JSON object, or None when not given."""
    if not text:
        return None
    try:
        settings = json.loads(text)
    except ValueError as exc:
        raise typer.BadParameter(f"not valid JSON ({exc})", param_hint="--scoring") from None
    if not isinstance(settings, dict):
        raise typer.BadParameter(
            'must be a JSON object, e.g. {"method": "f1"}', param_hint="--scoring"
        )
    return settings


@models_app.command("add")
def add_model(
    as_email: As,
    name: Annotated[str, typer.Option(help="A name for it in the catalogue.")],
    endpoint_model: Annotated[
        str, typer.Option(help="The model's name at the endpoint (e.g. qwen2.5-7b-instruct).")
    ],
    base_url: Annotated[
        str | None, typer.Option(help="An OpenAI-compatible endpoint, e.g. https://…/v1.")
    ] = None,
    kind: Annotated[str, typer.Option(help="openai_compat or anthropic.")] = "openai_compat",
    api_key_env: Annotated[
        str | None,
        typer.Option(help="The environment variable holding its API key (never typed here)."),
    ] = None,
) -> None:
    """Register your own model endpoint; its key is stored encrypted and never shown again.

    \b
    Examples:
      $ read -rs MY_KEY; export MY_KEY
      $ benchgen models add --name 'My vLLM' --endpoint-model qwen2.5-7b \\
          --base-url https://…/v1 --api-key-env MY_KEY --as ana@example.com
    """
    spec: dict[str, object] = {"name": name, "kind": kind, "endpoint_model": endpoint_model}
    if base_url:
        spec["base_url"] = base_url
    if api_key_env:
        spec["api_key"] = _key_in(api_key_env)
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx, by_option(ENDPOINT_OPTIONS):
        made = models.create_model(ctx, spec)
    console.print(f"Added model {made.name} ({made.id}).")


def _key_in(variable: str) -> str:
    """The API key in the environment variable `--api-key-env` names; a variable that is
    unset or empty is a usage error (exit 2) that says how to set it."""
    key = os.environ.get(variable)
    if not key:
        raise typer.BadParameter(
            f"{variable} is not set in this shell: `read -rs {variable}; export {variable}` "
            "takes the key without showing it or keeping it in the shell's history",
            param_hint="--api-key-env",
        )
    return key


@models_app.command("list")
def list_models(
    as_email: As,
    benchmark: Annotated[
        str | None, typer.Option(help="Only the models that can answer this benchmark (bm_…).")
    ] = None,
) -> None:
    """Platform models and your own, with prices; a model that answers only one format (a
    baseline) says which.

    \b
    Examples:
      $ benchgen models list --as ana@example.com
      $ benchgen models list --benchmark bm_… --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        rows = models.list_models(ctx, benchmark_id=benchmark)
    table = wrapping_table("name", "kind", "credits", "status")
    table.add_column("id", no_wrap=True, min_width=24)
    for row in rows:
        mine = " (yours)" if row.owner == "you" else ""
        # In the name, not a column of its own: another column squeezes names in 80 columns.
        only = f" ({row.formats[0]} only)" if len(row.formats) == 1 else ""
        price = f"{row.price_per_question}/question + {row.price_per_1k_tokens}/1k tokens"
        table.add_row(row.name + mine + only, row.kind, price, row.status, row.id)
    console.print(table)


@leaderboard_app.command("add")
def leaderboard_add(run_id: Annotated[str, typer.Argument(help="Run id.")], as_email: As) -> None:
    """Put a completed, scored run on its phase's leaderboard.

    \b
    Examples:
      $ benchgen leaderboard add run_… --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        leaderboards.add_to_leaderboard(ctx, run_id)
    console.print(f"Added {run_id} to the leaderboard.")


@leaderboard_app.command("remove")
def leaderboard_remove(
    run_id: Annotated[str, typer.Argument(help="Run id.")], as_email: As
) -> None:
    """Take a run off its leaderboard.

    \b
    Examples:
      $ benchgen leaderboard remove run_… --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        leaderboards.remove_from_leaderboard(ctx, run_id)
    console.print(f"Removed {run_id} from the leaderboard.")


def worker(
    threads: Annotated[
        int, typer.Option(min=1, max=MAX_WORKER_THREADS, help="Worker threads in this process.")
    ] = 2,
    queues: Annotated[
        str,
        typer.Option(
            help="Comma-separated queues to take jobs from: runs (model runs, and answers "
            "judged again), scoring (custom benchmarks' programs), training. Route training "
            "and programs to the machines that have the compute."
        ),
    ] = ",".join(queue.QUEUES),
) -> None:
    """Run standalone job workers until interrupted: with BENCHGEN_BROKER_URL they take the
    broker's messages (Celery), without it they poll the configured database.

    Ctrl-C or SIGTERM stops them after the jobs in hand: Celery waits for those to finish;
    polling workers wait up to a minute, then give what is left back to the queue (the runs
    go on with another worker, this attempt not counted).

    \b
    Examples:
      $ benchgen worker
      $ benchgen worker --threads 8 --queues runs
    """
    chosen = [name.strip() for name in queues.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(queue.QUEUES))
    if unknown or not chosen:
        raise typer.BadParameter(
            f"unknown queue {', '.join(unknown) or '(none)'}; use {', '.join(queue.QUEUES)}",
            param_hint="--queues",
        )
    with open_runtime() as runtime:
        _warn_of_another_key(runtime)
        if runtime.settings.broker_url:
            from benchgen.jobs.broker import run_celery_worker

            console.print(f"{threads} worker thread(s) on the broker's {', '.join(chosen)}.")
            status = run_celery_worker(runtime, chosen, threads)
            if status:
                # Non-zero, so a supervisor restarts it (Restart=on-failure): exiting 0 left
                # queued jobs waiting for a consumer that would never come back.
                say_error(
                    "the worker lost its broker and stopped; start it again "
                    "(a supervisor with Restart=on-failure does)."
                )
                raise typer.Exit(status)
            return
        kinds = frozenset().union(*(queue.QUEUES[name] for name in chosen))
        with sigterm_as_interrupt():
            _poll_workers(runtime, threads, kinds, chosen)


def _poll_workers(runtime: Runtime, threads: int, kinds: frozenset[str], chosen: list[str]) -> None:
    """Run `threads` polling workers until Ctrl-C, or until one of their threads has ended.

    Raises:
        typer.Exit: 1 when a worker thread ended on its own; the process exits non-zero so a
            supervisor restarts it, where staying up left queued jobs waiting for ever.
    """
    started = start_workers(runtime, threads, kinds)
    try:
        console.print(f"{threads} worker(s) running on {', '.join(chosen)}; Ctrl-C to stop.")
        while all(thread.is_alive() for _, thread in started):
            time.sleep(1)
    except KeyboardInterrupt:
        console.print("Stopping after the current jobs (Ctrl-C again to leave now)…")
        return
    finally:
        _stop_or_leave(started)
    say_error(
        "a worker thread stopped unexpectedly; start the worker again "
        "(a supervisor with Restart=on-failure does)."
    )
    raise typer.Exit(1)


def _stop_or_leave(started: list[tuple[Runner, threading.Thread]]) -> None:
    """Wait for the workers to finish their jobs; a second Ctrl-C or SIGTERM leaves at once,
    their jobs back in the queue, exiting 130 or 143. It ended silently (or in Click's
    "Aborted!" and status 1), leaving the operator to guess what became of the jobs."""
    try:
        stop_workers(started, timeout_s=60)
    except KeyboardInterrupt as again:
        console.print("Left without waiting: the jobs still in hand went back to the queue.")
        raise typer.Exit(interrupted_status(again)) from None


def _warn_of_another_key(runtime: Runtime) -> None:
    with transaction(runtime, Principal.cli(None), write=False) as ctx:
        problem = deployment.secret_key_problem(ctx)
    if problem:
        labelled("Warning:", f"{problem}.", "yellow")


JUDGE_HELP = (
    "The AI judge: set one up for a benchmark (owner only), or judge again a run's answers "
    "whose judging failed."
)
judge_app = App(help=JUDGE_HELP, no_args_is_help=True)


@judge_app.command("set")
def judge_set(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id (bm_…), a qa benchmark.")],
    as_email: As,
    model: Annotated[str, typer.Option(help="The judge model's name at its endpoint.")],
    base_url: Annotated[str, typer.Option(help="OpenAI-compatible base URL (…/v1).")] = "",
    kind: Annotated[str, typer.Option(help="openai_compat or anthropic.")] = "openai_compat",
    api_key_env: Annotated[
        str, typer.Option(help="Name of the environment variable holding the judge's API key.")
    ] = "",
    allow_others: Annotated[
        bool, typer.Option(help="Let participants' runs use your judge (your key pays).")
    ] = False,
) -> None:
    """Score a benchmark with an AI judge from now on; your API key pays for judging.

    The key is read from an environment variable so it never lands in shell history.

    \b
    Examples:
      $ benchgen judge set bm_… --model gpt-4o-mini --base-url https://…/v1 \\
          --api-key-env JUDGE_KEY --as ana@example.com
    """
    key = _key_in(api_key_env) if api_key_env else None
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx, by_option(ENDPOINT_OPTIONS):
        view = judges.set_judge(ctx, benchmark, kind, model, base_url or None, key, allow_others)
    console.print(
        f"Judge set: {view.kind} {view.endpoint_model}"
        f"{' (open to participants)' if view.allow_others else ''}."
    )


@judge_app.command("again")
def judge_again(
    run_id: Annotated[str, typer.Argument(help="A completed run's id (run_…).")],
    as_email: As,
    wait: Annotated[
        bool, typer.Option(help="Judge them here and show the run's new accuracy.")
    ] = True,
) -> None:
    """Have the AI judge judge again a completed run's answers whose judging failed.

    Only the judge is asked, as in the run's own judging: the model is not asked again and the
    run costs nothing more. Its scores change once the judge has answered (a score corrected by
    hand stays); with --no-wait a worker judges them (`benchgen worker`, or a server's own).

    \b
    Examples:
      $ benchgen judge again run_… --as ana@example.com
    """
    with open_runtime() as runtime:
        with as_user(runtime, as_email) as ctx:
            handed = rejudging.rejudge_run(ctx, run_id)
        console.print(f"{plural(handed.answers, 'answer')} went back to the AI judge.")
        if not wait:
            return
        _judge_here(runtime, as_email, run_id)
        with as_user(runtime, as_email) as ctx:
            accuracy = launch.get_run(ctx, run_id).summary.get("accuracy")
            failed = rejudging.judging_state(ctx, run_id).failed
    shown = "—" if accuracy is None else f"{accuracy:.1%}"
    console.print(
        f"Judged again: accuracy {shown}; {plural(failed, 'answer')} still failed their judging."
    )


def _judge_here(runtime: Runtime, email: str, run_id: str) -> None:
    """Take re-judging jobs in this process until no answer of the run waits for the judge
    (another worker may take this run's job first: then this waits for it)."""
    worker = Worker(runtime, kinds=frozenset({rejudging.JOB_KIND}))
    principal = cli_principal(runtime, email)
    while True:
        worked = worker.run_once()
        with transaction(runtime, principal, write=False) as ctx:
            waiting = rejudging.judging_state(ctx, run_id).waiting
        if not waiting and not worked:
            return
        if not worked:
            time.sleep(WAIT_POLL_S)


commands = App()
commands.command("rescore")(rescore)
commands.command("worker")(worker)
commands.add_typer(models_app, name="models")
commands.add_typer(leaderboard_app, name="leaderboard")
commands.add_typer(judge_app, name="judge")
