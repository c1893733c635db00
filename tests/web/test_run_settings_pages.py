"""The run form's Advanced section (estimate and start with settings and a subset), the run
page's settings line and the leaderboard refusing a partial run."""

from __future__ import annotations

from urllib.parse import urlencode

from bs4 import BeautifulSoup

from benchgen.core.context import Principal
from benchgen.services.accounts import users
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.services.test_runs import BIG_MCQ, work_all
from tests.support import World
from tests.web.support import WebUser

RANDOM = "mdl_builtin_random"


def test_advanced_settings_reach_the_estimate_and_the_run(
    signed_in: WebUser, world: World, runtime: Runtime
) -> None:
    owner = signed_in
    bm = world.benchmark(_ana_id(world), BIG_MCQ)
    fields = {"samples": "3", "seed": "9", "subset_kind": "first", "subset_n": "4"}
    page = owner.page(f"/benchmarks/{bm}/evaluate?" + urlencode({"model_id": RANDOM, **fields}))
    text = page.get_text()
    assert "3 samples per question" in text and "can never go on a leaderboard" in text
    assert page.find("details", open=True) is not None
    hidden = {i["name"]: i["value"] for i in page.find_all("input", type="hidden")}
    assert hidden["samples"] == "3" and hidden["subset_n"] == "4"
    started = owner.post(f"/benchmarks/{bm}/evaluate", {"model_id": RANDOM, **fields})
    assert started.status_code == 303, started.text[:300]
    run_id = started.headers["location"].split("/runs/")[1].split("?")[0]
    run = world.do(Principal.web(_ana_id(world)), launch.get_run, run_id)
    assert run.partial and run.question_count == 4 and run.settings["samples"] == 3
    work_all(runtime)
    shown = owner.page(f"/runs/{run_id}").get_text()
    assert "Settings: seed 9, 3 samples per question" in shown and "pass@3" in shown


def test_a_refused_setting_is_shown_on_the_form(signed_in: WebUser, world: World) -> None:
    bm = world.benchmark(_ana_id(world), BIG_MCQ)
    query = urlencode({"model_id": "mdl_builtin_first", "top_p": "0.5"})
    response = signed_in.get(f"/benchmarks/{bm}/evaluate?{query}")
    assert response.status_code == 422 and "do not take top_p" in response.text


def _ana_id(world: World) -> str:
    return world.do(Principal.cli(), users.get_user_by_email, "ana@example.com").id


def test_refused_settings_are_said_in_words_by_their_fields(
    signed_in: WebUser, world: World
) -> None:
    bm = world.benchmark(_ana_id(world), BIG_MCQ)
    typed = {"temperature": "abc", "subset_kind": "first", "subset_n": "0"}
    query = urlencode({"model_id": RANDOM, **typed})
    response = signed_in.get(f"/benchmarks/{bm}/evaluate?{query}")
    assert response.status_code == 422
    assert "settings.temperature" not in response.text and "subset.n" not in response.text
    page = BeautifulSoup(response.text, "html.parser")
    said = page.find("p", role="alert")
    assert said is not None and "Settings, temperature: " in said.get_text()
    for field in ("temperature", "subset_n"):
        assert page.find(id=field)["aria-invalid"] == "true", field  # type: ignore[index]
        assert page.find("p", id=f"{field}-error") is not None, field
    # In plain words, not pydantic's ("Input should be a valid number").
    assert "must be a number" in page.find("p", id="temperature-error").get_text()  # type: ignore[union-attr]
    assert "must be at least 1" in page.find("p", id="subset_n-error").get_text()  # type: ignore[union-attr]
