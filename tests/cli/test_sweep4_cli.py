"""The CLI as a newcomer meets it: huge files, refused option values, a server of another
version, SIGTERM during a run, an absurd thread count, and a chat given nothing to send."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NoReturn

import httpx
import pytest
from typer.testing import CliRunner

import benchgen.client as client_package
from benchgen.agent import brains
from benchgen.cli import app, bundle_commands, compare
from benchgen.cli import evaluation as cli_evaluation
from benchgen.cli import runs as cli_runs
from benchgen.client import BenchGen
from benchgen.core.context import Principal
from benchgen.services.chat import conversations
from benchgen.services.runs import launch
from tests.agent.scripted import Script
from tests.support import QA, World

runner = CliRunner()
WIDE = {"COLUMNS": "200"}
HERE = ["--as", "ana@example.com"]
HUGE = 5 * 1024**3

pytestmark = pytest.mark.usefixtures("cli_env")


def _never_read_whole(path: Path) -> bytes:
    raise AssertionError(f"{path} was read whole into memory")


def _huge(folder: Path, name: str) -> str:
    path = folder / name
    with path.open("wb") as sparse:
        sparse.truncate(HUGE)  # takes no room on disk
    return str(path)


@pytest.mark.parametrize(
    ("command", "setting"),
    [
        (["datasets", "upload", "{}"], "BENCHGEN_MAX_DATASET_BYTES"),
        (["benchmarks", "import", "{}"], "BENCHGEN_MAX_IMPORT_BYTES"),
        (["benchmarks", "upload", "{}"], "BENCHGEN_MAX_BUNDLE_BYTES"),
        (["benchmarks", "upload", "{}", "--to", "bm_x"], "BENCHGEN_MAX_BUNDLE_BYTES"),
        (["benchmarks", "submit", "bm_x", "{}"], "BENCHGEN_MAX_SUBMISSION_BYTES"),
    ],
    ids=["dataset", "import", "bundle", "version", "submission"],
)
def test_a_huge_file_is_refused_by_its_size_before_it_is_read(
    command: list[str],
    setting: str,
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world.user("ana@example.com")
    huge = _huge(tmp_path, "huge.zip")
    monkeypatch.setattr(Path, "read_bytes", _never_read_whole)
    args = [huge if word == "{}" else word for word in command]
    result = runner.invoke(app, [*args, *HERE], env=WIDE)
    # The whole file was read into memory first (here: the guard's AssertionError).
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert f"Error: {huge} is larger than the limit of" in said and setting in said


def test_a_file_over_a_lowered_limit_is_refused_by_it(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.user("ana@example.com")
    monkeypatch.setenv("BENCHGEN_MAX_DATASET_BYTES", "1024")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"prompt": "Q", "completion": "A"}\n' * 100)
    result = runner.invoke(app, ["datasets", "upload", str(rows), *HERE], env=WIDE)
    assert result.exit_code == 1, result.output
    assert "limit of 1,024 bytes" in result.output


def test_a_refused_option_value_is_a_usage_error(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    command = ["run", "--benchmark", bm, "--model", "mdl_builtin_echo", *HERE]
    result = runner.invoke(app, [*command, "--samples", "0"], env=WIDE)
    # Exit status 1, where Click's own refusal of `download-bundle --version 0` is 2.
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: --samples: ")
    assert world.do(Principal.web(ana), launch.list_runs) == []


def _server_of_another_version(monkeypatch: pytest.MonkeyPatch, page: dict[str, Any]) -> None:
    """`--url` reaches a server that answers every request with `page`."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=page)

    def connect(url: str, token: str | None) -> BenchGen:
        return BenchGen(url, token, transport=httpx.MockTransport(answer))

    monkeypatch.setattr(client_package, "BenchGen", connect)


def test_list_rows_missing_a_field_show_it_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    row = {"id": "bm_1", "title": "Géographie ✓ 地理"}  # no format, count nor visibility
    _server_of_another_version(monkeypatch, {"items": [row], "next_cursor": None})
    there = ["--url", "http://server.test", "--token", "bgp_x"]
    result = runner.invoke(app, ["benchmarks", "list", *there], env=WIDE)
    # A KeyError: 'format', a traceback.
    assert result.exit_code == 0, result.exception
    [line] = [line for line in result.output.splitlines() if "bm_1" in line]
    assert "Géographie ✓ 地理" in line


