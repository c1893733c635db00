"""Local models answer on the operator's `local_model_threads`: every spec a run builds for one
carries it, and a hosted model's spec carries no thread count."""

from __future__ import annotations

import struct
from pathlib import Path

from benchgen.db.tables import Model
from benchgen.evals.types import THREADS_PARAM, ModelSpec
from benchgen.services import _model_specs, models
from tests.support import OPERATOR, World


def _spec(world: World, model_id: str) -> ModelSpec:
    return world.ctx_call(
        OPERATOR, lambda ctx: _model_specs.model_spec(ctx, ctx.session.get(Model, model_id))
    )


def test_a_local_models_spec_carries_the_operators_threads(world: World, tmp_path: Path) -> None:
    world.rt.settings = world.rt.settings.model_copy(
        update={"local_model_threads": 3, "model_host_allowlist": "127.0.0.1"}
    )
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 0))  # a header, no metadata or tensor
    local = world.do(
        OPERATOR,
        models.create_platform_model,
        {"name": "Local", "kind": "local_gguf", "endpoint_model": str(gguf)},
    )
    hosted = world.do(
        OPERATOR,
        models.create_platform_model,
        {"name": "Hosted", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"},
    )
    assert _spec(world, local.id).params[THREADS_PARAM] == 3
    assert THREADS_PARAM not in _spec(world, hosted.id).params
