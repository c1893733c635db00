"""What `web.routes` mounts beside the pages: the site's icon."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from tests.web.support import WebUser


def test_the_icon_answers_at_favicon_ico_and_every_page_links_it(
    app_client: TestClient, signed_in: WebUser
) -> None:
    # Browsers ask for /favicon.ico where a page links no icon (the API docs, JSON answers):
    # a 404 there is an error in the console on every such visit.
    icon = app_client.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/svg+xml"
    assert icon.content.startswith(b"<svg")
    signed_out = BeautifulSoup(app_client.get("/signin").text, "html.parser")
    for page in [signed_out, signed_in.page("/")]:
        link = page.select_one('link[rel="icon"]')
        assert link is not None
        linked = app_client.get(str(link["href"]))
        assert linked.status_code == 200 and linked.content == icon.content
