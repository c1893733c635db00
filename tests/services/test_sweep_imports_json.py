"""A `.json` file holding one array of questions imports as JSON lines do, each item numbered
by the line it starts on; a broken array is refused once, where it breaks."""

from __future__ import annotations

import json

import pytest

from benchgen.core.errors import InvalidInput
from tests.services.test_formats import do_import, questions
from tests.support import World


def test_a_pretty_printed_json_array_imports_with_its_items_lines(world: World) -> None:
    ana = world.user("ana@example.com")
    items = [
        {"prompt": "Sky?", "choices": ["Green", "Blue"], "answer": "B", "tags": ["t"]},
        {"prompt": "Grass?", "choices": ["Green", "Blue"], "answer": 0},
    ]
    data = "\ufeff" + json.dumps(items, indent=2)
    got = questions(world, ana, do_import(world, ana, data.encode(), "q.json"))
    assert [(q["prompt"], q["answer"]) for q in got] == [("Sky?", "B"), ("Grass?", "A")]
    # Items' problems name the line each item starts on: the second opens on line 13.
    wrong = [items[0], {"prompt": "Bad?", "choices": ["a", "b"], "answer": 7}, "text"]
    with pytest.raises(InvalidInput) as caught:
        do_import(world, ana, json.dumps(wrong, indent=2).encode(), "w.json")
    assert [problem["loc"] for problem in caught.value.errors] == [
        ["file", 13, "answer"],
        ["file", 21],
    ]
    for broken, line in (('[\n{"prompt": "a", "answer": "b"}\n{"x": 1}]', 3), ("[\n{", 2)):
        with pytest.raises(InvalidInput) as caught:
            do_import(world, ana, broken.encode(), "b.json")
        assert caught.value.errors[0]["loc"] == ["file", line]
