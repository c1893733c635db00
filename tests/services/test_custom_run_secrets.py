"""A custom run's model calls: an error that quotes the model's key is stored without it, as a
questions run stores its errors."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from benchgen.core.context import Principal
from benchgen.evals.adapters.openai_compat import OpenAICompatAdapter
from benchgen.evals.types import Completion, FatalModelError, Item
from benchgen.services import models
from benchgen.services._artifacts import store_for
from benchgen.services.benchmarks import bundles
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.bundle_factory import bundle, require_sandbox
from tests.services.test_runs import work_all
from tests.support import OPERATOR, World

# No sk-, bgp_ or Bearer shape: only the exact key, handed to the engine, can hide it.
KEY = "zq7Vt0pL9xK2mN4bR8cWf3"


def test_an_error_quoting_the_models_key_is_stored_without_it(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_sandbox()
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})

    async def quoting(self: OpenAICompatAdapter, item: Item, prompt: str) -> Completion:
        raise FatalModelError(f"the endpoint refused the key {KEY}")

    monkeypatch.setattr(OpenAICompatAdapter, "complete", quoting)
    spec = {
        "name": "Keyed",
        "kind": "openai_compat",
        "endpoint_model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": KEY,
    }
    model = world.do(OPERATOR, models.create_platform_model, spec).id
    ana = world.user("ana@example.com", credits_=100)
    bm = world.do(Principal.web(ana), bundles.upload_bundle, bundle(), "tiny.zip").benchmark.id
    run_id = world.do(Principal.web(ana), launch.start_run, bm, model).id
    work_all(runtime)
    saved = store_for(runtime.settings).read_bytes(f"runs/{run_id}/predictions/task-0.zip")
    with zipfile.ZipFile(io.BytesIO(saved)) as kept:
        rows = [json.loads(line) for line in kept.read("predictions.jsonl").splitlines()]
    errors = [row["error"] for row in rows]
    assert errors and all("the endpoint refused the key" in error for error in errors)
    assert not any(KEY in error for error in errors)
