"""The API answers the new refusals of datasets and training plans at their request fields."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from benchgen.core.context import Principal
from benchgen.services import models
from tests.support import World
from tests.training.tiny_model import write_header_folder

PAIRS = b"prompt,completion\nCapital of France?,Paris\n"


def _places(answer: httpx.Response) -> list[list[object]]:
    body = answer.json()
    return [problem["loc"] for problem in body["error"]["details"]["errors"]]


def test_a_wrong_format_or_mapping_is_answered_at_its_form_field(
    client: TestClient, world: World
) -> None:
    headers = {"Authorization": f"Bearer {world.token(world.user('a@example.com'), ['train'])}"}
    files = {"file": ("pairs.csv", PAIRS, "text/csv")}
    wrong = {"name": "D", "format": "prompt_completion"}
    answer = client.post("/api/v1/datasets", headers=headers, files=files, data=wrong)
    assert answer.status_code == 422 and _places(answer) == [["body", "format"]]
    both = {"name": "D", "mapping": '{"messages": "turns", "completion": "answer"}'}
    answer = client.post("/api/v1/datasets", headers=headers, files=files, data=both)
    assert answer.status_code == 422 and _places(answer) == [["body", "mapping", "completion"]]


def test_a_platform_models_name_is_answered_at_the_name(
    client: TestClient, world: World, tmp_path: Path
) -> None:
    ana = world.user("a@example.com", credits_=100)
    spec = {
        "name": "Tiny",
        "kind": "local_hf",
        "endpoint_model": str(write_header_folder(tmp_path)),
    }
    base = world.do(Principal.cli(None), models.create_platform_model, spec)
    headers = {"Authorization": f"Bearer {world.token(ana, ['train'])}"}
    files = {"file": ("pairs.csv", PAIRS, "text/csv")}
    made = client.post("/api/v1/datasets", headers=headers, files=files, data={"name": "D"})
    body = {"base_model_id": base.id, "dataset_id": made.json()["id"], "job_type": "sft"}
    for path in ("/api/v1/training-jobs/estimate", "/api/v1/training-jobs"):
        answer = client.post(path, headers=headers, json={**body, "name": "TINY"})
        assert answer.status_code == 422 and _places(answer) == [["body", "name"]]
