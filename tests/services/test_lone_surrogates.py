"""A JSON line whose escape makes a lone surrogate is refused at its line, whether it is a
dataset's row or a question to import: it is no text UTF-8 can store."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.services.benchmarks import imports
from benchgen.services.datasets import datasets
from tests.support import World

LONE = [
    b'{"prompt": "\\ud800", "completion": "b"}',
    b'{"prompt": "a", "completion": "b", "notes": [["x\\udfff"]]}',
    b'{"prompt": "a", "completion": "b", "\\udc00": 1}',
]


@pytest.mark.parametrize("line", LONE)
def test_a_dataset_row_with_a_lone_surrogate_is_refused_at_its_line(
    world: World, line: bytes
) -> None:
    ana = Principal.web(world.user("ana@example.com"))
    data = b'{"prompt": "ok \\ud83d\\ude00", "completion": "fine"}\n' + line + b"\n"
    with pytest.raises(InvalidInput) as caught:
        world.do(ana, datasets.upload_dataset, data, "d.jsonl", {"name": "Mine"})
    assert caught.value.errors[0]["loc"] == ["file", 2]
    assert "lone surrogate" in caught.value.errors[0]["msg"]
    assert world.do(ana, datasets.list_datasets) == []


def test_a_pair_of_surrogate_escapes_is_the_character_it_stands_for(world: World) -> None:
    ana = Principal.web(world.user("ana@example.com"))
    data = b'{"prompt": "ok \\ud83d\\ude00", "completion": "fine"}\n'
    view = world.do(ana, datasets.upload_dataset, data, "d.jsonl", {"name": "Mine"})
    assert view.preview == [{"prompt": "ok \U0001f600", "completion": "fine"}]


def test_a_question_with_a_lone_surrogate_is_refused_at_its_line(world: World) -> None:
    ana = Principal.web(world.user("ana@example.com"))
    data = b'{"prompt": "2+2?", "answer": "4"}\n{"prompt": "\\ud800?", "answer": "x"}\n'
    with pytest.raises(InvalidInput) as caught:
        world.do(ana, imports.import_file, data, "q.jsonl", {"title": "Imported"})
    # Placed at its line (and field, where the question's own text checks find it first).
    assert caught.value.errors[0]["loc"][:2] == ["file", 2]