def test_tables_of_a_bundle_and_a_comparison_take_rows_missing_fields() -> None:
    bundle_commands._show_bundle({"solutions": [{"name": "baseline", "ok": True}]})
    compare._show_tags({"tags": [{"tag": "geo", "n": 3}]})


def test_sigterm_cancels_the_run_and_exits_143(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    # No worker takes it: it stays queued until SIGTERM comes, between two polls.
    monkeypatch.setattr(cli_runs, "start_workers", lambda *_: [])

    def terminated(_: float) -> None:
        signal.raise_signal(signal.SIGTERM)

    def unhandled(*_: object) -> NoReturn:
        raise RuntimeError("SIGTERM reached the process's own handler")

    monkeypatch.setattr(cli_runs, "time", SimpleNamespace(sleep=terminated))
    # Stands for the default action, which ended the process (pytest's, here) at once.
    previous = signal.signal(signal.SIGTERM, unhandled)
    try:
        result = runner.invoke(
            app, ["run", "--benchmark", bm, "--model", "mdl_builtin_echo", *HERE]
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert result.exit_code == 143, result.exception
    [run] = world.do(Principal.web(ana), launch.list_runs)
    assert run.status == "cancelled"
    assert f"Terminated: cancelling run {run.id}" in result.output
    assert "cancelled (0/" in result.output and "Traceback" not in result.output


def test_worker_threads_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHGEN_BROKER_URL", raising=False)

    def started(*_: object) -> NoReturn:
        raise AssertionError("the workers started")

    monkeypatch.setattr(cli_evaluation, "start_workers", started)
    result = runner.invoke(app, ["worker", "--threads", "100000"], env=WIDE)
    assert result.exit_code == 2, result.exception
    assert "--threads" in result.output and "64" in result.output


def test_chat_with_nothing_to_send_makes_no_conversation(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    brain = Script(["Hello."]).brain()
    monkeypatch.setattr(brains, "configured_brain", lambda settings: brain)
    result = runner.invoke(app, ["chat", *HERE], input="", env=WIDE)
    assert result.exit_code == 0, result.output
    assert "Nothing was sent; no conversation was made." in result.output
    # An empty conversation was left in the user's list.
    assert world.do(Principal.web(ana), conversations.list_conversations) == []


def test_chat_makes_its_conversation_with_the_first_message(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    brain = Script(["Hello."]).brain()
    monkeypatch.setattr(brains, "configured_brain", lambda settings: brain)
    result = runner.invoke(app, ["chat", *HERE], input="\nhi\n", env=WIDE)
    assert result.exit_code == 0, result.output
    [made] = world.do(Principal.web(ana), conversations.list_conversations)
    assert f"Conversation {made.id}" in result.output and "Hello." in result.output
    assert "Nothing was sent" not in result.output


def test_compare_json_is_valid_whatever_the_names_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    found = {"run_a": "run_a", "run_b": "run_b", "model_a": "Modèle\x7f\x85", "tags": []}
    _server_of_another_version(monkeypatch, found)
    there = ["--url", "http://server.test", "--token", "bgp_x"]
    result = runner.invoke(app, ["compare", "run_a", "run_b", "--json", *there])
    assert result.exit_code == 0, result.output
    # DEL and NEL came out as `\x7f` and `\x85`: "Invalid \escape".
    assert json.loads(result.output) == found
    assert "\x85" not in result.output and "Modèle" in result.output


def test_a_list_narrower_than_its_table_keeps_titles_and_ids_whole(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, {**QA, "title": "Géographie du monde"})
    result = runner.invoke(app, ["benchmarks", "list", *HERE], env={"COLUMNS": "50"})
    assert result.exit_code == 0, result.output
    # The title column had no room at all, and the id lost its last character.
    assert bm in result.output
    assert "Géographie" in result.output
