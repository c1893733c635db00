"""Every page the permission table and the agent's refusals link to is a real page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.core.permissions import RULES, Action, Target, page_for
from benchgen.evals.adapters.local_gguf import smollm2_path
from benchgen.services import models
from benchgen.services.benchmarks import lifecycle
from benchgen.services.datasets import datasets
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from benchgen.services.training import jobs
from tests.support import MCQ, World
from tests.web.support import WebUser

# A training job needs a trainable base: the packaged SmolLM2 (absent, its page is not checked).
_NOT_YET = {Action.TRAINING_DELETE} if smollm2_path() is None else set()
# Owner-only objects whose page is looked up by the object's own kind.
_OWN_OBJECTS = {
    Action.MODEL_DELETE: "model",
    Action.DATASET_DELETE: "dataset",
    Action.TRAINING_DELETE: "training_job",
}
_LINKED = [a for a in Action if RULES[a].page != "/" and a not in _NOT_YET]
SMOLLM2 = {"name": "SmolLM2 (local)", "kind": "local_gguf", "endpoint_model": "smollm2"}


@pytest.fixture
def admin_owner(
    runtime: Runtime, world: World, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[WebUser, dict[str, str]]]:
    """An admin who owns a benchmark, a run on it, a model, a dataset and a training job of
    her own, signed in."""
    monkeypatch.setattr(runtime.settings, "training_gpus", "")  # no GPU detection with torch
    user_id = world.user("ana@example.com", admin=True, credits_=1000)
    me = Principal.web(user_id)
    benchmark = world.do(me, lifecycle.create_benchmark, MCQ).benchmark.id
    objects = {
        Target.BENCHMARK.value: benchmark,
        Target.RUN.value: world.do(me, launch.start_run, benchmark, "mdl_builtin_first").id,
        "model": world.do(
            me,
            models.create_model,
            {
                "name": "Mine",
                "endpoint_model": "m-1",
                "kind": "anthropic",
                "api_key": "sk-test-key",
            },
        ).id,
        "dataset": world.do(
            me,
            datasets.upload_dataset,
            b'{"prompt": "2+2?", "completion": "4"}\n',
            "d.jsonl",
            {"name": "Sums"},
        ).id,
    }
    if not _NOT_YET:
        base = world.do(me, models.create_platform_model, SMOLLM2).id
        job = {"base_model_id": base, "dataset_id": objects["dataset"]}
        objects["training_job"] = world.do(me, jobs.start_training, job).id
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, "ana@example.com"), objects


@pytest.mark.parametrize("action", _LINKED, ids=str)
def test_the_page_for_each_action_resolves_for_someone_allowed(
    admin_owner: tuple[WebUser, dict[str, str]], action: Action
) -> None:
    person, objects = admin_owner
    key = _OWN_OBJECTS.get(action, RULES[action].target.value)
    path = RULES[action].page.replace("{id}", objects.get(key, ""))
    response = person.get(path)
    assert response.status_code == 200, (path, response.status_code)
    assert "text/html" in response.headers["content-type"]


@pytest.mark.parametrize("action", [a for a in _LINKED if "{id}" in RULES[a].page], ids=str)
def test_with_no_id_the_page_for_an_action_is_a_list_that_exists(
    admin_owner: tuple[WebUser, dict[str, str]], action: Action
) -> None:
    """The agent's refusals pointed at "/runs/…", which a reader (and the link) took for /runs:
    a 404."""
    person, _ = admin_owner
    path = page_for(action)
    assert "…" not in path and "{" not in path
    assert person.get(path).status_code == 200, path
