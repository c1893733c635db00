"""The admin settings page answers a change it cannot make with a message the admin can read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.services import audit, deployment
from benchgen.services.runtime import Runtime
from tests.support import OPERATOR, World
from tests.web.support import WebUser


@pytest.fixture
def admin(runtime: Runtime, world: World) -> Iterator[WebUser]:
    world.user("root@example.com", admin=True)
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, "root@example.com")


@pytest.mark.parametrize("key", ["database_url", "<b>x</b>"])
def test_a_key_no_form_carries_is_refused_with_a_message(
    admin: WebUser, world: World, key: str
) -> None:
    before = world.do(OPERATOR, deployment.list_settings)
    wrong = admin.post("/admin/settings", {"key": key, "value": "1"})
    assert wrong.status_code == 422
    alert = BeautifulSoup(wrong.text, "html.parser").select_one("#error-settings")
    assert alert is not None and "unknown setting" in alert.get_text()
    assert "<b>" not in wrong.text
    assert world.do(OPERATOR, deployment.list_settings) == before
    assert world.do(OPERATOR, audit.list_events, action="deployment.set") == []
