"""Datasets uploaded with a format that does not fit the file: the refusal names the format
and the kind of file it is, not a JSON error at line 1 or "binary data"."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.services.datasets import datasets
from tests.support import World

CSV = b"prompt,completion\r\nCapital of France?,Paris\r\n"
JSONL = b'{"prompt": "Capital of France?", "completion": "Paris"}\n'


def _parquet() -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([{"prompt": "Q", "completion": "A"}]), sink)
    return sink.getvalue()


@pytest.fixture
def me(world: World) -> Principal:
    return Principal.web(world.user("ana@example.com"))


@pytest.mark.parametrize(
    ("data", "filename", "chosen", "message"),
    [
        (CSV, "pairs.csv", "prompt_completion", "this is a CSV file: choose csv or auto"),
        (CSV.replace(b",", b"\t"), "pairs.tsv", "chat", "this is a TSV file: choose csv"),
        (_parquet(), "pairs.parquet", "prompt_completion", "choose parquet or auto"),
        (_parquet(), "pairs.csv", "csv", "csv cannot read this parquet file"),
    ],
    ids=["csv-as-jsonl", "tsv-as-jsonl", "parquet-as-jsonl", "parquet-as-csv"],
)
def test_a_format_that_does_not_fit_the_file_is_named(
    world: World, me: Principal, data: bytes, filename: str, chosen: str, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        world.do(me, datasets.upload_dataset, data, filename, {"name": "D", "format": chosen})
    assert [problem["loc"] for problem in caught.value.errors] == [["format"]]
    assert world.do(me, datasets.list_datasets) == []


@pytest.mark.parametrize(
    ("data", "filename", "chosen"),
    [
        # JSON lines in a file named .csv are read as the JSON lines the format asks for.
        (JSONL, "pairs.csv", "prompt_completion"),
        (b"\xef\xbb\xbf\r\n" + JSONL, "pairs.csv", "prompt_completion"),
        (CSV, "pairs.csv", "auto"),
        (_parquet(), "pairs.parquet", "parquet"),
    ],
    ids=["jsonl-named-csv", "jsonl-with-bom-named-csv", "csv-auto", "parquet"],
)
def test_a_format_that_fits_is_read(
    world: World, me: Principal, data: bytes, filename: str, chosen: str
) -> None:
    made = world.do(me, datasets.upload_dataset, data, filename, {"name": "D", "format": chosen})
    assert made.row_count == 1


@pytest.mark.parametrize(
    ("chosen", "mapping", "loc"),
    [
        # Chat was read and the prompt mapping dropped without a word.
        ("auto", {"messages": "turns", "prompt": "question"}, ["mapping", "prompt"]),
        # The chosen format said prompt/completion; the rows were stored as chat.
        ("prompt_completion", {"messages": "turns"}, ["mapping", "messages"]),
        # Refused as rows without "messages", not as a mapping chat has no use for.
        ("chat", {"completion": "answer"}, ["mapping", "completion"]),
    ],
    ids=["both-kinds", "messages-for-pairs", "completion-for-chat"],
)
def test_a_mapping_of_the_other_kind_is_refused_at_its_field(
    world: World, me: Principal, chosen: str, mapping: dict[str, str], loc: list[str]
) -> None:
    chat = b'{"turns": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]}'
    spec = {"name": "D", "format": chosen, "mapping": mapping}
    with pytest.raises(InvalidInput) as caught:
        world.do(me, datasets.upload_dataset, chat + b"\n", "d.jsonl", spec)
    assert [problem["loc"] for problem in caught.value.errors] == [loc]
    assert world.do(me, datasets.list_datasets) == []


def test_a_repeated_parquet_column_is_refused_not_half_dropped(world: World, me: Principal) -> None:
    """A repeated CSV column or JSON key is refused; in Parquet the first column's cells were
    dropped and the last stored as the prompts."""
    columns = [pa.array(["kept?"]), pa.array(["A"]), pa.array(["dropped?"])]
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(columns, names=["prompt", "completion", "prompt"]), sink)
    with pytest.raises(InvalidInput, match="prompt"):
        world.do(me, datasets.upload_dataset, sink.getvalue(), "d.parquet", {"name": "D"})
