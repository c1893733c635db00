"""A refused field is described by its hint and its error together: a second aria-describedby
on one element is dropped by the browser, so the error was never read out."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.web.templating import TEMPLATES
from tests.support import World
from tests.web.support import WebUser
from tests.web.test_accounts import set_mode

# One tag (no '>' inside) that names aria-describedby itself and also calls `invalid(`, whose
# refusal adds another.
_TWICE = re.compile(r"<[a-z]+\b[^>]*aria-describedby=[^>]*\binvalid\(", re.S)


def test_a_refused_field_is_described_by_its_hint_and_its_error(signed_in: WebUser) -> None:
    response = signed_in.post("/benchmarks/import", {"title": "Empty", "format": "qa"})
    assert response.status_code == 422
    (tag,) = re.findall(r'<input id="file"[^>]*>', response.text)
    assert tag.count("aria-describedby=") == 1
    assert 'aria-describedby="file-hint file-error"' in tag
    assert 'id="file-error"' in response.text and 'id="file-hint"' in response.text


def test_no_template_gives_a_field_two_descriptions() -> None:
    twice = [
        str(path.relative_to(TEMPLATES))
        for path in TEMPLATES.rglob("*.html")
        if _TWICE.search(path.read_text())
    ]
    assert twice == []


def test_account_fields_are_described_by_their_hints(app_client: TestClient, world: World) -> None:
    set_mode(world, "open")
    page = BeautifulSoup(app_client.get("/signup").text, "html.parser")
    password = page.find("input", id="password")
    assert password is not None and password["aria-describedby"] == "password-hint"
    assert page.find(id="password-hint").get_text() == "At least 8 characters."


def test_a_refused_token_field_keeps_its_hint_beside_its_error(signed_in: WebUser) -> None:
    response = signed_in.post("/settings/tokens", {"name": "x", "expires_days": "soon"})
    assert response.status_code == 422
    field = BeautifulSoup(response.text, "html.parser").find("input", id="expires_days")
    assert field["aria-describedby"] == "expires_days-hint expires_days-error"
