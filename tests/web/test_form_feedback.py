"""Forms keep what was typed and say what is wrong in the page's words: a NUL character, an
over-long value, a crafted format; statuses and counts read as they are."""

from __future__ import annotations

from bs4 import BeautifulSoup

from benchgen.core.context import Principal
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch
from benchgen.web.places import described
from tests.support import QA
from tests.web.benchmark_site import Site, site

__all__ = ["site"]  # the module-scoped fixture, shared by the tests below
ECHO = "mdl_builtin_echo"  # answers a question-and-answer benchmark at once, offline


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def _error(soup: BeautifulSoup, field_id: str) -> str:
    found = soup.find("p", id=f"{field_id}-error")
    assert found is not None, f"no error next to {field_id}"
    return found.get_text()


def test_a_nul_in_the_editor_comes_back_by_its_field_with_the_form(site: Site) -> None:
    form = {
        "format": "mcq",
        "title": "Pasted from a PDF",
        "q0-prompt": "a\x00b",
        "q0-choices": "Paris\nLyon",
        "q0-answer": "A",
        "action": "create",
    }
    refused = site.ana.post("/benchmarks", form)
    assert refused.status_code == 422
    soup = _soup(refused.text)
    assert "NUL" in _error(soup, "q0-prompt")
    assert "Question 1, prompt" in soup.select_one(".problems").get_text()  # type: ignore[union-attr]
    assert soup.find("input", id="title")["value"] == "Pasted from a PDF"  # type: ignore[index]
    assert soup.find("textarea", id="q0-choices").get_text() == "Paris\nLyon"  # type: ignore[union-attr]


def test_other_forms_still_refuse_a_nul_naming_the_field_in_words(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Screened"})
    refused = site.ana.post(f"/benchmarks/{bm}/settings", {"title": "a\x00b"})
    assert refused.status_code == 422 and "Title: must not contain the NUL" in refused.text
    said = described({"loc": ["body", "q0-prompt"], "msg": "must not contain the NUL character"})
    assert said == "Question 1, prompt: must not contain the NUL character"


def test_over_long_settings_and_whitelist_come_back_in_their_fields(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Long-winded"})
    long_title, long_text = "T" * 500, "D" * 50_000
    saved = site.ana.post(
        f"/benchmarks/{bm}/settings", {"title": long_title, "description": long_text}
    )
    assert saved.status_code == 422
    soup = _soup(saved.text)
    assert "at most 200 characters" in _error(soup, "title")
    assert "at most 20000 characters" in _error(soup, "description")
    assert soup.find("input", id="title")["value"] == long_title  # type: ignore[index]
    assert soup.find("textarea", id="description").get_text() == long_text  # type: ignore[union-attr]
    entries = "a@example.com\n" * 2000
    added = site.ana.post(f"/benchmarks/{bm}/settings/access/whitelist", {"entries": entries})
    assert added.status_code == 422
    soup = _soup(added.text)
    assert "at most 20000 characters" in _error(soup, "entries")
    assert soup.find("textarea", id="entries").get_text() == entries  # type: ignore[union-attr]


def test_a_crafted_format_is_refused_not_taken_as_qa(site: Site) -> None:
    form = {"format": "bogus", "title": "Crafted", "q0-prompt": "p", "q0-answer": "a"}
    refused = site.ana.post("/benchmarks", {**form, "action": "create"})
    assert refused.status_code == 422
    assert "Format: choose Question and answer or Multiple choice" in refused.text
    assert _soup(refused.text).find("input", id="title")["value"] == "Crafted"  # type: ignore[index]
    made = site.world.do(Principal.web(site.ana_id), lifecycle.list_benchmarks, search="Crafted")
    assert made == []


def test_validation_messages_are_the_pages_words(site: Site) -> None:
    form = {
        "format": "qa",
        "title": "Many tags",
        "q0-prompt": "p",
        "q0-answer": "a",
        "q0-tags": ", ".join(f"t{n}" for n in range(25)),
        "action": "create",
    }
    refused = site.ana.post("/benchmarks", form)
    assert refused.status_code == 422
    said = _error(_soup(refused.text), "q0-tags")
    assert said == "must have at most 20 items (this has 25)"


def test_run_settings_and_model_fields_are_refused_in_the_pages_words(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Tuned"})
    advanced = {"temperature": "-1", "max_tokens": "many", "stop": "a\nb\nc\nd\ne"}
    refused = site.ana.post(f"/benchmarks/{bm}/evaluate", {"model_id": ECHO, **advanced})
    assert refused.status_code == 422
    soup = _soup(refused.text)
    assert _error(soup, "temperature") == "must be at least 0"
    assert _error(soup, "max_tokens") == "must be a whole number"
    assert _error(soup, "stop") == "must have at most 4 items (this has 5)"
    assert "Input should" not in refused.text and "after validation" not in refused.text
    unnamed = {"name": " ", "kind": "openai_compat", "endpoint_model": "m"}
    model = site.ana.post("/models/new", {**unnamed, "base_url": "https://example.com/v1"})
    assert model.status_code == 422
    assert _error(_soup(model.text), "name") == "must be at least 1 character long"


def test_one_question_is_not_questions(site: Site) -> None:
    bm = site.world.benchmark(
        site.ana_id, {**QA, "title": "Single", "questions": QA["questions"][:1]}
    )
    dashboard = site.ana.page("/").get_text()
    assert "qa · 1 question" in dashboard and "1 questions" not in dashboard
    estimate = site.ana.page(f"/benchmarks/{bm}/evaluate?model_id={ECHO}").get_text()
    assert "1 question × " in estimate


def test_a_stranger_out_of_runs_is_told_why_instead_of_a_start_button(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Popular"})
    owner = Principal.web(site.ana_id)
    site.world.do(owner, lifecycle.publish_benchmark, bm)
    site.world.do(owner, ratelimits.set_run_quota, bm, 1)
    path = f"/benchmarks/{bm}/evaluate?model_id={ECHO}"
    fresh = site.cy.page(path)
    assert fresh.find("button", string="Start the run") is not None
    assert "freezes this benchmark's questions" not in fresh.get_text()  # not the stranger's
    assert "freezes this benchmark's questions" in site.ana.page(path).get_text()
    site.world.do(Principal.web(site.cy_id), launch.start_run, bm, ECHO)
    spent = site.cy.page(path)
    assert spent.find("button", string="Start the run") is None
    assert (
        "You have used all your runs on this benchmark for now (1 in 24 hours)" in spent.get_text()
    )
    # Frozen by that run: the owner is no longer told that a run would freeze them.
    assert "freezes this benchmark's questions" not in site.ana.page(path).get_text()


def test_the_collaborator_address_field_stops_where_the_server_does(site: Site) -> None:
    # Past 320 characters the server answers with an error page, not the form: the browser
    # must stop the typing there, as every other email field does.
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Shared"})
    field = site.ana.page(f"/benchmarks/{bm}/settings/access").find("input", id="email")
    assert field is not None and field["maxlength"] == "320"
    long = site.ana.post(f"/benchmarks/{bm}/settings/access/invitations", {"email": "a" * 321})
    assert long.status_code == 422
