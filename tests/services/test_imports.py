"""Import service: access is checked before the file is read, and every unreadable file is an
InvalidInput naming its line (never a crash)."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, PermissionDenied
from benchgen.core.permissions import PrincipalKind, Scope
from benchgen.services.benchmarks import imports
from tests.support import World

GOOD_LINE = '{"prompt": "2+2?", "answer": "4"}'
DEEP = "[" * 100_000 + "]" * 100_000


def spec(content: str, content_format: str = "jsonl") -> dict[str, Any]:
    return {"title": "File", "format": "qa", "content_format": content_format, "content": content}


def refused_at(world: World, principal: Principal, data: dict[str, Any], line: int) -> str:
    with pytest.raises(InvalidInput) as caught:
        world.do(principal, imports.import_benchmark, data)
    assert caught.value.errors[0]["loc"] == ["content", line]
    assert caught.value.message.startswith(f"content line {line}: ")
    return caught.value.errors[0]["msg"]


@pytest.fixture
def ana(world: World) -> Principal:
    return Principal.web(world.user("ana@example.com"))


def test_deeply_nested_json_is_refused_at_its_line(world: World, ana: Principal) -> None:
    assert refused_at(world, ana, spec(f"{GOOD_LINE}\n{DEEP}\n"), 2) == "nested too deeply"
    nested_field = '{"prompt": "p", "answer": "a", "metadata": ' + DEEP + "}"
    assert refused_at(world, ana, spec(f"{GOOD_LINE}\n\n{nested_field}"), 3) == "nested too deeply"


def test_a_csv_field_past_the_csv_modules_limit_is_read_and_checked_as_a_field(
    world: World, ana: Principal
) -> None:
    """The csv module refuses a cell past 131,072 characters unless told otherwise: the answer
    is read, and refused as too long at its own field, as in JSON lines."""
    content = f"prompt,answer\nOne?,1\nTwo?,{'x' * 200_000}\n"
    with pytest.raises(InvalidInput) as caught:
        world.do(ana, imports.import_benchmark, spec(content, "csv"))
    assert caught.value.errors[0]["loc"][:3] == ["content", 3, "answer"]
    assert "field limit" not in caught.value.message


def test_a_bad_csv_record_is_refused_at_its_line(world: World, ana: Principal) -> None:
    content = 'prompt,answer\nOne?,1\nTwo?,"x"y\n'
    assert "not valid CSV" in refused_at(world, ana, spec(content, "csv"), 3)


def test_csv_lines_count_physical_lines_across_quoted_newlines(
    world: World, ana: Principal
) -> None:
    # The first record spans lines 2-4, so the bad record sits on line 5, record 3.
    content = 'prompt,answer\n"One\nand\nmore?",1\nTwo?,"x"y\n'
    refused_at(world, ana, spec(content, "csv"), 5)


def test_a_line_separator_inside_a_json_string_is_not_a_line_break(
    world: World, ana: Principal
) -> None:
    content = '{"prompt": "one\u2028two?", "answer": "x"}\n' + GOOD_LINE
    created = world.do(ana, imports.import_benchmark, spec(content))
    assert created.benchmark.question_count == 2


def test_permission_is_checked_before_the_file_is_read(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    bo = world.user("bo@example.com")
    reader = world.principal(PrincipalKind.API, bo, frozenset({Scope.READ}))

    def never(_: str) -> list[dict[str, Any]]:
        raise AssertionError("the file was read before access was checked")

    monkeypatch.setattr(imports, "_jsonl", never)
    monkeypatch.setattr(imports, "_csv", never)
    for data in (spec(DEEP), spec("prompt,answer\nOne?," + "x" * 200_000, "csv")):
        with pytest.raises(PermissionDenied):
            world.do(reader, imports.import_benchmark, data)


@pytest.mark.parametrize("content_format", ["csv", "jsonl"])
def test_a_bad_question_is_placed_at_its_content_line(
    world: World, ana: Principal, content_format: str
) -> None:
    rows = {
        "csv": 'prompt,answer\nq1,a1\n"multi\nline",x\nq3,\n',
        "jsonl": f'{GOOD_LINE}\n\n{GOOD_LINE}\n\n{{"prompt": "q3", "answer": ""}}\n',
    }
    with pytest.raises(InvalidInput) as caught:
        world.do(ana, imports.import_benchmark, spec(rows[content_format], content_format))
    assert caught.value.errors[0]["loc"] == ["content", 5, "answer"]
    assert caught.value.message.startswith("line 5.answer: ")


def test_a_leading_byte_order_mark_is_not_part_of_the_header(world: World, ana: Principal) -> None:
    created = world.do(ana, imports.import_benchmark, spec("\ufeffprompt,answer\nq,a\n", "csv"))
    assert created.benchmark.question_count == 1


def test_an_unclosed_quote_is_refused_where_its_record_starts(world: World, ana: Principal) -> None:
    content = 'prompt,answer\nq,a\n"a,b\nc,d\n'
    assert "never closed" in refused_at(world, ana, spec(content, "csv"), 3)


def test_a_repeated_column_or_key_is_refused_at_its_line(world: World, ana: Principal) -> None:
    """The reader would keep the last of them and drop the others without a word."""
    content = "prompt,answer,answer\nq,a,b\n"
    assert refused_at(world, ana, spec(content, "csv"), 1) == "the column 'answer' appears twice"
    content = f'{GOOD_LINE}\n{{"prompt": "q", "answer": "a", "answer": "b", "answer": "c"}}\n'
    assert refused_at(world, ana, spec(content), 2) == "the key 'answer' appears 3 times"


def test_blank_named_columns_may_repeat(world: World, ana: Principal) -> None:
    """Spreadsheets export trailing empty columns; no mapping can name a blank column."""
    created = world.do(ana, imports.import_benchmark, spec("prompt,answer,,\nq,a,,\n", "csv"))
    assert created.benchmark.question_count == 1


def test_a_header_with_another_separator_is_named_with_what_it_has(
    world: World, ana: Principal
) -> None:
    content = "prompt;answer\nq;a\nr;b\n"
    assert refused_at(world, ana, spec(content, "csv"), 1) == (
        "the header needs the columns prompt, answer; it has 'prompt;answer' "
        "(columns must be separated by commas, not semicolons)"
    )


@pytest.mark.parametrize("name", ["q.jsonl", "q.csv"])
def test_a_file_whose_rows_hold_the_parts_under_other_names_says_how_to_map_them(
    world: World, ana: Principal, name: str
) -> None:
    """Each line said "the field 'prompt' is missing", a hundred times, and no word of
    mapping; a header said only which columns it lacked."""
    data = {
        "q.jsonl": b'{"question": "2+2?", "answer": "4"}\n{"question": "3+3?", "answer": "6"}\n',
        "q.csv": b"question,answer\n2+2?,4\n3+3?,6\n",
    }[name]
    with pytest.raises(InvalidInput) as caught:
        world.do(ana, imports.import_file, data, name, {"title": "Sums"})
    [problem] = caught.value.errors
    assert problem["loc"] == ["file", 1]
    assert problem["msg"] == (
        "no row has the field 'prompt'; rows have 'question', 'answer': map them: "
        '"mapping": {"prompt": "question"} (CLI: --map prompt=question)'
    )
    mapped = {"title": "Sums", "mapping": {"prompt": "question"}}
    assert world.do(ana, imports.import_file, data, name, mapped).benchmark.question_count == 2


def test_rows_with_no_field_to_map_name_the_part_they_lack(world: World, ana: Principal) -> None:
    data = b'{"prompt": "2+2?", "reply": "4"}\n'
    with pytest.raises(InvalidInput) as caught:
        world.do(ana, imports.import_file, data, "q.jsonl", {"title": "Sums"})
    [problem] = caught.value.errors
    assert problem["msg"] == (
        "no row has the field 'answer'; rows have 'prompt', 'reply': map one of them: "
        '"mapping": {"answer": "FIELD"} (CLI: --map answer=FIELD)'
    )


def test_the_import_limit_holds_at_the_service(world: World, ana: Principal) -> None:
    """Only the API's body limit applied it: the CLI's `--as` and the web form read whatever
    file they were given."""
    world.rt.settings = world.rt.settings.model_copy(update={"max_import_bytes": 100})
    content = "\n".join([GOOD_LINE] * 4)  # 135 bytes
    said = "is larger than 100 bytes (BENCHGEN_MAX_IMPORT_BYTES)"
    with pytest.raises(InvalidInput) as typed:
        world.do(ana, imports.import_benchmark, spec(content))
    assert typed.value.errors == [{"loc": ["content"], "msg": said}]
    file_spec = {"title": "File", "format": "qa"}
    with pytest.raises(InvalidInput) as uploaded:
        world.do(ana, imports.import_file, content.encode(), "q.jsonl", file_spec)
    assert uploaded.value.errors == [{"loc": ["file"], "msg": said}]
    assert world.do(ana, imports.import_benchmark, spec(GOOD_LINE)).benchmark.title == "File"
