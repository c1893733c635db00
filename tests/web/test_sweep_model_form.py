"""An over-long field pasted into the add-model form comes back beside its field, with the rest
of the form as typed, not as an error page that loses it all."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from tests.web.support import WebUser
from tests.web.test_models import ENDPOINT


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("api_key", "k" * 2500),  # no maxlength on the page: a browser sends it all
        ("base_url", "https://93.184.216.34/" + "v" * 2100),
    ],
)
def test_an_overlong_field_is_refused_beside_it(signed_in: WebUser, field: str, value: str) -> None:
    response = signed_in.post("/models/new", {**ENDPOINT, field: value})
    assert response.status_code == 422
    page = BeautifulSoup(response.text, "html.parser")
    assert page.find("input", id=field)["aria-invalid"] == "true"
    assert "at most" in page.find(id=f"{field}-error").text
    assert page.find("input", id="name")["value"] == ENDPOINT["name"]
    assert page.find("input", id="endpoint_model")["value"] == ENDPOINT["endpoint_model"]
    assert "k" * 2500 not in response.text  # a key is never written back
    assert signed_in.page("/models").find("a", string=ENDPOINT["name"]) is None
