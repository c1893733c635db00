"""Every state-changing web route refuses a request without the CSRF token, signed in or not."""

from __future__ import annotations

import re

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from benchgen.web.routes import PAGES
from tests.web.support import WebUser

_UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


def _web_routes() -> list[tuple[str, str]]:
    found = []
    for module in PAGES:
        for route in module.router.routes:
            if isinstance(route, APIRoute):
                found += [(method, route.path) for method in sorted(route.methods & _UNSAFE)]
    return sorted(set(found))


ROUTES = _web_routes()


def test_the_web_app_has_forms() -> None:
    assert len(ROUTES) > 30


def test_a_request_without_the_csrf_token_is_refused_everywhere(signed_in: WebUser) -> None:
    # One signed-in browser tries every route: a sign-in per route would cost more than the
    # requests themselves.
    wrong = {}
    for method, path in ROUTES:
        concrete = re.sub(r"\{[^}]+\}", "x_1", path)
        response = signed_in.client.request(method, concrete, data={"name": "x", "text": "x"})
        if response.status_code != 403 or "sent from another site" not in response.text:
            wrong[f"{method} {path}"] = response.status_code
    assert wrong == {}
    assert signed_in.get("/").status_code == 200  # still signed in: nothing was done


def test_an_anonymous_form_without_the_token_is_refused(app_client: TestClient) -> None:
    for path in ("/signin", "/signup", "/password/forgot"):
        response = app_client.post(path, data={"email": "a@example.com", "password": "x" * 9})
        assert response.status_code == 403, path
