"""The submission form preselects the phase a submission without one goes to: the phase open
now, not the first, which may have ended."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import bundles
from benchgen.services.runtime import Runtime
from tests.bundle_factory import bundle, competition, require_sandbox
from tests.support import World
from tests.web.support import WebUser


def test_the_form_preselects_the_phase_open_now(runtime: Runtime, world: World) -> None:
    require_sandbox()
    ana = world.user("ana@example.com")
    ended = {**competition()["phases"][0], "end": "1-1-2021"}  # the clock reads 2026
    final = {"index": 1, "name": "Final", "start": "1-1-2021", "tasks": [0]}
    data = bundle(competition(phases=[ended, final]))
    made = world.do(Principal.web(ana), bundles.upload_bundle, data, "tiny.zip")
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        page = WebUser.sign_in(client, "ana@example.com").get(
            f"/benchmarks/{made.benchmark.id}/evaluate"
        )
    assert page.status_code == 200
    chosen = BeautifulSoup(page.text, "html.parser").select("#submit-phase option[selected]")
    assert [option.get_text() for option in chosen] == ["Final"]
