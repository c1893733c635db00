"""Admin pages as an admin meets them: a refused credit grant is shown beside that account's
fields as typed, and the overview leads to every part of administration."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from benchgen.services.accounts import _ledger
from benchgen.web.pages import admin as admin_pages
from tests.support import OPERATOR, World
from tests.web.support import WebUser
from tests.web.test_admin import admin, user_row  # noqa: F401 - the fixture


@pytest.mark.parametrize(
    ("amount", "note", "refused"),
    [
        ("1.5", "welcome", "amount"),
        ("+-5", "welcome", "amount"),
        ("-5", "welcome", "amount"),
        ("5", "bad\x07note", "note"),
    ],
)
def test_a_refused_grant_is_shown_beside_that_accounts_fields_as_typed(
    admin: WebUser,  # noqa: F811
    world: World,
    amount: str,
    note: str,
    refused: str,
) -> None:
    ana = world.user("ana@example.com")
    world.user("bob@example.com")
    response = admin.post(f"/admin/users/{ana}/credits", {"amount": amount, "note": note})
    assert response.status_code == 422
    page = BeautifulSoup(response.text, "html.parser")
    row = user_row(page, "ana@example.com")
    assert row.find(id=f"amount-{ana}")["value"] == amount
    assert row.find(id=f"note-{ana}")["value"] == note
    field = row.find(id=f"{refused}-{ana}")
    error = row.find(id=f"{refused}-{ana}-error")
    assert field["aria-invalid"] == "true" and field["aria-describedby"] == error["id"]
    assert field.has_attr("autofocus") and "Credits not granted" in error.text
    other = user_row(page, "bob@example.com")
    assert other.find(class_="error-text") is None
    assert not other.find("input", attrs={"name": "amount"}).get("value")
    assert world.do(OPERATOR, _ledger.balance_of, ana) == 0


def test_a_refused_grant_to_an_account_not_on_the_first_page_is_still_said(
    admin: WebUser,  # noqa: F811
    world: World,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(admin_pages, "PAGE_SIZE", 1)
    zed = world.user("zed@example.com")
    response = admin.post(f"/admin/users/{zed}/credits", {"amount": "0"})
    assert response.status_code == 422
    page = BeautifulSoup(response.text, "html.parser")
    assert page.find("th", string="zed@example.com") is None
    assert "Credits not granted: must be a whole number" in page.get_text()


def test_the_overview_describes_every_part_of_administration(admin: WebUser) -> None:  # noqa: F811
    page = admin.page("/admin")
    tabs = {
        a["href"] for a in page.find("nav", attrs={"aria-label": "Administration"}).find_all("a")
    }
    described = {section.h2.a["href"] for section in page.select(".grid section")}
    assert described == tabs - {"/admin"}
