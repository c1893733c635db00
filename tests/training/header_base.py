"""A training request on a base read from headers only (no torch): a user with credits, the
operator's tiny base and the user's dataset, for tests of plans, jobs and their logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchgen.core.context import Principal
from benchgen.services import models
from benchgen.services.datasets import datasets
from tests.support import World
from tests.training.tiny_model import write_header_folder

OPERATOR = Principal.cli(None)


def header_request(
    world: World, folder: Path, rows: int, **hyperparameters: Any
) -> tuple[Principal, dict[str, Any]]:
    """Ana, and her request to train the tiny base written in `folder` (its one matrix
    adapted) on a dataset of `rows` prompt/completion rows."""
    ana = Principal.web(world.user("ana@example.com", credits_=1000))
    write_header_folder(folder)
    spec = {"name": "Tiny", "kind": "local_hf", "endpoint_model": str(folder)}
    base = world.do(OPERATOR, models.create_platform_model, spec)
    data = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(rows))
    dataset = world.do(ana, datasets.upload_dataset, data, "d.jsonl", {"name": "QA"})
    request = {
        "base_model_id": base.id,
        "dataset_id": dataset.id,
        "hyperparameters": {"target_modules": ["embed_tokens"], **hyperparameters},
    }
    return ana, request
