"""Two admins demoting or disabling each other at the same moment leave one admin standing."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import PermissionDenied, Unauthenticated
from benchgen.services import audit
from benchgen.services.accounts import users
from tests.support import OPERATOR, World


def _each_against_the_other(
    world: World, monkeypatch: pytest.MonkeyPatch, change: Callable[..., Any], value: bool
) -> list[Any]:
    ana = world.user("ana@example.com", admin=True)
    bob = world.user("bob@example.com", admin=True)
    # Each change waits, before it commits, for the other to get as far: without the lock both
    # had read themselves as admins; with it the second waits for the first (the wait times out).
    both = threading.Barrier(2)
    record = audit.record

    def meeting(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            both.wait(timeout=2)
        return record(*args, **kwargs)

    monkeypatch.setattr(audit, "record", meeting)
    outcomes: list[Any] = []

    def act(me: str, other: str) -> None:
        try:
            outcomes.append(world.do(Principal.web(me), change, other, value))
        except (PermissionDenied, Unauthenticated) as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=act, args=pair) for pair in ((ana, bob), (bob, ana))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    monkeypatch.undo()
    return outcomes


@pytest.mark.both_backends
def test_two_admins_removing_each_other_leave_one(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = _each_against_the_other(world, monkeypatch, users.set_admin, False)
    assert sorted(type(o).__name__ for o in outcomes) == ["PermissionDenied", "UserView"]
    admins = [u.email for u in world.do(OPERATOR, users.list_users) if u.is_admin]
    assert len(admins) == 1


@pytest.mark.both_backends
def test_two_admins_disabling_each_other_leave_one(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = _each_against_the_other(world, monkeypatch, users.set_active, False)
    assert sorted(type(o).__name__ for o in outcomes) == ["Unauthenticated", "UserView"]
    active = [u.email for u in world.do(OPERATOR, users.list_users) if u.is_active]
    assert len(active) == 1
