"""Ties on a leaderboard: equal scores and finish times fall back to the run id, compared byte
by byte on every database, whatever collation a PostgreSQL server was created with."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from benchgen.core.context import Context, Principal
from benchgen.db.tables import Benchmark, LeaderboardEntry, Run
from benchgen.services.runs import exports, leaderboards, standings
from benchgen.services.runs.leaderboards import Column
from benchgen.services.runtime import Runtime
from tests.support import OPERATOR, QA, World

pytestmark = pytest.mark.both_backends

# Upper case sorts before lower case byte by byte, after it in English: a tie broken by these
# ids put them in one order on SQLite and in the other on a PostgreSQL made with en_US.
IDS = ("run_a0000000000000000000", "run_B0000000000000000000", "run_c0000000000000000000")
ACCURACY = [Column("accuracy", "Accuracy")]


def _tied_board(world: World) -> tuple[str, str]:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    phase = world.do(Principal.web(ana), leaderboards.get_leaderboard, bm).phase_id
    when = datetime(2026, 1, 1, tzinfo=UTC)

    def place(ctx: Context) -> None:
        for run_id in IDS:
            ctx.session.add(_run(run_id, bm, phase, ana, when))
            ctx.session.flush()
            ctx.session.add(
                LeaderboardEntry(
                    id=f"lb_{run_id[4:]}",
                    benchmark_id=bm,
                    phase_id=phase,
                    run_id=run_id,
                    added_by=ana,
                    added_at=when,
                )
            )

    world.ctx_call(OPERATOR, place)
    return bm, phase


def _run(run_id: str, bm: str, phase: str, user: str, when: datetime) -> Run:
    return Run(
        id=run_id,
        benchmark_id=bm,
        phase_id=phase,
        model_id="mdl_builtin_echo",
        launched_by=user,
        door="web",
        status="completed",
        benchmark_version=1,
        question_count=2,
        scores={"accuracy": 0.5},
        created_at=when,
        finished_at=when,
    )


@contextmanager
def _english_ids(runtime: Runtime) -> Iterator[Session]:
    """A session where run ids compare as English text does (PostgreSQL), undone after."""
    session = runtime.database.session()
    try:
        if session.get_bind().dialect.name == "postgresql":
            session.execute(
                text('ALTER TABLE runs ALTER COLUMN id TYPE varchar(40) COLLATE "en-US-x-icu"')
            )
        yield session
    finally:
        session.rollback()
        session.close()


def test_ties_break_by_run_id_byte_by_byte_on_every_database(
    world: World, runtime: Runtime
) -> None:
    _, phase = _tied_board(world)
    expected = sorted(IDS)  # Python's order: byte by byte
    assert expected[0] == "run_B0000000000000000000"
    with _english_ids(runtime) as session:
        found = standings.ranked_entries(session, phase, ACCURACY, None, None)
        assert [entry.run.id for entry in found] == expected
        assert [entry.rank for entry in found] == [1, 2, 3]
        # A page after the first row goes on with the second, in the same order.
        after = standings.ranked_entries(session, phase, ACCURACY, 1, found[0].standing)
        assert [entry.run.id for entry in after] == expected[1:2]


def test_a_score_that_is_no_number_is_missing_in_every_download(
    world: World, runtime: Runtime
) -> None:
    """It ranked last as missing, yet the JSON download wrote NaN (no JSON reader takes it)
    and the CSV `nan`; only SQLite stores one (PostgreSQL refuses NaN in JSON)."""
    if runtime.database.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL cannot store a NaN in JSON")
    bm, _ = _tied_board(world)

    def spoil(ctx: Context) -> None:
        for run_id, score in zip(IDS, (float("nan"), True, "0.9"), strict=True):
            run = ctx.session.get(Run, run_id)
            assert run is not None
            run.scores = {"accuracy": score}

    world.ctx_call(OPERATOR, spoil)
    ana = Principal.web(world.ctx_call(OPERATOR, lambda ctx: _owner(ctx, bm)))
    _, document = world.do(ana, exports.export_leaderboard, bm, "json")
    rows = json.loads(document, parse_constant=_refuse)["rows"]
    assert [row["scores"] for row in rows] == [{"accuracy": None}] * 3
    _, table = world.do(ana, exports.export_leaderboard, bm, "csv")
    assert [row["Accuracy"] for row in csv.DictReader(io.StringIO(table))] == [""] * 3


def _owner(ctx: Context, bm: str) -> str:
    benchmark = ctx.session.get(Benchmark, bm)
    assert benchmark is not None
    return benchmark.owner_id


def _refuse(constant: str) -> None:
    raise AssertionError(f"{constant} is no JSON")
