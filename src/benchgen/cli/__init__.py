"""The `benchgen` command: serve, chat, runs, custom benchmarks, db, demo and administration."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from benchgen.cli import (
    admin,
    benchmarks,
    chat,
    compare,
    datasets,
    demo,
    evaluation,
    scoring,
    training,
)
from benchgen.cli.common import console, open_runtime, prepare

# Commands import what only they need (the web server, the agent's model libraries) when they
# run: `benchgen run` reaches its first model request sooner without loading them.

app = typer.Typer(
    help="BenchGen: build AI benchmarks, run models on them and rank the results.\n\n"
    "Configuration comes from BENCHGEN_* environment variables (see the README). "
    "Every command creates or migrates the database when needed.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(admin.app, name="admin")
app.add_typer(benchmarks.app, name="benchmarks")
app.add_typer(datasets.app, name="datasets")
app.add_typer(training.app, name="training")
app.command(name="demo")(demo.seed_demo)
app.command(name="chat", help=chat.HELP)(chat.chat_command)
app.command(name="run")(evaluation.run)
app.command(name="rescore")(evaluation.rescore)
app.command(name="scoring")(scoring.scoring_command)
app.command(name="compare", help=compare.HELP)(compare.compare_command)
app.command(name="worker")(evaluation.worker)
app.add_typer(evaluation.models_app, name="models")
app.add_typer(evaluation.leaderboard_app, name="leaderboard")
app.add_typer(evaluation.judge_app, name="judge")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Create the database or migrate it to the newest schema (safe to repeat)."""
    with open_runtime() as runtime:
        console.print(f"Database is up to date: [bold]{runtime.database.safe_url}[/]")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Server processes.")] = 1,
) -> None:
    """Serve the API (docs at /api/docs) and GET /healthz."""
    import uvicorn

    from benchgen.agent.brains import BrainUnavailable, configured_brain

    with open_runtime() as runtime:
        prepare(runtime)  # migrate and seed once here, before several workers could race
        try:
            configured_brain(runtime.settings)  # each worker builds it again; fail before them
        except BrainUnavailable as exc:
            console.print(f"[red]Cannot start:[/] {escape(str(exc))}")
            raise typer.Exit(2) from None
    console.print(f"BenchGen on [bold]http://{host}:{port}[/]  (API docs: /api/docs)")
    uvicorn.run(
        "benchgen.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
    )


def main() -> None:
    """Entry point of the `benchgen` script."""
    app()
