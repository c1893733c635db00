"""Imports keep each mcq answer on the choice the file meant: an answer that reads two ways, or
choices with a gap before a later one, are refused at their line rather than stored shifted."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.services.benchmarks import exports, imports
from tests.services.test_formats import do_import, jsonl, parquet, questions
from tests.support import World


def refused(world: World, user: str, data: bytes, name: str, **spec: object) -> dict[str, object]:
    with pytest.raises(InvalidInput) as caught:
        do_import(world, user, data, name, **spec)
    (problem,) = caught.value.errors
    return problem


def test_an_answer_that_is_a_position_and_another_choices_text_is_refused(world: World) -> None:
    ana = world.user("ana@example.com")
    numbers = b"prompt,choice_a,choice_b,choice_c,choice_d,answer\nWhich?,2,3,4,5,3\n"
    problem = refused(world, ana, numbers, "n.csv")
    assert problem["loc"] == ["file", 2, "answer"] and "answer_is" in str(problem["msg"])
    # One letter stays a letter, as the JSONL export writes keys, whatever the choices say.
    letters = {
        "title": "L",
        "format": "mcq",
        "questions": [{"prompt": "Q?", "choices": ["B", "A"], "answer": "A"}],
    }
    bm = world.benchmark(ana, letters)
    found = world.do(Principal.web(ana), exports.export_benchmark, bm, "jsonl")
    assert questions(world, ana, do_import(world, ana, found.data, "l.jsonl")) == questions(
        world, ana, bm
    )
    # Said how, each reading is taken; a position past the choices can only be the text.
    as_text = do_import(world, ana, numbers, "n.csv", mapping={"answer_is": "text"})
    beyond = b"prompt,choice_a,choice_b,answer\nWhich?,10,20,20\n"
    assert questions(world, ana, as_text)[0]["answer"] == "B"
    assert questions(world, ana, do_import(world, ana, beyond, "b.csv"))[0]["answer"] == "B"
    # A typed number is an index (MMLU's answer), and so is a whole float (a gappy Parquet
    # integer column); other digits than ASCII are no index and no crash.
    typed = [{"prompt": "Q?", "choices": ["1", "2", "3"], "answer": 2}]
    floats = [{"prompt": "Q?", "choices": ["x", "y"], "answer": 1.0}]
    assert questions(world, ana, do_import(world, ana, jsonl(typed), "t.jsonl"))[0]["answer"] == "C"
    assert (
        questions(world, ana, do_import(world, ana, parquet(floats), "f.parquet"))[0]["answer"]
        == "B"
    )
    superscript = jsonl([{"prompt": "Q?", "choices": ["x", "y"], "answer": "\u00b2"}])
    assert refused(world, ana, superscript, "s.jsonl")["loc"] == ["file", 1, "answer"]
    indexed = refused(world, ana, superscript, "s.jsonl", mapping={"answer_is": "index"})
    assert indexed["loc"] == ["file", 1, "answer"]


def test_a_gap_before_a_later_choice_is_refused_not_shifted(world: World) -> None:
    ana = world.user("ana@example.com")
    gap = b"prompt,choice_a,choice_b,choice_c,choice_d,answer\nQ?,x,,y,z,C\n"
    problem = refused(world, ana, gap, "g.csv")
    assert problem["loc"] == ["file", 2, "choices"] and "'choice_b'" in str(problem["msg"])
    missing_column = b"prompt,choice_a,choice_c,answer\nQ?,x,y,B\n"
    assert refused(world, ana, missing_column, "m.csv")["loc"] == ["file", 2, "choices"]
    content = "prompt,choice_a,choice_b,choice_c,choice_d,answer\nQ?,x,,y,z,C\n"
    spec = {"title": "T", "format": "mcq", "content_format": "csv", "content": content}
    with pytest.raises(InvalidInput) as caught:
        world.do(Principal.web(ana), imports.import_benchmark, spec)
    assert caught.value.errors[0]["loc"] == ["content", 2, "choices"]
    # Fewer choices than columns in a row is fine: trailing empty cells are no gap.
    fewer = b"prompt,choice_a,choice_b,choice_c,answer\nQ?,x,y,,B\n"
    (got,) = questions(world, ana, do_import(world, ana, fewer, "f.csv"))
    assert got["choices"] == {"A": "x", "B": "y"} and got["answer"] == "B"


def test_a_csv_with_carriage_returns_alone_as_line_ends_is_read(world: World) -> None:
    ana = world.user("ana@example.com")
    mac = b'prompt,answer\r"Two\rlines?",a\rC?,d\r'
    got = questions(world, ana, do_import(world, ana, mac, "mac.csv"))
    assert [(q["prompt"], q["answer"]) for q in got] == [("Two\rlines?", ["a"]), ("C?", ["d"])]


def test_choices_after_a_first_row_without_any_make_the_file_mcq(world: World) -> None:
    ana = world.user("ana@example.com")
    # Read as qa, the later row's choices were dropped and its key became the answer "B".
    rows = [
        {"prompt": "Q1?", "answer": "x"},
        {"prompt": "Q2?", "choices": ["p", "q"], "answer": "B"},
    ]
    assert refused(world, ana, jsonl(rows), "m.jsonl")["loc"] == ["file", 1, "choices"]
    csv = b"prompt,choice_a,choice_b,answer\nQ1?,,,x\nQ2?,p,q,B\n"
    assert refused(world, ana, csv, "m.csv")["loc"] == ["file", 2, "choices"]


def test_numbers_read_as_floats_keep_their_value_and_nan_is_refused(world: World) -> None:
    ana = world.user("ana@example.com")
    # A pandas integer column with a gap is floats: 4.0 is the answer 4, not "4.0".
    rows = [{"prompt": "2+2?", "answer": 4.0}, {"prompt": "Half?", "answer": 0.5}]
    got = questions(world, ana, do_import(world, ana, parquet(rows), "f.parquet"))
    assert [q["answer"] for q in got] == [["4"], ["0.5"]]
    missing = parquet([{"prompt": "Q?", "answer": float("nan")}])
    assert refused(world, ana, missing, "n.parquet")["loc"] == ["file", 1, "answer"]
