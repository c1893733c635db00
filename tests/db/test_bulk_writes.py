"""`execute_many` binds each row's values by name, whatever order the statement needs them in."""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam, select, update

from benchgen.core.context import Context
from benchgen.db.session import execute_many
from benchgen.db.tables import Benchmark
from tests.support import OPERATOR, World

# The statement binds the title and description first and the id last (SET before WHERE).
RENAME = (
    update(Benchmark)
    .where(Benchmark.id == bindparam("b_id"))
    .values(title=bindparam("b_title"), description=bindparam("b_text"))
)


def _titles(world: World, ids: list[str]) -> list[tuple[str, str]]:
    def read(ctx: Context) -> list[tuple[str, str]]:
        rows = ctx.session.execute(
            select(Benchmark.id, Benchmark.title, Benchmark.description).where(
                Benchmark.id.in_(ids)
            )
        )
        by_id = {row.id: (row.title, row.description) for row in rows}
        return [by_id[i] for i in ids]

    return world.ctx_call(OPERATOR, read)


@pytest.mark.both_backends
@pytest.mark.parametrize(
    "names",
    [("b_title", "b_text", "b_id"), ("b_id", "b_title", "b_text"), ("b_text", "b_id", "b_title")],
)
def test_each_value_lands_in_its_named_column(world: World, names: tuple[str, ...]) -> None:
    ana = world.user("ana@example.com")
    ids = [world.benchmark(ana) for _ in range(3)]
    wanted = {
        i: {"b_id": i, "b_title": f"Title {n}", "b_text": f"Text {n}"} for n, i in enumerate(ids)
    }
    rows = [tuple(values[name] for name in names) for values in wanted.values()]
    world.ctx_call(OPERATOR, lambda ctx: execute_many(ctx.session, RENAME, names, rows))
    assert _titles(world, ids) == [(f"Title {n}", f"Text {n}") for n in range(3)]


@pytest.mark.both_backends
def test_a_statement_with_one_parameter_takes_that_value_of_each_row(world: World) -> None:
    ana = world.user("ana@example.com")
    ids = [world.benchmark(ana) for _ in range(2)]
    before = _titles(world, ids)
    copy = (
        update(Benchmark)
        .where(Benchmark.id == bindparam("b_id"))
        .values(description=Benchmark.title)
    )
    rows = [("ignored", i) for i in ids]
    world.ctx_call(OPERATOR, lambda ctx: execute_many(ctx.session, copy, ("b_title", "b_id"), rows))
    assert _titles(world, ids) == [(title, title) for title, _ in before]
