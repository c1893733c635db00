"""Every time a page shows says its zone (the server's times are UTC, a reader's may not be),
and every amount its unit."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from benchgen.services.runtime import Runtime
from tests.services.test_compare import FIRST, TWELVE, finished
from tests.support import World
from tests.web.support import WebUser
from tests.web.test_training_pages import Scene, scene  # noqa: F401 - the fixture
from tests.web.test_training_pages import pytestmark as needs_smollm2

TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?(?! ?UTC)")


def test_the_runs_offered_for_comparison_say_utc(
    world: World, runtime: Runtime, app_client: TestClient
) -> None:
    owner = world.user("owner@example.com")
    run = finished(world, runtime, owner, world.benchmark(owner, TWELVE), FIRST)
    person = WebUser.sign_in(app_client, "owner@example.com")
    options = person.page(f"/runs/compare?a={run}").select("#compare-b option")
    shown = " ".join(option.text for option in options)
    assert "UTC" in shown and TIME.findall(shown) == []


@needs_smollm2
def test_a_training_job_says_utc_when_it_ended(scene: Scene) -> None:  # noqa: F811
    path = scene.launch(name="Sums")
    assert scene.person.post(f"{path}/cancel").status_code == 303
    shown = scene.person.page(path).find("dl").get_text(" ")
    assert "ended" in shown and TIME.findall(shown) == []


def test_the_ledger_and_token_columns_say_their_unit_and_zone(signed_in: WebUser) -> None:
    signed_in.post("/settings/tokens", {"name": "laptop", "scopes": ["read"]})
    columns = signed_in.page("/settings/tokens").select("thead th")
    assert "Expires (UTC)" in [column.get_text(strip=True) for column in columns]
    columns = signed_in.page("/settings/billing").select("thead th")
    assert "Amount (credits)" in [column.get_text(strip=True) for column in columns]
