"""A leaderboard's order in SQL: each column its own way with missing scores last, then the
earlier run, then the run id (byte by byte); a page of it starts after the standing of the last
row seen."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Float, Subquery, Text, and_, case, cast, collate, func, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.elements import ColumnElement

from benchgen.core.errors import invalid
from benchgen.db.tables import LeaderboardEntry, Model, Run, User


class Ranked(Protocol):
    """What the order needs to know of a leaderboard column."""

    @property
    def key(self) -> str:
        """Its key in the runs' scores."""

    @property
    def sorting(self) -> str:
        """`asc` (lower is better) or `desc`."""

    @property
    def hidden(self) -> bool:
        """Whether it ranks without being shown: its scores never leave the service."""


@dataclass(frozen=True)
class Standing:
    """Where a run stands: its score in each ranking column (None: missing; a hidden column's
    is None too in the standings `ranked_entries` returns, which cursors carry to clients),
    when it finished (None: never), and its id (the last tie-break)."""

    scores: tuple[float | None, ...]
    finished_at: datetime | None
    run_id: str


@dataclass(frozen=True)
class Entry:
    """A ranked run with its model's name, who launched it, its rank and its standing."""

    run: Run
    model_name: str | None
    submitted_by: str
    rank: int
    standing: Standing


def ranked_entries(
    session: Session,
    phase_id: str,
    columns: Sequence[Ranked],
    limit: int | None,
    after: Standing | None,
) -> list[Entry]:
    """The phase's leaderboard entries in rank order, `limit` of them (all when None) after
    `after` when given, in one query whatever their number.

    Ranks are counted over the whole phase (a window over every entry), so a later page goes
    on numbering where the earlier one stopped.

    Raises:
        InvalidInput: `after` names a run no longer on a board that ranks by hidden columns.
    """
    dialect = session.get_bind().dialect.name
    scores = [_score(column.key, dialect) for column in columns]
    order: list[Any] = []
    for score, column in zip(scores, columns, strict=True):
        order += [score.is_(None), score.asc() if column.sorting == "asc" else score.desc()]
    order += [Run.finished_at.is_(None), Run.finished_at, _bytewise(Run.id, dialect)]
    board = (
        select(
            Run.id.label("run_id"),
            Run.finished_at.label("finished_at"),
            *(score.label(f"score_{index}") for index, score in enumerate(scores)),
            func.row_number().over(order_by=order).label("rank"),
        )
        .join(LeaderboardEntry, LeaderboardEntry.run_id == Run.id)
        .where(LeaderboardEntry.phase_id == phase_id)
        .subquery()
    )
    placed = [board.c[f"score_{index}"] for index in range(len(columns))]
    query = (
        select(Run, Model.name, User.display_name, board.c.rank, *placed)
        .join(board, board.c.run_id == Run.id)
        .outerjoin(Model, Model.id == Run.model_id)
        .join(User, User.id == Run.launched_by)
        .order_by(board.c.rank)
        .limit(limit)
    )
    if after is not None:
        anchored = _anchored(session, board, columns, after)
        query = query.where(_after(board, columns, anchored, dialect))
    return [
        Entry(run, name, who, rank, Standing(_shown(columns, values), run.finished_at, run.id))
        for run, name, who, rank, *values in session.execute(query)
    ]


def _shown(columns: Sequence[Ranked], values: Sequence[Any]) -> tuple[float | None, ...]:
    return tuple(None if c.hidden else value for c, value in zip(columns, values, strict=True))


def _anchored(
    session: Session, board: Subquery, columns: Sequence[Ranked], after: Standing
) -> Standing:
    """`after` with the scores its cursor leaves out read from its run's row on the board:
    each hidden column's, and each it carries as None (missing, or hidden from that run's
    viewers because the bundle version that scored it hid the column).

    A cursor comes back from the client: a hidden score it carried could be read by anyone,
    and a forged one would let them search out a run's hidden score from which rows follow.
    So it carries none, and this takes them from the run itself.

    Raises:
        InvalidInput: the run is no longer on a board that ranks by hidden columns (removed
            since the page was read); on other boards a None it carries is taken as missing.
    """
    unknown = [c.hidden or given is None for c, given in zip(columns, after.scores, strict=True)]
    if not any(unknown):
        return after
    placed = [board.c[f"score_{index}"] for index in range(len(columns))]
    stored = session.execute(select(*placed).where(board.c.run_id == after.run_id)).first()
    if stored is None:
        if any(column.hidden for column in columns):
            raise invalid(["cursor"], "names a run no longer on this leaderboard; start over")
        return after
    scores = zip(unknown, after.scores, stored, strict=True)
    filled = tuple(own if read else given for read, given, own in scores)
    return Standing(filled, after.finished_at, after.run_id)


def _score(key: str, dialect: str) -> ColumnElement[Any]:
    """A run's score in column `key` as an SQL number; NULL when absent or not a number.

    Read with the database's own JSON functions and a bound key, never a JSON path written
    with the key inside: a bundle's column keys are free text.
    """
    if dialect == "postgresql":
        pairs = func.json_each(Run.scores).table_valued("key", "value")
        number = func.json_typeof(pairs.c.value) == "number"
        found = select(cast(cast(pairs.c.value, Text), Float)).where(pairs.c.key == key, number)
        return found.scalar_subquery()
    items = func.json_each(Run.scores).table_valued("key", "value", "type")
    found = select(items.c.value).where(items.c.key == key, items.c.type.in_(["integer", "real"]))
    # SQLite's JSON functions fail the whole query on text they cannot read (a NaN Python
    # wrote): such scores are missing, as they were when Python ranked the board.
    return case((func.json_valid(Run.scores) == 1, found.scalar_subquery()))


def _bytewise(
    column: ColumnElement[str] | InstrumentedAttribute[str], dialect: str
) -> ColumnElement[str]:
    """`column` compared byte by byte, as SQLite and Python compare text: a PostgreSQL made
    with a language's collation (en_US: `a` before `B`) would break ties in another order."""
    return collate(column, "C" if dialect == "postgresql" else "BINARY")


def _after(
    board: Subquery, columns: Sequence[Ranked], after: Standing, dialect: str
) -> ColumnElement[bool]:
    """The rows ranked after `after`: later in the first part of the order where they differ.

    Each part is (missing last, then the value its own way); built from the last part (the
    run id) outwards, a part's rows come after when missing where `after` has a value, beyond
    that value, or equal to it and after in the parts that follow.
    """
    later: ColumnElement[bool] = _bytewise(board.c.run_id, dialect) > after.run_id
    parts: list[tuple[ColumnElement[Any], bool, Any]] = [
        (board.c[f"score_{index}"], column.sorting == "asc", value)
        for index, (column, value) in enumerate(zip(columns, after.scores, strict=True))
    ]
    parts.append((board.c.finished_at, True, after.finished_at))
    for part, ascending, value in reversed(parts):
        if value is None:
            later = and_(part.is_(None), later)
        else:
            beyond = part > value if ascending else part < value
            later = or_(part.is_(None), beyond, and_(part == value, later))
    return later
