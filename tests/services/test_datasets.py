"""Datasets: each format is read and stored normalised; bad rows are named by line and nothing
is stored; only the owner knows a dataset exists; deletion is for the web app."""

from __future__ import annotations

import io
import json
import zipfile
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


@pytest.mark.parametrize("name", ["d.jsonl", "upload"])
def test_csv_read_as_json_lines_is_said_to_look_like_csv(world: World, name: str) -> None:
    ana = world.user("ana@example.com")
    content = b"prompt,completion\nCapital of France?,Paris\n1+1,2\n"
    with pytest.raises(InvalidInput) as caught:
        upload(world, Principal.web(ana), content, name)
    first = caught.value.errors[0]
    assert first["loc"][:2] == ["file", 1]
    assert first["msg"].startswith("not valid JSON") and "this looks like CSV" in first["msg"]
    assert not any("looks like CSV" in problem["msg"] for problem in caught.value.errors[1:])
    # A JSON lines file with a broken line is not called CSV.
    broken = b'{"prompt": "hi", "completion": "there"}\nnot, json\n'
    with pytest.raises(InvalidInput) as caught:
        upload(world, Principal.web(ana), broken)
    assert "CSV" not in caught.value.errors[0]["msg"]


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


def test_a_csv_cell_past_the_csv_modules_default_limit_is_read_as_jsonl_would_be(
    world: World,
) -> None:
    me = Principal.web(world.user("ana@example.com"))
    document = "word " * 40_000  # 200,000 characters: a long source text to learn from
    data = f'prompt,completion\n"{document}",Summary\n'.encode()
    made = upload(world, me, data, "d.csv")
    assert made.row_count == 1
    assert world.do(me, datasets.dataset_records, made.id) == [
        {"prompt": document, "completion": "Summary"}
    ]


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


@pytest.fixture
def me(world: World) -> Principal:
    return Principal.web(world.user("ana@example.com"))


