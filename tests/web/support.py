"""A signed-in person for page tests: keeps the cookies and echoes the CSRF token in forms."""

from __future__ import annotations

from typing import Any

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from httpx import Response

PASSWORD = "password123"  # what tests.support.World gives every user


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    field = BeautifulSoup(html, "html.parser").find("input", attrs={"name": "csrf_token"})
    assert field is not None, "the page has no form with a CSRF token"
    return str(field["value"])


class WebUser:
    """One browser: a TestClient with its cookie jar, signed in through the real form."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.csrf = ""

    @classmethod
    def sign_in(cls, client: TestClient, email: str, password: str = PASSWORD) -> WebUser:
        """Sign in through GET and POST /signin, as a browser would."""
        person = cls(client)
        form = client.get("/signin")
        response = client.post(
            "/signin",
            data={"email": email, "password": password, "csrf_token": csrf_of(form.text)},
        )
        assert response.status_code == 303, response.text
        person.csrf = csrf_of(client.get("/").text)
        return person

    def get(self, path: str, **kwargs: Any) -> Response:
        """GET a page."""
        return self.client.get(path, **kwargs)

    def post(self, path: str, data: dict[str, Any] | None = None, **kwargs: Any) -> Response:
        """POST a form with the session's CSRF token (as the page's form would)."""
        return self.client.post(path, data={"csrf_token": self.csrf, **(data or {})}, **kwargs)

    def page(self, path: str) -> BeautifulSoup:
        """GET a page that must render, parsed."""
        response = self.get(path)
        assert response.status_code == 200, (path, response.status_code, response.text[:500])
        return BeautifulSoup(response.text, "html.parser")
