"""The Python client's dataset calls against the app in this process: uploads from a path or
bytes, line-numbered errors, the train scope, and only one's own datasets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from benchgen.client import InvalidInput, NotFound, PermissionDenied
from tests.client.relay import connect
from tests.support import World

PAIRS = [{"prompt": "Capital of France?", "completion": "Paris"}]


def test_upload_list_and_read(server: TestClient, world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com")
    path = tmp_path / "qa.csv"
    path.write_text("question,answer\nhi,hello\n")
    with connect(server, world.token(ana, ["read", "train"])) as bg:
        made = bg.upload_dataset(
            path, "Greetings", mapping={"prompt": "question", "completion": "answer"}
        )
        assert (made["format"], made["row_count"], made["source_format"]) == (
            "prompt_completion",
            1,
            "csv",
        )
        assert made["preview"] == [{"prompt": "hi", "completion": "hello"}]
        chat = {
            "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        }
        second = bg.upload_dataset(json.dumps(chat).encode(), "Chat", format="chat")
        assert second["format"] == "chat"
        assert {d["id"] for d in bg.datasets()} == {made["id"], second["id"]}
        assert bg.get_dataset(made["id"])["name"] == "Greetings"


def test_errors_by_line_scope_and_owner(server: TestClient, world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    with connect(server, world.token(ana, ["read", "train"])) as bg:
        with pytest.raises(InvalidInput) as caught:
            bg.upload_dataset(b'{"prompt": "x", "completion": "y"}\n{"prompt": 1}\n', "Bad")
        assert caught.value.errors[0]["loc"] == ["body", "file", 2, "prompt"]
        assert bg.datasets() == []
        made = bg.upload_dataset(json.dumps(PAIRS[0]).encode(), "Good")
    with connect(server, world.token(ana, ["read"])) as bg, pytest.raises(PermissionDenied):
        bg.upload_dataset(json.dumps(PAIRS[0]).encode(), "No scope")
    with connect(server, world.token(bob, ["read", "train"])) as bg:
        with pytest.raises(NotFound):
            bg.get_dataset(made["id"])
        assert bg.datasets() == []
