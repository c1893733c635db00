"""Model pages: the catalogue by source, adding an endpoint (its key never shown again),
address refusals beside the field, key rotation, deletion with a typed confirmation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.services import audit
from benchgen.services.runtime import Runtime
from tests.support import OPERATOR, World
from tests.web.support import WebUser

KEY = "sk-test-VerySecretKey0123456789abcdef"
NEW_KEY = "sk-test-RotatedKey9876543210zyxwvu"
SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
ENDPOINT = {
    "name": "My vLLM",
    "kind": "openai_compat",
    "base_url": "https://93.184.216.34/v1",
    "endpoint_model": "qwen2.5-7b-instruct",
    "api_key": KEY,
}


def add(person: WebUser, **changes: str) -> str:
    """Add a model through the form; returns its page's path."""
    response = person.post("/models/new", {**ENDPOINT, **changes})
    assert response.status_code == 303, response.text
    return str(response.headers["location"])


def model_id_of(path: str) -> str:
    return path.rsplit("/", 1)[-1]


@pytest.fixture
def other(runtime: Runtime, world: World) -> Iterator[WebUser]:
    """Bo, signed in in his own client."""
    world.user("bo@example.com")
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, "bo@example.com")


def test_catalogue_groups_platform_models_and_mine(signed_in: WebUser) -> None:
    add(signed_in)
    page = signed_in.page("/models")
    headings = [h.text for h in page.find_all("h2")]
    assert headings == ["Platform models", "My models", "Trained"]
    platform, mine, trained = page.find_all("section")[:3]
    assert "Baseline: always the first choice" in platform.text
    assert "My vLLM" in mine.text and "My vLLM" not in platform.text
    assert "None yet" in trained.text and trained.find("a", href="/training") is not None


def test_add_an_endpoint_and_the_key_is_never_shown(signed_in: WebUser) -> None:
    form = signed_in.page("/models/new")
    for field in ("name", "kind", "base_url", "endpoint_model", "api_key"):
        assert form.find("label", attrs={"for": field}) is not None, field
    path = add(signed_in)
    assert path.startswith("/models/mdl_")
    page = signed_in.page(path)
    assert "qwen2.5-7b-instruct" in page.text and "set (never shown)" in page.text
    for shown in ("/models", path, "/models/new", "/"):
        assert KEY not in signed_in.get(shown).text, shown
    view = signed_in.client.get(path).text
    assert "https://93.184.216.34/v1" in view


def test_a_private_address_is_refused_beside_its_field_and_the_key_not_echoed(
    signed_in: WebUser,
) -> None:
    response = signed_in.post("/models/new", {**ENDPOINT, "base_url": "http://127.0.0.1:8000/v1"})
    assert response.status_code == 422
    assert KEY not in response.text
    from bs4 import BeautifulSoup

    page = BeautifulSoup(response.text, "html.parser")
    url = page.find("input", id="base_url")
    assert url is not None and url["aria-invalid"] == "true"
    error = page.find(id="base_url-error")
    assert error is not None and error.text.strip()
    assert url["value"] == "http://127.0.0.1:8000/v1"  # what was typed, except the key, stays
    name = page.find("input", id="name")
    assert name is not None and name["value"] == "My vLLM"
    assert "My vLLM" not in signed_in.get("/models").text.split("My models", 1)[1]


def test_missing_fields_are_shown_beside_them(signed_in: WebUser) -> None:
    response = signed_in.post("/models/new", {**ENDPOINT, "base_url": "", "name": ""})
    assert response.status_code == 422
    assert 'id="name-error"' in response.text or 'id="base_url-error"' in response.text
    assert KEY not in response.text


def test_rotate_the_key(world: World, signed_in: WebUser) -> None:
    path = add(signed_in)
    refused = signed_in.post(f"{path}/key", {"api_key": "  "})
    assert refused.status_code == 422 and "enter the new key" in refused.text
    response = signed_in.post(f"{path}/key", {"api_key": NEW_KEY})
    assert response.status_code == 303 and response.headers["location"] == path
    assert NEW_KEY not in signed_in.get(path).text
    events = world.do(OPERATOR, audit.list_events, model_id_of(path))
    updates = [e for e in events if e.action == audit.AuditAction.MODEL_UPDATE]
    assert len(updates) == 1 and updates[0].details == {"fields": ["api_key"]}
    assert NEW_KEY not in str(updates[0].details)


def test_delete_needs_the_typed_confirmation(world: World, signed_in: WebUser) -> None:
    path = add(signed_in)
    page = signed_in.page(path)
    form = page.find("form", attrs={"data-confirm-text": "delete My vLLM"})
    assert form is not None and form.find("input", attrs={"data-confirm-input": True})
    wrong = signed_in.post(f"{path}/delete", {"confirm": "delete something else"})
    assert wrong.status_code == 422 and signed_in.get(path).status_code == 200
    done = signed_in.post(f"{path}/delete", {"confirm": "delete My vLLM"})
    assert done.status_code == 303 and done.headers["location"] == "/models"
    assert signed_in.get(path).status_code == 404
    assert "My vLLM" not in signed_in.get("/models").text


def test_another_persons_model_is_404_and_platform_models_have_no_forms(
    signed_in: WebUser, other: WebUser
) -> None:
    path = add(signed_in)
    assert other.get(path).status_code == 404
    assert other.post(f"{path}/key", {"api_key": NEW_KEY}).status_code == 404
    assert other.post(f"{path}/delete", {"confirm": "delete My vLLM"}).status_code == 404
    assert signed_in.get(path).status_code == 200  # still there
    platform = other.page("/models/mdl_builtin_first")
    assert "Baseline: always the first choice" in platform.text
    assert platform.find("form", attrs={"data-confirm-text": True}) is None
    assert other.post("/models/mdl_builtin_first/key", {"api_key": NEW_KEY}).status_code == 404


def test_forms_without_the_csrf_token_are_refused(signed_in: WebUser) -> None:
    client = signed_in.client
    assert client.post("/models/new", data=ENDPOINT).status_code == 403
    path = add(signed_in)
    assert client.post(f"{path}/key", data={"api_key": NEW_KEY}).status_code == 403
    assert client.post(f"{path}/delete", data={"confirm": "delete My vLLM"}).status_code == 403
    assert signed_in.get(path).status_code == 200
    mine = signed_in.page("/models").find_all("section")[1]
    assert len(mine.select("tbody tr")) == 1  # the forged creation made nothing


def test_hostile_model_names_are_escaped(signed_in: WebUser) -> None:
    path = add(signed_in, name=SCRIPT + IMG)
    for page in ("/models", path):
        html = signed_in.get(page).text
        assert SCRIPT not in html and "<img src=x" not in html, page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
