"""`benchgen benchmarks …`: bundles uploaded, versioned, downloaded and submitted to, on this
machine (`--as`) and through a server's API (`--url`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
import typer
from typer.testing import CliRunner

from benchgen.app import create_app
from benchgen.cli import app
from benchgen.cli.doors import RemoteDoor
from benchgen.services.runtime import Runtime
from tests.bundle_factory import bundle, competition, require_sandbox, results
from tests.client.relay import served_to_the_cli
from tests.support import World

runner = CliRunner()
WIDE = {"COLUMNS": "200"}


pytestmark = pytest.mark.usefixtures("cli_env")


def _file(folder: Path, name: str, data: bytes) -> str:
    path = folder / name
    path.write_bytes(data)
    return str(path)


def _new_id(output: str) -> str:
    return output.split("Created custom benchmark ", 1)[1].split(":")[0].strip()


def test_help_explains_where_and_each_command() -> None:
    group = runner.invoke(app, ["benchmarks", "--help"], env=WIDE)
    assert group.exit_code == 0
    for needed in ("upload", "download-bundle", "submit", "--as EMAIL", "--url", "BENCHGEN_TOKEN"):
        assert needed in group.output
    upload = runner.invoke(app, ["benchmarks", "upload", "--help"], env=WIDE)
    assert "--to" in upload.output and "line" in upload.output
    submit = runner.invoke(app, ["benchmarks", "submit", "--help"], env=WIDE)
    for needed in ("--phase", "--kind", "auto", "results", "code", "--wait"):
        assert needed in submit.output


def test_upload_version_download_and_submit_here(world: World, tmp_path: Path) -> None:
    require_sandbox()
    world.user("ana@example.com")
    here = ["--as", "ana@example.com"]
    made = runner.invoke(
        app,
        ["benchmarks", "upload", _file(tmp_path, "tiny.zip", bundle(competition(odd=1))), *here],
        env=WIDE,
    )
    assert made.exit_code == 0, made.output
    assert "Warning: odd" in made.output and "ok" in made.output and "accuracy 1" in made.output
    bm = _new_id(made.output)
    v2 = _file(tmp_path, "v2.zip", bundle(competition(title="Tiny v2")))
    again = runner.invoke(app, ["benchmarks", "upload", v2, "--to", bm, *here], env=WIDE)
    assert again.exit_code == 0 and "Bundle version 2" in again.output, again.output
    target = tmp_path / "saved.zip"
    saved = runner.invoke(
        app, ["benchmarks", "download-bundle", bm, "--version", "1", "-o", str(target), *here]
    )
    assert saved.exit_code == 0, saved.output
    assert target.read_bytes() == (tmp_path / "tiny.zip").read_bytes()
    kept = runner.invoke(app, ["benchmarks", "download-bundle", bm, "-o", str(target), *here])
    assert kept.exit_code == 1 and "--force" in kept.output
    answer = _file(tmp_path, "half.zip", results({"q1": "paris"}))
    sent = runner.invoke(app, ["benchmarks", "submit", bm, answer, "--wait", *here], env=WIDE)
    assert sent.exit_code == 0, sent.output
    assert "completed" in sent.output and "accuracy" in sent.output and "0.5" in sent.output


def test_run_on_a_custom_benchmark_prints_its_bundle_scores(world: World, tmp_path: Path) -> None:
    require_sandbox()
    world.user("ana@example.com", credits_=100)
    here = ["--as", "ana@example.com"]
    made = runner.invoke(
        app, ["benchmarks", "upload", _file(tmp_path, "tiny.zip", bundle()), *here], env=WIDE
    )
    bm = _new_id(made.output)
    ran = runner.invoke(
        app, ["run", "--benchmark", bm, "--model", "mdl_builtin_echo", *here], env=WIDE
    )
    assert ran.exit_code == 0, ran.output
    # echo gets one of the factory's two answers right: its columns, not an accuracy of "—".
    said = "completed: accuracy 0.5, errors 1, combined 1.5, 0 questions failed"
    assert said in ran.output, ran.output


def test_a_failing_solution_shows_what_its_programs_printed(world: World, tmp_path: Path) -> None:
    require_sandbox()
    world.user("ana@example.com")
    scorer = "import sys; print('no [bold]scores.json[/] here', file=sys.stderr); sys.exit(2)"
    path = _file(tmp_path, "bad.zip", bundle(solution={"q1": "rome"}, scorer=scorer))
    made = runner.invoke(app, ["benchmarks", "upload", path, "--as", "ana@example.com"], env=WIDE)
    assert made.exit_code == 0, made.output
    assert "Output of solution 0:" in made.output
    assert "[scoring stderr] no [bold]scores.json[/] here" in made.output


def test_an_invalid_bundle_prints_each_problem_and_fails(world: World, tmp_path: Path) -> None:
    world.user("ana@example.com")
    broken = competition()
    broken["phases"][0]["tasks"] = [5]
    del broken["leaderboards"][0]["columns"][0]["key"]
    path = _file(tmp_path, "broken.zip", bundle(broken))
    result = runner.invoke(app, ["benchmarks", "upload", path, "--as", "ana@example.com"], env=WIDE)
    assert result.exit_code == 1
    assert "phases[0].tasks[0] (line" in result.output and "no task has index 5" in result.output
    assert "leaderboards[0]" in result.output


def test_either_here_or_remote(world: World, tmp_path: Path) -> None:
    path = _file(tmp_path, "tiny.zip", bundle())
    neither = runner.invoke(app, ["benchmarks", "upload", path])
    assert neither.exit_code == 2 and "--as" in neither.output
    no_token = runner.invoke(app, ["benchmarks", "upload", path, "--url", "http://127.0.0.1:9"])
    assert no_token.exit_code == 2 and "BENCHGEN_TOKEN" in no_token.output


def test_remote_upload_submit_wait_and_download(
    world: World, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_sandbox()
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read", "runs", "create", "edit"])
    # An embedded worker: the command's --wait polls the API while the server runs the job.
    runtime.settings = runtime.settings.model_copy(update={"worker_threads": 1})
    with served_to_the_cli(create_app(runtime.settings, runtime), monkeypatch, secret) as there:
        path = _file(tmp_path, "tiny.zip", bundle())
        made = runner.invoke(app, ["benchmarks", "upload", path, *there], env=WIDE)
        assert made.exit_code == 0, made.output
        bm = _new_id(made.output)
        answer = _file(tmp_path, "full.zip", results({"q1": "paris", "q2": "4"}))
        # The token from BENCHGEN_TOKEN this time.
        options = ["--phase", "0", "--kind", "results", "--wait", "--url", "http://testserver"]
        sent = runner.invoke(
            app,
            ["benchmarks", "submit", bm, answer, *options],
            env={**WIDE, "BENCHGEN_TOKEN": secret},
        )
        assert sent.exit_code == 0, sent.output
        assert "completed" in sent.output and "accuracy" in sent.output
        target = tmp_path / "copy.zip"
        saved = runner.invoke(app, ["benchmarks", "download-bundle", bm, "-o", str(target), *there])
        assert saved.exit_code == 0, saved.output
        assert target.read_bytes() == Path(path).read_bytes()
        refused = runner.invoke(app, ["benchmarks", "download-bundle", "bm_nowhere", *there])
        assert refused.exit_code == 1 and "No such" in refused.output


def test_ctrl_c_while_following_a_remote_run_stops_only_the_following(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Interrupted:
        def wait_for_run(self, run_id: str, **_: Any) -> None:
            raise KeyboardInterrupt  # what Ctrl-C raises while the command polls

    following = RemoteDoor(cast(Any, Interrupted()))
    with pytest.raises(typer.Exit) as ended:
        following.follow({"id": "run_x", "question_count": 3})
    # The shell's status for an interrupt, and where the run stands (it ended saying nothing).
    assert ended.value.exit_code == 130
    assert "Stopped following run run_x; the server goes on with it." in capsys.readouterr().out


def test_the_list_counts_no_questions_for_a_custom_benchmark(world: World, tmp_path: Path) -> None:
    require_sandbox()
    world.user("ana@example.com")
    here = ["--as", "ana@example.com"]
    made = runner.invoke(
        app, ["benchmarks", "upload", _file(tmp_path, "tiny.zip", bundle()), *here], env=WIDE
    )
    bm = _new_id(made.output)
    listed = runner.invoke(app, ["benchmarks", "list", *here], env=WIDE).output
    [row] = [line for line in listed.splitlines() if bm in line]
    assert "custom" in row and "—" in row and " 0 " not in row, row
