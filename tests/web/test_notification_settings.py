"""The notification settings page and the leaderboard's download links."""

from __future__ import annotations

from bs4 import BeautifulSoup
from sqlalchemy import select

from benchgen.core.context import Principal
from benchgen.db.tables import User
from benchgen.services.runs import launch, leaderboards, notifications
from benchgen.services.runtime import Runtime
from tests.services.test_runs import work_all
from tests.support import MCQ, World
from tests.web.support import WebUser


def test_set_a_webhook_and_see_its_secret_once(signed_in: WebUser, world: World) -> None:
    page = signed_in.page("/settings/notifications")
    assert page.find("input", attrs={"name": "webhook_url"}) is not None
    tabs = page.find("nav", attrs={"aria-label": "Settings"})
    assert tabs.find("a", attrs={"aria-current": "page"}).text == "Notifications"

    url = "https://93.184.216.34/bg"  # a public address: nothing to resolve offline
    saved = signed_in.post("/settings/notifications", {"email_on_finish": "on", "webhook_url": url})
    assert saved.status_code == 200 and saved.headers["cache-control"] == "no-store"
    assert "whsec_" in saved.text
    again = signed_in.page("/settings/notifications")
    assert "whsec_" not in again.text
    assert again.find("input", attrs={"name": "webhook_url"})["value"] == url
    assert again.find("input", attrs={"name": "rotate_secret"}) is not None

    refused = signed_in.post("/settings/notifications", {"webhook_url": "ftp://x.example"})
    assert refused.status_code == 422 and "http" in refused.text
    # The refused form changed nothing: the saved webhook is still there.
    assert url in signed_in.get("/settings/notifications").text
    # A new secret asked for with the address cleared would have removed the webhook: refused
    # beside the checkbox.
    emptied = signed_in.post("/settings/notifications", {"webhook_url": "", "rotate_secret": "on"})
    assert emptied.status_code == 422
    box = BeautifulSoup(emptied.text, "html.parser").find("input", id="rotate_secret")
    assert box["aria-describedby"] == "rotate_secret-error"
    assert "needs a webhook_url" in emptied.text
    assert url in signed_in.get("/settings/notifications").text


def test_the_form_needs_the_csrf_token(signed_in: WebUser) -> None:
    response = signed_in.client.post("/settings/notifications", data={"email_on_finish": "on"})
    assert response.status_code == 403


def test_leaderboard_tab_links_its_downloads(
    signed_in: WebUser, world: World, runtime: Runtime
) -> None:
    ana = _ana_id(world)
    bm = world.benchmark(ana, MCQ)
    run_id = world.do(Principal.web(ana), launch.start_run, bm, "mdl_builtin_first").id
    work_all(runtime)
    world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run_id)
    page = signed_in.page(f"/benchmarks/{bm}/leaderboard")
    links = {a.text: a["href"] for a in page.find_all("a", attrs={"download": True})}
    assert set(links) == {"CSV", "JSON"}
    csv_file = signed_in.get(links["CSV"])
    assert csv_file.status_code == 200 and run_id in csv_file.text
    assert signed_in.get(links["JSON"]).json()["rows"][0]["run_id"] == run_id


def _ana_id(world: World) -> str:
    found = world.ctx_call(
        Principal.cli(),
        lambda ctx: ctx.session.scalar(select(User.id).where(User.email == "ana@example.com")),
    )
    assert found is not None
    return str(found)


def test_settings_survive_a_round_trip(signed_in: WebUser, world: World) -> None:
    signed_in.post("/settings/notifications", {"email_on_finish": "on"})
    shown = world.do(Principal.web(_ana_id(world)), notifications.get_notification_settings)
    assert shown.email_on_finish and shown.webhook_url is None
