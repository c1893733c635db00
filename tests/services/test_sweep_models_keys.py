"""API keys as saved: one no request header carries is refused at its field, the key saved
before kept (saved, it failed every request of every run)."""

from __future__ import annotations

import pytest

from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput
from benchgen.db.tables import Model
from benchgen.services import _model_specs, models
from tests.support import World

SPEC = {"name": "Mine", "kind": "anthropic", "endpoint_model": "claude-x"}


def test_a_key_no_request_header_carries_is_refused_at_its_field(world: World) -> None:
    ana = Principal.web(world.user("ana@example.com"))
    mine = world.do(ana, models.create_model, {**SPEC, "api_key": " sk-ant-abc\n"})

    def key(ctx: Context) -> str | None:
        row = ctx.session.get(Model, mine.id)
        assert row is not None
        return _model_specs.model_spec(ctx, row).api_key

    assert world.ctx_call(ana, key) == "sk-ant-abc"
    for bad in ("sk-ant-é", "sk-ant\u200babc", "sk ant", "sk-a\nb"):
        with pytest.raises(InvalidInput) as refused:
            world.do(ana, models.update_model, mine.id, {"api_key": bad})
        assert refused.value.errors[0]["loc"] == ["api_key"]
        with pytest.raises(InvalidInput):
            world.do(ana, models.create_model, {**SPEC, "name": "Other", "api_key": bad})
    assert world.ctx_call(ana, key) == "sk-ant-abc"
    assert [m.name for m in world.do(ana, models.list_models) if m.owner == "you"] == ["Mine"]
