"""Endpoint addresses as saved: refused when a request could not carry them, stored as checked."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.db.tables import Model
from benchgen.services import models
from benchgen.services.benchmarks import judges
from benchgen.services.runtime import Runtime
from tests.support import World

CAPITALS = {
    "title": "Capitals",
    "format": "qa",
    "questions": [{"prompt": "What is the capital of Italy?", "answer": "Rome"}],
}


@pytest.mark.parametrize(
    "base_url",
    ["http://93.184.216.34/v 1", "http://93.184.216.34/vé1", "http://bücher.example/v1"],
)
def test_a_model_address_no_request_can_carry_is_refused(world: World, base_url: str) -> None:
    ana_id = world.user("ana@example.com")
    ana = Principal.web(ana_id)
    spec = {"name": "Mine", "kind": "openai_compat", "endpoint_model": "m", "base_url": base_url}
    with pytest.raises(InvalidInput, match="printable ASCII") as refused:
        world.do(ana, models.create_model, spec)
    assert refused.value.errors[0]["loc"] == ["base_url"]
    own = select(func.count(Model.id)).where(Model.owner_id == ana_id)
    assert world.ctx_call(ana, lambda ctx: ctx.session.scalar(own)) == 0


def test_a_judge_address_is_stored_as_it_was_checked(world: World, runtime: Runtime) -> None:
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, CAPITALS)
    view = world.do(
        Principal.web(ana),
        judges.set_judge,
        bm,
        "openai_compat",
        "judge-1",
        "  http://127.0.0.1:9/v1/ ",
        "sk-x",
    )
    assert view.base_url == "http://127.0.0.1:9/v1"
