"""Database contents and data-dir files as one test left them, put back for the next tests.

Building a rich starting state through the services (users, a finished run, a bundle, a
dataset, a chat turn) takes most of a second; restoring it from a snapshot takes milliseconds.
Each test that restores a snapshot still gets its own database (a fresh SQLite copy, or the
session's PostgreSQL database emptied first) with exactly the rows and files the snapshot holds.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Table

from benchgen.db.tables import Base
from benchgen.services.runtime import Runtime


def _parents_first(table: Table, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` ordered so a row that refers to another row of its own table comes after it."""
    links = [
        (key.parent.name, key.column.name)
        for key in table.foreign_keys
        if key.column.table is table
    ]
    if not links:
        return rows
    placed: list[dict[str, Any]] = []
    known: dict[str, set[Any]] = {target: set() for _, target in links}
    waiting = list(rows)
    while waiting:
        ready = [
            row
            for row in waiting
            if all(row[source] is None or row[source] in known[target] for source, target in links)
        ]
        if not ready:  # a cycle, or a parent outside the snapshot: the database will say
            ready = waiting
        for row in ready:
            placed.append(row)
            for target in known:
                known[target].add(row[target])
        done = {id(row) for row in ready}
        waiting = [row for row in waiting if id(row) not in done]
    return placed


@dataclass(frozen=True)
class TableRows:
    """Every row of every table of the schema, read with the tables' own types."""

    rows: dict[str, list[dict[str, Any]]]

    @classmethod
    def capture(cls, engine: Engine) -> TableRows:
        with engine.connect() as conn:
            found = {
                table.name: [dict(row._mapping) for row in conn.execute(table.select())]
                for table in Base.metadata.sorted_tables
            }
        return cls(
            {
                table.name: _parents_first(table, found[table.name])
                for table in Base.metadata.sorted_tables
                if found[table.name]
            }
        )

    def restore(self, engine: Engine) -> None:
        """Empty every table (children first), then insert the captured rows (parents first),
        in one transaction. Sequences move on, as after any delete."""
        tables = Base.metadata.sorted_tables
        with engine.begin() as conn:
            for table in reversed(tables):
                conn.execute(table.delete())
            for table in tables:
                if self.rows.get(table.name):
                    conn.execute(table.insert(), self.rows[table.name])


_DATABASE_FILES = ("benchgen.db", "benchgen.db-wal", "benchgen.db-shm", "benchgen.db-journal")


@dataclass(frozen=True)
class Snapshot:
    """A runtime's rows and the files of its data dir (the SQLite file aside)."""

    tables: TableRows
    files: Path

    @classmethod
    def take(cls, runtime: Runtime, files: Path) -> Snapshot:
        """The rows of `runtime`'s database, and its data dir's files copied into `files`."""
        shutil.copytree(
            runtime.settings.data_dir,
            files,
            dirs_exist_ok=True,
            ignore=lambda _dir, names: [name for name in names if name in _DATABASE_FILES],
        )
        return cls(TableRows.capture(runtime.database.engine), files)

    def restore(self, runtime: Runtime) -> None:
        """Put the rows and files back into `runtime`'s own database and data dir."""
        self.tables.restore(runtime.database.engine)
        shutil.copytree(self.files, runtime.settings.data_dir, dirs_exist_ok=True)
