"""No page does database work on the event loop, where it would stall every other request (a
write may wait seconds for SQLite's lock): services run in worker threads only."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from fastapi.dependencies.utils import get_typed_signature
from fastapi.routing import APIRoute

from benchgen.web import session
from benchgen.web.routes import PAGES
from benchgen.web.session import WebContext
from tests.web.support import WebUser


def _on_the_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def test_no_coroutine_page_takes_a_unit_of_work() -> None:
    on_loop = [
        route.path
        for module in PAGES
        for route in module.router.routes
        if isinstance(route, APIRoute)
        and inspect.iscoroutinefunction(route.endpoint)
        and any(
            p.annotation == WebContext
            for p in get_typed_signature(route.endpoint).parameters.values()
        )
    ]
    assert on_loop == []


def test_the_csrf_check_looks_the_session_up_in_a_worker_thread(
    signed_in: WebUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    look_up = session.current_session

    def noted(request: Any) -> Any:
        seen.append(_on_the_event_loop())
        return look_up(request)

    monkeypatch.setattr(session, "current_session", noted)
    response = signed_in.post("/signout")
    assert response.status_code == 303, response.text
    assert seen and not any(seen)
