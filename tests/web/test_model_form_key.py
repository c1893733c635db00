"""Model pages: a refused form asks for the key again (it is never shown back), and prices
say their unit."""

from __future__ import annotations

from bs4 import BeautifulSoup

from benchgen.services import models
from tests.support import OPERATOR, World
from tests.web.support import WebUser
from tests.web.test_models import ENDPOINT, KEY


def test_a_refused_form_asks_for_the_key_again(signed_in: WebUser) -> None:
    response = signed_in.post("/models/new", {**ENDPOINT, "base_url": "http://127.0.0.1:8000/v1"})
    assert response.status_code == 422 and KEY not in response.text
    page = BeautifulSoup(response.text, "html.parser")
    again = page.find(id="api_key-again")
    assert again is not None and "type it again" in again.text
    assert page.find("input", id="api_key")["aria-describedby"] == "api_key-hint api_key-again"


def test_without_a_key_typed_nothing_is_asked_again(signed_in: WebUser) -> None:
    refused = {**ENDPOINT, "base_url": "http://127.0.0.1:8000/v1", "api_key": ""}
    page = BeautifulSoup(signed_in.post("/models/new", refused).text, "html.parser")
    assert page.find(id="api_key-again") is None
    assert page.find("input", id="api_key")["aria-describedby"] == "api_key-hint"


def test_prices_say_they_are_in_credits(world: World, signed_in: WebUser) -> None:
    spec = {"name": "Priced", "kind": "openai_compat", "base_url": "https://93.184.216.34/v1"}
    priced = {**spec, "endpoint_model": "m", "price_per_question": 2, "price_per_1k_tokens": 3}
    made = world.do(OPERATOR, models.create_platform_model, priced)
    wanted = "2 credits per question + 3 credits per 1k tokens"
    listed = signed_in.page("/models").find("a", string="Priced").find_parent("tr")
    assert wanted in listed.get_text(" ")
    assert wanted in signed_in.page(f"/models/{made.id}").get_text(" ")
