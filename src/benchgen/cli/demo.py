"""`benchgen demo`: a demo account with two real benchmarks, a dataset and a fresh API token."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Annotated, Any

import typer

from benchgen.cli.common import as_operator, as_user, console, open_runtime, prepare
from benchgen.cli.helptext import App
from benchgen.cli.server import HOST, PORT
from benchgen.core.errors import NotFound
from benchgen.core.permissions import Scope
from benchgen.services.accounts import credits, tokens, users
from benchgen.services.benchmarks import lifecycle, scoring
from benchgen.services.datasets import datasets

DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "benchgen-demo"  # noqa: S105 - a documented demo login, not a secret
DEMO_CREDITS = 1000
# The capitals benchmark's questions as chat rows: train SmolLM2 on them, then run it again.
DEMO_DATASET = "Capitals to learn (demo)"
# An address to open and to paste into the `curl` line: a scheme and a host, and no blanks.
WEB_ADDRESS = re.compile(r"https?://[^\s/]+\S*")


def _demo_specs() -> list[dict[str, Any]]:
    text = resources.files("benchgen").joinpath("data/demo_benchmarks.json").read_text("utf-8")
    specs: list[dict[str, Any]] = json.loads(text)["benchmarks"]
    return specs


def seed_demo(
    url: Annotated[
        str | None,
        typer.Option(
            help="Where the server will answer (default: BENCHGEN_PUBLIC_URL, else "
            f"`benchgen serve`'s own address, http://{HOST}:{PORT}).",
        ),
    ] = None,
) -> None:
    """Create (once) the demo account and its benchmarks; print how to get in and a new token.

    \b
    Examples:
      $ benchgen demo
      $ benchgen demo --url https://bench.example
    """
    if url is not None and not WEB_ADDRESS.fullmatch(url):
        # Refused before a token is made: it was printed beside a `curl` line that cannot work.
        raise typer.BadParameter(
            "give the address the server answers at, e.g. http://127.0.0.1:8000",
            param_hint="--url",
        )
    with open_runtime() as runtime:
        assumed = not (url or runtime.settings.public_url)
        url = (url or runtime.settings.public_url or f"http://{HOST}:{PORT}").rstrip("/")
        prepare(runtime)
        with as_operator(runtime) as ctx:
            try:
                users.get_user_by_email(ctx, DEMO_EMAIL)
            except NotFound:
                user = users.create_user(ctx, DEMO_EMAIL, DEMO_PASSWORD, "Demo user")
                credits.grant_credits(ctx, user.id, DEMO_CREDITS, "demo credits")
        with as_user(runtime, DEMO_EMAIL) as ctx:
            existing = {bm.title: bm for bm in lifecycle.list_benchmarks(ctx, mine_only=True)}
            demos = []
            for spec in _demo_specs():
                if spec["title"] not in existing:
                    # A small model answers in sentences: the qa demo scores with `includes`.
                    settings = spec.pop("scoring", None)
                    existing[spec["title"]] = lifecycle.create_benchmark(ctx, spec).benchmark
                    if settings:
                        scoring.set_scoring(ctx, existing[spec["title"]].id, settings)
                demos.append(existing[spec["title"]])
            if DEMO_DATASET not in {row.name for row in datasets.list_datasets(ctx, 200)}:
                rows = resources.files("benchgen").joinpath("data/demo_dataset.jsonl")
                datasets.upload_dataset(
                    ctx, rows.read_bytes(), "demo.jsonl", {"name": DEMO_DATASET}
                )
            # Every scope a user may hold, so the demo token can try every door (publish too).
            secret = tokens.create_token(ctx, "demo", [scope.value for scope in Scope], 30).secret
    console.print(f"BenchGen demo: {url}  ·  API docs: {url}/api/docs")
    if assumed:
        # Only a guess: the demo cannot know where a server started later will listen.
        console.print(
            "(`benchgen serve`'s default address: if the server listens elsewhere, give "
            "`benchgen demo --url` or set BENCHGEN_PUBLIC_URL)"
        )
    console.print(f"Sign in as {DEMO_EMAIL} with password {DEMO_PASSWORD}")
    # The ids `benchgen run --benchmark` and the other commands take.
    for made in demos:
        console.print(f"Benchmark {made.id} ({made.format}): {made.title}")
    console.print("Demo API token (valid 30 days; shown once):")
    typer.echo(secret)
    console.print(f"Try: curl -H 'Authorization: Bearer {secret}' {url}/api/v1/me")


commands = App()
commands.command("demo")(seed_demo)
