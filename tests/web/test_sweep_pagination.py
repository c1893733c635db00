"""A page number past the end of a list: the page says so and links back to its first page,
not to the page before it (just as empty, and a click per page to get anywhere)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from tests.web.benchmark_site import Site, site
from tests.web.support import WebUser

__all__ = ["site"]


def _links(html: str) -> dict[str, str]:
    nav = BeautifulSoup(html, "html.parser").find("main")
    assert nav is not None
    return {" ".join(a.get_text().split()): str(a["href"]) for a in nav.find_all("a", href=True)}


@pytest.fixture(scope="module")
def admin(site: Site) -> Iterator[WebUser]:
    """An administrator of the site, signed in in a browser of her own."""
    site.world.user("root@example.com", admin=True)
    with TestClient(create_app(site.runtime.settings, site.runtime), follow_redirects=False) as c:
        yield WebUser.sign_in(c, "root@example.com")


def test_benchmark_tabs_past_the_end_lead_to_page_one(site: Site) -> None:
    for tab, what in (("questions", "questions"), ("runs", "runs")):
        base = f"/benchmarks/{site.scored}/{tab}"
        response = site.ana.get(f"{base}?page=9")
        assert response.status_code == 200
        assert f"No more {what}: the list ends before page 9." in response.text
        links = _links(response.text)
        assert links["Go to page 1"] == base
        assert "Previous page" not in links and f"{base}?page=8" not in links.values()


def test_a_runs_questions_past_the_end_lead_to_page_one(site: Site) -> None:
    links = _links(site.ana.get(f"/runs/{site.run_id}?show=all&page=40").text)
    assert links["Go to page 1"] == f"/runs/{site.run_id}?show=all&tag=&page=1"
    assert "Previous page" not in links


def test_a_comparison_past_the_end_leads_to_page_one(site: Site) -> None:
    pair = f"a={site.run_id}&b={site.run_id}"
    links = _links(site.ana.get(f"/runs/compare?{pair}&page=40").text)
    assert links["Go to page 1"] == f"/runs/compare?{pair}&show=all&page=1"
    assert "Previous page" not in links


def test_the_conversation_list_past_the_end_leads_to_the_newest(site: Site) -> None:
    links = _links(site.ana.get("/chat?start=99990").text)
    assert links["Newest conversations"] == "/chat"
    assert "Newer" not in links


@pytest.mark.parametrize(
    ("path", "label", "first"),
    [
        ("/admin/users?q=example&start=5000", "First accounts", "/admin/users?q=example"),
        (
            "/admin/reports?resolved=true&start=5000",
            "Newest reports",
            "/admin/reports?resolved=true",
        ),
    ],
)
def test_admin_lists_past_the_end_lead_to_their_start(
    admin: WebUser, path: str, label: str, first: str
) -> None:
    response = admin.get(path)
    assert "No more" in response.text and "the list ends before this page" in response.text
    links = _links(response.text)
    assert links[label] == first
    assert not any("start=4" in href for href in links.values())


def test_the_audit_log_past_the_end_leads_to_its_start(admin: WebUser) -> None:
    response = admin.get("/admin/audit?door=web&start=5000")
    assert "No more events: the list ends before this page." in response.text
    assert _links(response.text)["Newest events"].startswith("/admin/audit?user=&door=web")
