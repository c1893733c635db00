"""`json_rows` gives back every value as stored; `connection_apart` reads beside a writer."""

from __future__ import annotations

import json
import math
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import JSON, Column, Engine, Float, Integer, MetaData, Table, Text, select
from sqlalchemy import func as sql

from benchgen.db.json_rows import json_rows
from benchgen.db.session import connection_apart
from benchgen.db.tables import User
from benchgen.services.runtime import Runtime
from tests.support import World

PROBE = Table(
    "json_rows_probe",
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("number", Float),
    Column("words", Text),
    Column("doc", JSON),
)
# Doubles whose last bits a 15-digit rendering loses, and the edges of the range kept exact.
NUMBERS = [0.1, 2 / 3, 0.1 + 0.2, 1 / 3, 0.6666666666666666, 5e-324, 1e-310, -2.5e-8, 1e308]
NUMBERS += [0.0, 1.0, -1.0, 123456789.12345679, 9007199254740993.0]
WORDS = ["", 'a "quoted" \\ word', "line\nbreak\ttab\r", "é ſ 😀 \u2028 \x1f"]
NUL = "nul\x00byte"  # SQLite keeps it; PostgreSQL refuses to store it


@pytest.fixture
def engine(runtime: Runtime) -> Iterator[Engine]:
    engine = runtime.database.engine
    PROBE.create(engine)
    yield engine
    PROBE.drop(engine)


def _insert(engine: Engine, rows: list[dict[str, Any]]) -> None:
    with engine.begin() as connection:
        connection.execute(PROBE.insert(), rows)


def _read(engine: Engine, after: int = -1) -> list[list[Any]]:
    statement = select(PROBE.c.id, PROBE.c.number, PROBE.c.words, PROBE.c.doc).where(
        PROBE.c.id > after
    )
    with engine.connect() as connection:
        document = connection.execute(json_rows(statement, engine.dialect.name)).scalar_one()
    return sorted(json.loads(document))


@pytest.mark.both_backends
def test_every_value_comes_back_as_stored(engine: Engine) -> None:
    rng = random.Random(7)
    numbers = [*NUMBERS, *(-n for n in NUMBERS), *(rng.uniform(-1, 1) for _ in range(200))]
    words = [*WORDS, NUL] if engine.dialect.name == "sqlite" else WORDS
    docs: list[Any] = [{"A": -0.30000000000000004, "B": [1, "two", None]}, [0.1], "text", 7, None]
    rows = [
        {"id": i, "number": n, "words": words[i % len(words)], "doc": docs[i % len(docs)]}
        for i, n in enumerate(numbers)
    ]
    _insert(engine, rows)
    got = _read(engine)
    assert [row[0] for row in got] == [row["id"] for row in rows]
    for (_, number, words, doc), row in zip(got, rows, strict=True):
        assert (number, words, doc) == (row["number"], row["words"], row["doc"])
        assert isinstance(number, float), "a whole number stays a float"


@pytest.mark.both_backends
def test_nulls_and_numbers_beyond_the_range_come_as_null(engine: Engine) -> None:
    rows = [
        {"id": 1, "number": None, "words": None, "doc": None},
        {"id": 2, "number": math.inf, "words": "x", "doc": {}},
        {"id": 3, "number": -math.inf, "words": "y", "doc": []},
        {"id": 4, "number": 1.7976931348623157e308, "words": "z", "doc": 0.5},
    ]
    _insert(engine, rows)
    assert _read(engine) == [
        [1, None, None, None],
        [2, None, "x", {}],
        [3, None, "y", []],
        [4, None, "z", 0.5],
    ]


@pytest.mark.both_backends
def test_no_rows_make_an_empty_array(engine: Engine) -> None:
    _insert(engine, [{"id": 1, "number": 1.0, "words": "a", "doc": None}])
    assert _read(engine, after=1) == []


def test_a_connection_apart_reads_while_a_writer_holds_the_lock(
    runtime: Runtime, world: World
) -> None:
    world.user("ana@example.com")
    count = select(sql.count()).select_from(User)
    seen: list[int] = []

    def read_apart() -> None:
        with connection_apart(runtime.database.engine) as connection:
            seen.append(connection.execute(count).scalar_one())

    with runtime.database.session(write=True) as writer:
        before = writer.execute(count).scalar_one()  # SQLite's write lock is taken from here on
        reader = threading.Thread(target=read_apart, daemon=True)
        reader.start()
        reader.join(5)
        writer.rollback()
    # A connection apart that took the write lock too would still wait for the writer.
    assert seen == [before]
