"""Every hint and every error inside a form, on every page, is tied to a field of that form by
its aria-describedby, so a screen reader reads it with the field it is about."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from bs4 import BeautifulSoup
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.web.routes import PAGES
from tests.web.benchmark_site import FIRST_CHOICE, Site, site
from tests.web.support import WebUser

__all__ = ["site"]  # the module-scoped fixture, shared by the tests below
_DESCRIPTIONS = ".hint, .error-text"
# Pages that are files, live fragments or single-use links, not pages with forms to walk.
_SKIPPED = re.compile(r"/download|/export/|/progress|/turns/|\{token\}|/api/docs")


def untied(html: str) -> list[str]:
    """Each hint or error in a form that no field of that form names in aria-describedby."""
    page = BeautifulSoup(html, "html.parser")
    found = []
    for form in page.find_all("form"):
        named = {
            ref
            for element in form.find_all(attrs={"aria-describedby": True})
            for ref in str(element["aria-describedby"]).split()
        }
        named |= set(str(form.get("aria-describedby", "")).split())
        for note in form.select(_DESCRIPTIONS):
            if note.get("id") not in named:
                found.append(f"{form.get('action')}: {note.get_text(' ', strip=True)[:60]}")
    return found


def _page_paths(site: Site) -> list[str]:
    values = {
        "benchmark_id": [site.hostile, site.hostile_qa, site.scored],
        "number": ["1"],
        "run_id": [site.run_id],
        "model_id": [FIRST_CHOICE],
    }
    paths = []
    for module in PAGES:
        for route in module.router.routes:
            if not isinstance(route, APIRoute) or "GET" not in route.methods:
                continue
            if _SKIPPED.search(route.path):
                continue
            paths += _filled(route.path, values)
    return sorted(set(paths))


def _filled(path: str, values: dict[str, list[str]]) -> list[str]:
    names = re.findall(r"\{(\w+)\}", path)
    if not names:
        return [path]
    if any(name not in values for name in names):
        return []
    return [
        filled
        for value in values[names[0]]
        for filled in _filled(path.replace(f"{{{names[0]}}}", value, 1), values)
    ]


@pytest.fixture(scope="module")
def others(site: Site) -> Iterator[tuple[WebUser, WebUser]]:
    """An admin and someone signed out, each in a browser of their own."""
    site.world.user("root@example.com", admin=True)
    app = create_app(site.runtime.settings, site.runtime)
    with (
        TestClient(app, follow_redirects=False) as admin,
        TestClient(app, follow_redirects=False) as stranger,
    ):
        yield WebUser.sign_in(admin, "root@example.com"), WebUser(stranger)


def test_every_hint_on_every_page_is_tied_to_its_field(
    site: Site, others: tuple[WebUser, WebUser]
) -> None:
    paths = _page_paths(site)
    assert len(paths) > 30
    found = {}
    for path in paths:
        for who in (site.ana, *others):
            response = who.get(path)
            if response.status_code == 200 and (loose := untied(response.text)):
                found[path] = loose
    assert found == {}, "\n".join(f"{path}: {notes}" for path, notes in found.items())


def test_every_error_of_a_refused_form_is_tied_to_its_field(site: Site) -> None:
    refused = {
        "/models/new": {"name": "", "kind": "openai", "base_url": "ftp://x", "endpoint_model": ""},
        f"/benchmarks/{site.hostile}/questions/new": {
            "version": "",
            "q0-prompt": "",
            "q0-choices": "one",
            "q0-answer": "Z",
            "q0-tags": "",
        },
        "/benchmarks": {"format": "qa", "title": "", "q0-prompt": "", "action": "create"},
        "/settings/tokens": {"name": "", "expires_days": "soon"},
    }
    found = {}
    for path, form in refused.items():
        response = site.ana.post(path, form)
        assert response.status_code in (409, 422), path
        assert 'class="error-text"' in response.text, path
        if loose := untied(response.text):
            found[path] = loose
    assert found == {}, "\n".join(f"{path}: {notes}" for path, notes in found.items())