def refused(world: World, me: Principal, data: bytes, name: str, **spec: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        upload(world, me, data, name, **spec)
    assert stored(world) == 0
    return caught.value


def test_a_repeated_csv_column_or_json_key_is_refused_not_half_dropped(
    world: World, me: Principal
) -> None:
    wrong = refused(world, me, b"prompt,completion,completion\nhi,one,two\n", "d.csv")
    assert wrong.errors == [{"loc": ["file", 1], "msg": "the column 'completion' appears twice"}]
    assert wrong.message == "file line 1: the column 'completion' appears twice"
    data = jsonl(PAIRS) + b'{"prompt": "a", "prompt": "b", "completion": "c"}\n'
    wrong = refused(world, me, data, "d.jsonl")
    assert wrong.errors == [{"loc": ["file", 3], "msg": "the key 'prompt' appears twice"}]
    assert wrong.message == "line 3: the key 'prompt' appears twice"
    nested = b'{"messages": [{"role": "user", "role": "assistant", "content": "x"}]}\n'
    assert refused(world, me, nested, "d.jsonl").errors[0]["msg"] == "the key 'role' appears twice"


@pytest.mark.parametrize(
    ("data", "has", "hint"),
    [
        (
            b"prompt\tcompletion\nhi\tthere\na\tb\n",
            r"'prompt\tcompletion'",
            " (columns must be separated by commas, not tabs; a file named .tsv is read with tabs)",
        ),
        (
            b"prompt;completion\nhi;there\na;b\n",
            "'prompt;completion'",
            " (columns must be separated by commas, not semicolons)",
        ),
        (
            b"Prompt, completion\nhi,there\na,b\n",
            "'Prompt', ' completion'",
            " (names must match exactly: capitals and spaces count)",
        ),
        (b"question,reply\nhi,there\na,b\n", "'question', 'reply'", ""),
    ],
)
def test_a_wrong_csv_header_is_one_problem_at_line_1(
    world: World, me: Principal, data: bytes, has: str, hint: str
) -> None:
    """Not one "field missing" on every data row: the header is named with what it holds."""
    wrong = refused(world, me, data, "d.csv")
    message = f"the header needs the columns prompt, completion; it has {has}{hint}"
    assert wrong.errors == [{"loc": ["file", 1], "msg": message}]
    assert wrong.message == f"file line 1: {message}"


def test_the_header_needs_the_mapped_or_chat_columns(world: World, me: Principal) -> None:
    mapped = {"prompt": "question", "completion": "answer"}
    wrong = refused(world, me, b"question,reply\nhi,there\n", "d.csv", mapping=mapped)
    assert wrong.errors[0]["msg"].startswith("the header needs the columns question, answer;")
    chat = {"messages": "conversation"}
    wrong = refused(world, me, b"prompt,completion\nhi,there\n", "d.csv", mapping=chat)
    assert wrong.errors[0]["msg"].startswith("the header needs the column conversation;")


def test_a_tsv_file_is_read_with_tabs(world: World, me: Principal) -> None:
    wrong = refused(world, me, b"prompt,completion\nhi,there\n", "d.tsv")
    assert wrong.errors[0]["msg"].endswith(
        " (columns must be separated by tabs, not commas; a file named .csv is read with commas)"
    )
    data = b"prompt\tcompletion\nCapital of France?\tParis\n1+1\t2\n"
    for chosen in ("auto", "csv"):
        made = upload(world, me, data, "d.TSV", format=chosen)
        assert (made.source_format, made.row_count) == ("tsv", 2)
        assert world.do(me, datasets.dataset_records, made.id) == PAIRS


def test_text_that_is_not_utf8_is_placed_at_its_line_and_column(
    world: World, me: Principal
) -> None:
    latin1 = "prompt,completion\nhi,there\ncafé,x\n".encode("latin-1")
    wrong = refused(world, me, latin1, "d.csv")
    message = (
        "not UTF-8 text at column 4 (byte 0xe9): the file may be Latin-1/Windows-1252 or "
        "UTF-16; save it as UTF-8"
    )
    assert wrong.errors == [{"loc": ["file", 3], "msg": message}]
    assert wrong.message == f"file line 3: {message}"
    # A byte-order mark is no column of the first line.
    assert refused(world, me, b"\xef\xbb\xbf\xe9" + jsonl(PAIRS), "d.jsonl").errors[0]["loc"] == [
        "file",
        1,
    ]


def test_a_binary_file_is_named_no_text_not_utf16(world: World, me: Principal) -> None:
    """An image or a workbook has NULs in every other byte too: it was called UTF-16."""
    image = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 2 + b"\x00" * 600
    workbook = io.BytesIO()
    with zipfile.ZipFile(workbook, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>" * 40)
    said = {
        image: "holds binary data (an image, a document?), not text; save it as CSV UTF-8 or "
        "JSON Lines",
        workbook.getvalue(): "is a zip archive (an Excel workbook is one), not text; save it as "
        "CSV UTF-8 or JSON Lines",
    }
    for data, message in said.items():
        assert refused(world, me, data, "d.csv").errors == [{"loc": ["file"], "msg": message}]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_text_is_named_as_such(world: World, me: Principal, encoding: str) -> None:
    """Excel's "Unicode text" is UTF-16; without a byte-order mark its ASCII is valid UTF-8,
    one NUL in every other byte."""
    for name, content in (("d.csv", "prompt,completion\nhi,there\n"), ("d.jsonl", "{}\n")):
        wrong = refused(world, me, content.encode(encoding), name)
        message = "is UTF-16 text; save it as UTF-8 (in Excel: CSV UTF-8)"
        assert wrong.errors == [{"loc": ["file"], "msg": message}]


def test_a_number_past_the_digit_limit_is_a_problem_at_its_line(
    world: World, me: Principal
) -> None:
    """json refuses to convert an integer of more than 4,300 digits with a bare ValueError."""
    data = jsonl(PAIRS) + b'{"prompt": "a", "completion": "b", "n": %s}\n' % (b"1" * 5000)
    wrong = refused(world, me, data, "d.jsonl")
    assert wrong.errors == [
        {"loc": ["file", 3], "msg": "not valid JSON (a number has too many digits)"}
    ]


def test_a_conversation_that_opens_with_the_assistant_is_refused_at_its_line(
    world: World, me: Principal
) -> None:
    """Training takes what precedes an assistant turn as its prompt: a chat template cannot
    render nothing, so such a row would fail the job only once it ran."""
    opens = [{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Hi"}]
    data = jsonl([CHAT[0], {"messages": opens}])
    wrong = refused(world, me, data, "d.jsonl")
    assert wrong.errors == [
        {
            "loc": ["file", 2, "messages", 0, "role"],
            "msg": "the first message must be a system or user message, not assistant",
        }
    ]


def test_a_row_of_the_other_kind_is_named_as_such(world: World, me: Principal) -> None:
    mixed = refused(world, me, jsonl([CHAT[0], PAIRS[0], CHAT[1]]), "d.jsonl")
    assert mixed.errors == [
        {
            "loc": ["file", 2, "messages"],
            "msg": "is a prompt/completion row, but this dataset is chat (by the chosen format, "
            "the mapping or the first row): every row must be of one kind",
        }
    ]
    other = refused(world, me, jsonl([PAIRS[0], CHAT[0]]), "d.jsonl")
    assert other.errors[0]["loc"] == ["file", 2, "prompt"]
    assert other.errors[0]["msg"].startswith("is a chat row, but this dataset is prompt/completion")
