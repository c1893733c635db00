"""Pages read without JavaScript: no control is shown that only a script makes work."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.core.context import Principal
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.services.test_compare import FIRST, TWELVE, work_all
from tests.support import World
from tests.web.support import WebUser
from tests.web.test_training_pages import Scene, scene  # noqa: F401 - the fixture
from tests.web.test_training_pages import pytestmark as needs_smollm2


def test_the_copy_button_beside_a_new_token_waits_for_the_script(signed_in: WebUser) -> None:
    signed_in.post("/settings/tokens", {"name": "laptop", "scopes": ["read"]})
    page = BeautifulSoup(signed_in.get("/settings/tokens").text, "html.parser")
    copy = page.find("button", attrs={"data-copy": "new-token"})
    # app.js shows it; a browser without script would show a button that does nothing.
    assert copy is not None and copy.has_attr("hidden")


def test_a_run_in_progress_reloads_itself_until_it_has_ended(
    world: World, runtime: Runtime, app_client: TestClient
) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    run = world.do(Principal.web(owner), launch.start_run, benchmark, FIRST)
    person = WebUser.sign_in(app_client, "owner@example.com")
    # The live log comes over a script's event stream: without one, a queued run's page
    # would say "queued" for ever.
    assert _reloads(person.page(f"/runs/{run.id}"))
    work_all(runtime)
    assert not _reloads(person.page(f"/runs/{run.id}"))


@needs_smollm2
def test_a_training_job_in_progress_reloads_itself(scene: Scene) -> None:  # noqa: F811
    path = scene.launch(name="Sums")
    assert _reloads(scene.person.page(path))
    assert scene.person.post(f"{path}/cancel").status_code == 303
    assert not _reloads(scene.person.page(path))


def _reloads(page: BeautifulSoup) -> bool:
    head = page.find("head")
    assert head is not None
    return head.select_one('noscript meta[http-equiv="refresh"]') is not None
