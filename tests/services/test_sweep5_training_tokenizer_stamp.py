"""A base whose tokenizer file grows in place past the limit is judged again."""

from __future__ import annotations

from pathlib import Path

from benchgen.services.training import bases, plans
from benchgen.training.sizing import MAX_TOKENIZER_BYTES
from tests.support import World
from tests.training.header_base import header_request


def test_a_tokenizer_grown_in_place_makes_the_base_untrainable(
    world: World, tmp_path: Path
) -> None:
    """The catalogue's cache was keyed by the config's and weights' stamps alone: a tokenizer
    file rewritten in place (the folder's mtime unchanged) left the old judgement standing."""
    folder = tmp_path / "tiny"
    ana, request = header_request(world, folder, 4)
    world.do(ana, plans.plan_training, request)  # judged, and cached, as trainable
    with (folder / "tokenizer.json").open("r+b") as stream:
        stream.truncate(MAX_TOKENIZER_BYTES + 1)  # sparse: no disk used
    listed = {choice.id: choice for choice in world.do(ana, bases.list_training_bases)}
    assert not listed[request["base_model_id"]].trainable
    assert listed[request["base_model_id"]].reason == "its tokenizer.json is larger than 256 MiB"
