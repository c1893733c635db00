"""Datasets: each format is read and stored normalised; bad rows are named by line and nothing
is stored; only the owner knows a dataset exists; deletion is for the web app."""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, NotFound, PermissionDenied
from benchgen.core.permissions import PrincipalKind, Scope
from benchgen.db.tables import Dataset
from benchgen.services._artifacts import store_for
from benchgen.services.datasets import datasets
from benchgen.services.runtime import Runtime
from tests.support import World

CHAT = [
    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]},
    {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4"},
        ]
    },
]
PAIRS = [
    {"prompt": "Capital of France?", "completion": "Paris"},
    {"prompt": "1+1", "completion": "2"},
]


def jsonl(rows: list[Any]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def parquet(rows: list[dict[str, Any]]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    return sink.getvalue()


def upload(
    world: World, who: Principal, data: bytes, name: str = "d.jsonl", **spec: Any
) -> datasets.DatasetView:
    return world.do(who, datasets.upload_dataset, data, name, {"name": "Mine", **spec})


def stored(world: World) -> int:
    return world.ctx_call(
        Principal.cli(None), lambda ctx: ctx.session.scalar(select(func.count(Dataset.id)))
    )


def test_every_bad_line_is_reported_whether_or_not_it_is_json(world: World) -> None:
    """The page promises each bad row with its line: a line that is no JSON does not hide the
    problems of the rows around it."""
    ana = world.user("ana@example.com")
    content = b'{"prompt": "hi", "completion": "there"}\n{"prompt": "x"}\nnot json\n'
    with pytest.raises(InvalidInput) as caught:
        upload(world, Principal.web(ana), content)
    assert [problem["loc"][:2] for problem in caught.value.errors] == [["file", 2], ["file", 3]]
    assert stored(world) == 0


def test_chat_jsonl_is_counted_previewed_and_stored_normalised(
    world: World, runtime: Runtime
) -> None:
    me = Principal.web(world.user("ana@example.com"))
    made = upload(world, me, jsonl(CHAT))
    assert made.id.startswith("ds_")
    assert (made.format, made.source_format, made.row_count) == ("chat", "jsonl", 2)
    # (2 + 6) + (9 + 4 + 1) characters, each row rounded up after dividing by four.
    assert made.token_estimate == 2 + 4
    assert made.preview == CHAT
    key = f"datasets/{made.id}/data.jsonl"
    content = store_for(runtime.settings).read_bytes(key)
    assert [json.loads(line) for line in content.decode().splitlines()] == CHAT
    assert made.size == len(content)
    assert world.do(me, datasets.dataset_records, made.id) == CHAT


def test_prompt_completion_jsonl_is_found_by_its_fields(world: World) -> None:
    me = Principal.web(world.user("ana@example.com"))
    made = upload(world, me, jsonl(PAIRS))
    assert (made.format, made.row_count) == ("prompt_completion", 2)
    assert world.do(me, datasets.dataset_records, made.id) == PAIRS


def test_csv_with_mapped_columns(world: World) -> None:
    me = Principal.web(world.user("ana@example.com"))
    data = b'question,answer\n"Capital of France?",Paris\n1+1,2\n'
    made = upload(world, me, data, "d.csv", mapping={"prompt": "question", "completion": "answer"})
    assert (made.format, made.source_format, made.row_count) == ("prompt_completion", "csv", 2)
    assert world.do(me, datasets.dataset_records, made.id) == PAIRS


def test_parquet_with_a_mapping_to_chat_messages(world: World) -> None:
    me = Principal.web(world.user("ana@example.com"))
    rows = [{"conversation": row["messages"], "id": n} for n, row in enumerate(CHAT)]
    made = upload(world, me, parquet(rows), "d.parquet", mapping={"messages": "conversation"})
    assert (made.format, made.source_format) == ("chat", "parquet")
    assert world.do(me, datasets.dataset_records, made.id) == CHAT


def test_bad_rows_are_named_by_line_and_nothing_is_stored(world: World, runtime: Runtime) -> None:
    me = Principal.web(world.user("ana@example.com"))
    rows = [
        CHAT[0],
        {"messages": [{"role": "robot", "content": "x"}]},
        {"messages": [{"role": "user", "content": "no answer"}]},
        {"messages": "hello"},
    ]
    with pytest.raises(InvalidInput) as caught:
        upload(world, me, jsonl(rows), format="chat")
    assert [problem["loc"] for problem in caught.value.errors] == [
        ["file", 2, "messages", 0, "role"],
        ["file", 3, "messages"],
        ["file", 4, "messages"],
    ]
    assert caught.value.message.startswith("line 2.messages.0.role: must be one of")
    assert stored(world) == 0
    assert store_for(runtime.settings).keys("datasets") == []


def test_a_missing_completion_and_a_broken_line(world: World) -> None:
    me = Principal.web(world.user("ana@example.com"))
    with pytest.raises(InvalidInput) as caught:
        upload(world, me, jsonl([PAIRS[0], {"prompt": "only"}]))
    assert caught.value.errors[0]["loc"] == ["file", 2, "completion"]
    broken = jsonl(PAIRS) + b"{not json\n"
    with pytest.raises(InvalidInput) as caught:
        upload(world, me, broken)
    assert caught.value.errors[0]["loc"] == ["file", 3]
    with pytest.raises(InvalidInput) as caught:
        upload(world, me, "prompt,completion\nhi,\u202eevil\n".encode(), "d.csv")
    assert caught.value.errors[0]["loc"] == ["file", 2, "completion"]
    assert stored(world) == 0


def test_too_large_is_refused_before_reading(world: World, runtime: Runtime) -> None:
    runtime.settings = runtime.settings.model_copy(update={"max_dataset_bytes": 1024})
    me = Principal.web(world.user("ana@example.com"))
    with pytest.raises(InvalidInput, match="larger than 1024 bytes"):
        upload(world, me, jsonl(PAIRS * 40))
    assert stored(world) == 0


def test_empty_and_unreadable_files(world: World) -> None:
    me = Principal.web(world.user("ana@example.com"))
    with pytest.raises(InvalidInput, match="no rows"):
        upload(world, me, b"\n\n")
    with pytest.raises(InvalidInput, match="not a readable parquet"):
        upload(world, me, b"not parquet", format="parquet")


def test_only_the_owner_knows_a_dataset_exists(world: World) -> None:
    ana = Principal.web(world.user("ana@example.com"))
    bob = Principal.web(world.user("bob@example.com"))
    made = upload(world, ana, jsonl(PAIRS))
    assert [found.id for found in world.do(ana, datasets.list_datasets)] == [made.id]
    assert world.do(bob, datasets.list_datasets) == []
    for call in (datasets.get_dataset, datasets.dataset_records, datasets.delete_dataset):
        with pytest.raises(NotFound):
            world.do(bob, call, made.id)
    assert world.do(ana, datasets.get_dataset, made.id).name == "Mine"


def test_upload_through_a_token_needs_the_train_scope(world: World) -> None:
    ana = world.user("ana@example.com")
    reader = world.principal(PrincipalKind.API, ana, frozenset({Scope.READ}))
    with pytest.raises(PermissionDenied, match="'train' scope"):
        upload(world, reader, jsonl(PAIRS))
    trainer = world.principal(PrincipalKind.API, ana, frozenset({Scope.TRAIN, Scope.READ}))
    made = upload(world, trainer, jsonl(PAIRS))
    assert world.do(reader, datasets.get_dataset, made.id).row_count == 2


def test_deletion_is_web_only_and_removes_the_file(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    made = upload(world, Principal.web(ana), jsonl(PAIRS))
    for kind in (PrincipalKind.API, PrincipalKind.AGENT):
        with pytest.raises(PermissionDenied) as caught:
            world.do(world.principal(kind, ana), datasets.delete_dataset, made.id)
        assert caught.value.details["page"] == f"/datasets/{made.id}"
    world.do(Principal.web(ana), datasets.delete_dataset, made.id)
    with pytest.raises(NotFound):
        world.do(Principal.web(ana), datasets.get_dataset, made.id)
    assert store_for(runtime.settings).keys("datasets") == []
