"""A token revoked twice at the same moment (two tabs, the owner and an admin) is revoked once."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.services import access, audit
from benchgen.services.accounts import tokens
from tests.support import OPERATOR, World, at_once

pytestmark = pytest.mark.both_backends  # PostgreSQL lets both transactions read at once


def _meeting_at(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    """Make two callers of `module.name` wait for each other there (2 s at most) before going
    on: each has then done whatever came before it."""
    both, called = threading.Barrier(2), getattr(module, name)

    def meeting(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            both.wait(2)
        return called(*args, **kwargs)

    monkeypatch.setattr(module, name, meeting)


def test_a_token_revoked_twice_at_once_is_revoked_and_audited_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both read it live, both stamped it and both were audited; the later time won."""
    ana = Principal.web(world.user("ana@example.com"))
    made = world.do(ana, tokens.create_token, "laptop", ["read"], 30)
    # Each has read the token before it checks who asks: they meet there.
    _meeting_at(monkeypatch, access, "require")
    revoke = lambda: world.do(ana, tokens.revoke_token, made.token.id)  # noqa: E731
    outcomes = at_once([revoke, revoke])
    assert all(isinstance(o, tokens.TokenView) for o in outcomes), outcomes
    assert outcomes[0].revoked_at == outcomes[1].revoked_at
    events = world.do(OPERATOR, audit.list_events, made.token.id, action="token.revoke")
    assert len(events) == 1


def test_a_token_pasted_twice_at_once_is_revoked_and_reported_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two chat messages carrying one secret: each told the user it had revoked it."""
    ana = Principal.web(world.user("ana@example.com"))
    made = world.do(ana, tokens.create_token, "laptop", ["read"], 30)
    # Each has found the token live before it writes the event: they meet there.
    _meeting_at(monkeypatch, audit, "record")
    leak = lambda: world.do(OPERATOR, tokens.revoke_leaked, made.secret)  # noqa: E731
    outcomes = at_once([leak, leak])
    assert sorted(o is None for o in outcomes) == [False, True], outcomes
    events = world.do(OPERATOR, audit.list_events, made.token.id, action="token.revoke_leaked")
    assert len(events) == 1
