"""The `benchgen` command: serve, chat, runs, custom benchmarks, db, demo and administration."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from benchgen import __version__
from benchgen.cli.lazy import Entry, LazyGroup, preload

# A command's module (and the services, web server or model libraries it needs) is imported only
# when that command runs: `benchgen run` reaches its first model request without loading the
# others, and `benchgen --help` lists these summaries without importing any. Each summary is the
# first paragraph of its command's help (tests/cli/test_startup.py compares the two listings).
COMMANDS = (
    Entry(
        "demo",
        "demo",
        "Create (once) the demo account and its benchmarks; print how to get in and a new token.",
    ),
    Entry(
        "chat",
        "chat",
        "Chat with the agent: it builds benchmarks, runs models and reads results for you, and "
        "asks before it changes anything.",
    ),
    Entry(
        "run",
        "runs",
        "Launch a run (credits are reserved up front) and follow it with a progress bar.",
    ),
    Entry(
        "rescore",
        "evaluation",
        "Re-apply scoring to a run's saved answers without calling any model.",
    ),
    Entry(
        "scoring",
        "scoring",
        "Show the scoring of a benchmark, or change it with --method and --option.",
    ),
    Entry(
        "compare",
        "compare",
        "Compare two finished runs of the same benchmark and version, question by question: each "
        "run's accuracy, the difference B − A with a paired bootstrap 95% interval, the exact "
        "McNemar test, and how many questions both got right, both wrong, only A or only B got "
        "right. Per-tag differences (and, with --json, the per-question table) only for the "
        "benchmark's owner and collaborators.",
    ),
    Entry(
        "worker",
        "evaluation",
        "Run standalone job workers until interrupted: with BENCHGEN_BROKER_URL they take the "
        "broker's messages (Celery), without it they poll the configured database.",
    ),
    Entry(
        "serve",
        "server",
        "Serve the web app and the API (docs at /api/docs, liveness at /healthz).",
    ),
    Entry("db", "database", "Database maintenance."),
    Entry("admin", "admin", "Operator administration (acts with admin powers)."),
    Entry(
        "benchmarks",
        "benchmarks",
        "Benchmarks: list those you may see (and their ids), import questions from JSONL, CSV, "
        "Parquet or Hugging Face dataset files, export them for Inspect AI or "
        "lm-evaluation-harness; custom benchmarks made from Codabench v2 bundles: upload, new "
        "versions, download, submit.",
    ),
    Entry("datasets", "datasets", "Datasets: training data for fine-tuning."),
    Entry(
        "training",
        "training",
        "Training: fine-tune a local model on one of your datasets (LoRA or full), then evaluate "
        "the Trained model like any other.",
    ),
    Entry("models", "evaluation", "The model catalogue."),
    Entry("leaderboard", "evaluation", "Put runs on a leaderboard or take them off."),
    Entry(
        "judge",
        "evaluation",
        "The AI judge: set one up for a benchmark (owner only), or judge again a run's answers "
        "whose judging failed.",
    ),
)


class BenchGenGroup(LazyGroup):
    """The `benchgen` group, with every command above."""

    entries = COMMANDS


app = typer.Typer(
    cls=BenchGenGroup,
    help="BenchGen: build AI benchmarks, run models on them and rank the results.\n\n"
    "Configuration comes from BENCHGEN_* environment variables (see the README). "
    "Every command creates or migrates the database when needed.",
    no_args_is_help=True,
)


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"benchgen {__version__}")
        raise typer.Exit


@app.callback()
def benchgen(
    _version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Typer makes a group, rather than a lone command, of an app with a callback."""


def main() -> None:
    """Entry point of the `benchgen` script."""
    preload(COMMANDS, sys.argv[1:])
    app()
