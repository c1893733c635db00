"""SQLite connections are kept for the next request, up to a busy server's concurrency."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event, text

from benchgen.db.session import Database


def test_connections_open_at_once_are_kept_for_the_next_ones(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'pool.db'}")
    opened: list[object] = []
    event.listen(database.engine, "connect", lambda conn, _: opened.append(conn))
    try:
        for _ in range(2):  # two bursts of 12 requests at once, as 8 clients and workers make
            sessions = [database.session(write=False) for _ in range(12)]
            for session in sessions:
                session.execute(text("SELECT 1"))
            for session in sessions:
                session.close()
        assert len(opened) == 12  # the second burst opened none: each was opened once
    finally:
        database.dispose()
