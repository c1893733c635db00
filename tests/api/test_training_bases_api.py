"""`/api/v1/training-bases` and the training plan with a damaged operator model: that model is
untrainable with its reason, everything else keeps working."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from benchgen.core.context import Principal
from benchgen.services import models
from benchgen.services.datasets import datasets
from tests.support import OPERATOR, World
from tests.training.tiny_model import write_header_folder

ROWS = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(8))


def test_a_damaged_base_is_listed_untrainable_and_refused_at_its_field(
    client: TestClient, world: World, tmp_path: Path
) -> None:
    """The header's length was trusted: garbage made these a 500 (MemoryError) for everyone."""
    ana = world.user("ana@example.com", credits_=100)
    headers = {"Authorization": f"Bearer {world.token(ana, ['read', 'train'])}"}
    folder = write_header_folder(tmp_path / "hf")
    spec = {"name": "Damaged", "kind": "local_hf", "endpoint_model": str(folder)}
    damaged = world.do(OPERATOR, models.create_platform_model, spec)
    (folder / "model.safetensors").write_bytes(b"garbage\n")
    data = world.do(Principal.web(ana), datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"})

    listed = client.get("/api/v1/training-bases", headers=headers)
    assert listed.status_code == 200, listed.text
    choice = next(item for item in listed.json()["items"] if item["id"] == damaged.id)
    assert not choice["trainable"]
    assert choice["reason"].startswith("its weights could not be read (model.safetensors: ")
    body = {"base_model_id": damaged.id, "dataset_id": data.id}
    for path in ("/api/v1/training-jobs/estimate", "/api/v1/training-jobs"):
        answer = client.post(path, headers=headers, json=body)
        assert answer.status_code == 422, answer.text
        assert [p["loc"] for p in answer.json()["error"]["details"]["errors"]] == [
            ["body", "base_model_id"]
        ]
