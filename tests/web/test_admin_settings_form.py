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


def test_number_inputs_carry_the_services_own_bounds(admin: WebUser, world: World) -> None:
    page = admin.page("/admin/settings")
    cap = page.select_one("input#value-agent_turn_cap_s")
    # The turn cap's environment variable may not be under 10 s nor over an hour, so neither
    # may its override.
    assert (cap["min"], cap["max"]) == ("10", "3600")
    per_day = page.select_one("input#value-create_limit_per_day")
    assert (per_day["min"], per_day["max"]) == ("1", "999999999")
    before = world.do(OPERATOR, deployment.list_settings)
    for wrong in ("9", "3601", "1000000000"):
        refused = admin.post("/admin/settings", {"key": "agent_turn_cap_s", "value": wrong})
        assert refused.status_code == 422
        assert "a whole number from 10 to 3600" in refused.text
    assert world.do(OPERATOR, deployment.list_settings) == before
