"""The CLI as a new user meets it: finding benchmark ids, refusals in one line that name the
option typed, and exit statuses that tell a usage error (2) from a refusal (1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchgen.app import create_app
from benchgen.cli import app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runtime import Runtime
from tests.client.relay import served_to_the_cli
from tests.support import MCQ, QA, World

runner = CliRunner()
WIDE = {"COLUMNS": "200"}
HERE = ["--as", "ana@example.com"]

pytestmark = pytest.mark.usefixtures("cli_env")


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Error:")]


def test_a_long_refusal_is_one_line_whatever_the_width() -> None:
    # Longer than any terminal: a console that wraps errors breaks it wherever its width is.
    email = "a" * 1500 + "@example.com"
    shown = runner.invoke(app, ["models", "list", "--as", email])
    assert shown.exit_code == 1
    assert _error_lines(shown.output) == [f"Error: No account with email {email}."]


def test_refusals_name_the_option_typed_not_the_service_field(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    run = ["run", "--benchmark", bm, "--model", "mdl_builtin_first", *HERE]
    cases = {
        (
            "--stop",
            "a",
            "--stop",
            "b",
            "--stop",
            "c",
            "--stop",
            "d",
            "--stop",
            "e",
        ): "Error: --stop: ",
        ("--few-shot", "11"): "Error: --few-shot: ",
        ("--samples", "50"): "Error: --samples: ",
        ("--top-p", "5"): "Error: --top-p: ",
        ("--max-credits", "-1"): "Error: --max-credits: ",
    }
    for given, said in cases.items():
        shown = runner.invoke(app, [*run, *given])
        assert shown.exit_code == 2, shown.output
        assert _error_lines(shown.output)[0].startswith(said), shown.output
    qa = world.benchmark(ana, QA)
    shown = runner.invoke(app, ["run", "--benchmark", qa, "--model", "mdl_builtin_first", *HERE])
    assert _error_lines(shown.output)[0].startswith("Error: --model: "), shown.output
    token = ["admin", "create-token", "--email", "ana@example.com", "--scopes", "read"]
    shown = runner.invoke(app, [*token, "--expires-days", "0"])
    assert _error_lines(shown.output)[0].startswith("Error: --expires-days: "), shown.output
    user = ["admin", "create-user", "--email", "bo@example.com", "--password", "longpassword"]
    shown = runner.invoke(app, [*user, "--credits", "99999999999"])
    assert _error_lines(shown.output)[0].startswith("Error: --credits: "), shown.output
    # Refused whole: the account was not made without its credits.
    assert "No account" in runner.invoke(app, ["models", "list", "--as", "bo@example.com"]).output


def test_a_folder_as_the_output_is_not_answered_with_force(world: World, tmp_path: Path) -> None:
    bm = world.benchmark(world.user("ana@example.com"), MCQ)
    shown = runner.invoke(app, ["benchmarks", "export", bm, "-o", str(tmp_path), *HERE], env=WIDE)
    assert shown.exit_code == 1
    assert _error_lines(shown.output) == [
        f"Error: {tmp_path} is a folder; give -o the name of a file to write."
    ]


def test_a_judge_key_variable_that_is_not_set_is_a_usage_error_as_for_models(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    bm = world.benchmark(world.user("ana@example.com"), QA)
    monkeypatch.delenv("UNSET_JUDGE_KEY", raising=False)
    judge = ["judge", "set", bm, "--model", "m", "--api-key-env", "UNSET_JUDGE_KEY", *HERE]
    model = ["models", "add", "--name", "x", "--endpoint-model", "m", *HERE]
    for args in (judge, [*model, "--api-key-env", "UNSET_JUDGE_KEY"]):
        shown = runner.invoke(app, args, env=WIDE)
        assert shown.exit_code == 2, shown.output
        assert "UNSET_JUDGE_KEY is not set" in shown.output


def test_benchmarks_list_gives_the_ids_other_commands_take(world: World) -> None:
    ana = world.user("ana@example.com")
    mine = world.benchmark(ana, {**MCQ, "title": "Sky colours"})
    other = world.benchmark(ana, QA)
    hidden = world.benchmark(world.user("bo@example.com"), {**QA, "title": "Bo's private"})
    shown = runner.invoke(app, ["benchmarks", "list", *HERE], env=WIDE)
    assert shown.exit_code == 0, shown.output
    assert mine in shown.output and other in shown.output and hidden not in shown.output
    assert "Sky colours" in shown.output and "Bo's private" not in shown.output
    found = runner.invoke(app, ["benchmarks", "list", "--search", "sky", *HERE], env=WIDE)
    assert mine in found.output and other not in found.output
    cy = world.user("cy@example.com")
    published = world.benchmark(cy, {**QA, "title": "Cy's public"})
    world.do(Principal.web(cy), lifecycle.publish_benchmark, published)
    everyone = runner.invoke(app, ["benchmarks", "list", *HERE], env=WIDE).output
    assert published in everyone
    assert published not in runner.invoke(app, ["benchmarks", "list", "--mine", *HERE]).output
    nowhere = runner.invoke(app, ["benchmarks", "list"])
    assert nowhere.exit_code == 2 and "give either --as EMAIL" in nowhere.output


def test_benchmarks_list_through_a_server(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, {**MCQ, "title": "Sky colours"})
    secret = world.token(ana, ["read"])
    with served_to_the_cli(create_app(runtime.settings, runtime), monkeypatch, secret) as there:
        shown = runner.invoke(app, ["benchmarks", "list", *there], env=WIDE)
        assert shown.exit_code == 0, shown.output
        assert bm in shown.output and "Sky colours" in shown.output


def test_the_demo_prints_its_benchmarks_ids(world: World) -> None:
    for _ in range(2):  # the second time too: they exist already
        shown = runner.invoke(app, ["demo"], env=WIDE)
        assert shown.exit_code == 0, shown.output
        listed = [line for line in shown.output.splitlines() if line.startswith("Benchmark bm_")]
        assert len(listed) == 2, shown.output
        ids = {line.split()[1] for line in listed}
        listing = runner.invoke(app, ["benchmarks", "list", "--as", "demo@example.com"]).output
        assert all(found in listing for found in ids)
