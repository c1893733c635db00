"""Time sources: services read the time from the context so tests can move it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Anything that tells the current timezone-aware UTC time."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock tests set and advance by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> None:
        self._now += timedelta(**delta)


def iso_utc(moment: datetime) -> str:
    """`moment` as the API writes every time: ISO 8601 in UTC, ending in `Z`."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
