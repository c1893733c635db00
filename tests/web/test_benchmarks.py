"""Benchmark pages: list, editor, import, tabs, joining, the leaderboard and evaluating."""

from __future__ import annotations

import json

from bs4 import BeautifulSoup

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle, members
from tests.support import MCQ, QA
from tests.web.benchmark_site import FIRST_CHOICE, HOSTILE, Site, assert_escaped, site

__all__ = ["site"]  # the module-scoped fixture, shared by the tests below

TABS = ("", "/questions", "/phases", "/leaderboard", "/runs", "/evaluate")


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def _titles(site: Site, search: str) -> list[str]:
    found = site.world.do(Principal.web(site.ana_id), lifecycle.list_benchmarks, search=search)
    return [benchmark.title for benchmark in found]


def test_every_tab_renders_for_the_owner_with_hostile_text_escaped(site: Site) -> None:
    paths = [f"/benchmarks/{bm}{tab}" for bm in (site.hostile, site.hostile_qa) for tab in TABS]
    paths += [
        f"/benchmarks/{site.hostile}/evaluate?model_id={FIRST_CHOICE}",
        f"/benchmarks/{site.hostile}/questions/1",
        f"/benchmarks/{site.hostile_qa}/questions/1",
        f"/benchmarks/{site.hostile}/questions/new",
        "/benchmarks",
        "/benchmarks?show=mine",
        f"/benchmarks?q={HOSTILE}",
        "/benchmarks/new?format=mcq",
        "/benchmarks/import",
    ]
    for path in paths:
        response = site.ana.get(path)
        assert response.status_code == 200, (path, response.text[:300])
        assert_escaped(response.text)
    overview = site.ana.page(f"/benchmarks/{site.hostile}")
    assert overview.h1 is not None and HOSTILE in overview.h1.get_text()
    current = overview.select_one("ul.tabs a[aria-current=page]")
    assert current is not None and current.get_text() == "Overview"


def test_answer_keys_show_only_to_the_team(site: Site) -> None:
    owner = site.ana.page(f"/benchmarks/{site.hostile_qa}/questions")
    assert HOSTILE in owner.get_text()  # an accepted answer, as text
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Published capitals"})
    site.world.do(Principal.web(site.ana_id), lifecycle.publish_benchmark, bm)
    stranger = site.cy.page(f"/benchmarks/{bm}/questions").get_text()
    assert "Capital of France?" in stranger and "Paris" not in stranger


def test_a_stranger_gets_404_for_every_page_of_a_private_benchmark(site: Site) -> None:
    paths = [f"/benchmarks/{site.hostile}{tab}" for tab in TABS]
    paths += [
        f"/benchmarks/{site.hostile}/questions/1",
        f"/benchmarks/{site.hostile}/settings",
        f"/benchmarks/{site.hostile}/settings/access",
        f"/benchmarks/{site.hostile}/settings/phases",
        f"/benchmarks/{site.hostile}/settings/judge",
        f"/benchmarks/{site.hostile}/participants/email",
    ]
    for path in paths:
        response = site.cy.get(path)
        assert response.status_code == 404, path
        assert "Quiz" not in response.text
    refused = site.cy.post(f"/benchmarks/{site.hostile}/questions/1/delete", {"version": "1"})
    assert refused.status_code == 404


def test_a_collaborator_edits_questions_but_not_access(site: Site) -> None:
    edit = site.bob.page(f"/benchmarks/{site.hostile}/questions/2")
    version = edit.find("input", attrs={"name": "version"})
    assert version is not None
    response = site.bob.post(
        f"/benchmarks/{site.hostile}/questions/2",
        {
            "version": version["value"],
            "q0-prompt": "Second, edited?",
            "q0-choices": "yes\nno",
            "q0-answer": "B",
        },
    )
    assert response.status_code == 303
    assert "Second, edited?" in site.bob.get(response.headers["location"]).text
    refused = site.bob.get(f"/benchmarks/{site.hostile}/settings/access")
    assert refused.status_code == 403
    assert "only the owner can manage collaborators" in refused.text


def test_a_refusal_says_who_may_and_links_to_the_benchmark_not_back(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Published for refusals"})
    site.world.do(Principal.web(site.ana_id), lifecycle.publish_benchmark, bm)
    for tail in ("/questions/1", "/settings", "/settings/access"):
        refused = site.cy.get(f"/benchmarks/{bm}{tail}")
        assert refused.status_code == 403, tail
        section = _soup(refused.text).select_one("section.error")
        assert section is not None
        assert "only the owner" in section.get_text(), tail
        assert "its page in the web app" not in section.get_text(), tail
        links = [a["href"] for a in section.find_all("a")]
        assert f"/benchmarks/{bm}" in links and f"/benchmarks/{bm}{tail}" not in links, tail


def test_create_an_mcq_benchmark_in_the_editor(site: Site) -> None:
    form = {
        "format": "mcq",
        "title": "Editor quiz",
        "description": "Made in the editor",
        "q0-prompt": "Two plus two?",
        "q0-choices": "3\n4\n5",
        "q0-answer": "b",
        "q1-prompt": "Sky?",
        "q1-choices": "Blue\nGreen",
        "q1-answer": "A",
        "q1-tags": "easy, colours",
    }
    added = site.ana.post("/benchmarks", {**form, "action": "add"})
    assert added.status_code == 200
    soup = _soup(added.text)
    assert soup.find("textarea", id="q2-prompt") is not None  # one more, empty row
    assert soup.find("textarea", id="q1-prompt").get_text() == "Sky?"  # type: ignore[union-attr]
    created = site.ana.post("/benchmarks", {**form, "q2-prompt": "", "action": "create"})
    assert created.status_code == 303
    location = created.headers["location"]
    overview = site.ana.page(location)
    assert "Created with 2 questions." in overview.get_text()
    listed = site.ana.page("/benchmarks?show=mine&q=Editor").get_text()
    assert "Editor quiz" in listed
    assert "Editor quiz" not in site.ana.page("/benchmarks?show=published").get_text()
    questions = site.ana.page(f"{location}/questions").get_text()
    assert "Two plus two?" in questions and "easy, colours" in questions


def test_switching_the_format_keeps_what_was_typed(site: Site) -> None:
    typed = {
        "format": "mcq",
        "title": "Half-typed quiz",
        "description": "Not lost",
        "q0-prompt": "Two plus two?",
        "q0-choices": "3\n4",
        "q0-answer": "B",
        "q0-tags": "sums",
        "q1-prompt": "",
        "q1-choices": "only choices here",
        "q1-answer": "",
    }
    as_qa = site.ana.post("/benchmarks", {**typed, "action": "format-qa"})
    assert as_qa.status_code == 200
    soup = _soup(as_qa.text)
    current = soup.select_one("ul.tabs [aria-current=page]")
    assert current is not None and current.get_text() == "Question and answer"
    assert soup.find("input", {"name": "format"})["value"] == "qa"  # type: ignore[index]
    assert soup.find("input", id="title")["value"] == "Half-typed quiz"  # type: ignore[index]
    assert soup.find("textarea", id="description").get_text() == "Not lost"  # type: ignore[union-attr]
    assert soup.find("textarea", id="q0-prompt").get_text() == "Two plus two?"  # type: ignore[union-attr]
    assert soup.find("input", id="q0-tags")["value"] == "sums"  # type: ignore[index]
    assert soup.find("textarea", id="q0-choices") is None  # a qa question has no choices
    kept = {field["name"]: field["value"] for field in soup.select("input[type=hidden]")}
    assert kept["q0-choices"] == "3\n4"
    back = {
        **typed,
        "format": "qa",
        "q0-answer": "4",
        "q1-choices": kept["q1-choices"],
        "action": "format-mcq",
    }
    as_mcq = _soup(site.ana.post("/benchmarks", back).text)
    assert as_mcq.find("textarea", id="q0-choices").get_text() == "3\n4"  # type: ignore[union-attr]
    # Created as question and answer, the row holding only unseen choices is left out.
    created = site.ana.post("/benchmarks", {**back, "action": "create"} | {"format": "qa"})
    assert created.status_code == 303
    assert "Created with 1 question." in site.ana.page(created.headers["location"]).get_text()
    assert _titles(site, "Half-typed") == ["Half-typed quiz"]


def test_a_warning_names_the_question_as_the_editor_numbers_it(site: Site) -> None:
    form = {
        "format": "mcq",
        "title": "Warned quiz",
        "q0-prompt": "",
        "q1-prompt": "Capital of France?",
        "q1-choices": "Paris\nParis\nLondon",
        "q1-answer": "A",
        "action": "create",
    }
    created = site.ana.post("/benchmarks", form)
    assert created.status_code == 303
    note = site.ana.page(created.headers["location"]).get_text()
    assert "Question 2, choices: two choices read the same (A and B)" in note
    assert "questions.0" not in note


def test_the_one_question_editor_warns_of_choices_alike_as_creating_does(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**MCQ, "title": "Edited one at a time"})
    alike = {"q0-prompt": "Which?", "q0-choices": "Red\nred\nBlue", "q0-answer": "C"}
    for path in ("/questions/new", "/questions/1"):
        saved = site.ana.post(f"/benchmarks/{bm}{path}", alike)
        assert saved.status_code == 303, path
        note = site.ana.page(saved.headers["location"]).find("p", class_="flash").get_text()
        assert "Warning: Question" in note and "two choices read the same (A and B)" in note


def test_an_unknown_export_format_is_said_once_in_words(site: Site) -> None:
    response = site.ana.get(f"/benchmarks/{site.hostile_qa}/export/xml")
    assert response.status_code == 422
    text = _soup(response.text).select_one("section.error").get_text()  # type: ignore[union-attr]
    assert text.count("must be one of") == 1
    assert "Format: must be one of" in text


def test_invalid_editor_input_is_shown_by_field_and_keeps_what_was_typed(site: Site) -> None:
    form = {
        "format": "mcq",
        "title": f"Broken {HOSTILE}",
        "q0-prompt": "",
        "q0-choices": "x\ny",
        "q0-answer": "A",
        "q1-prompt": "Typed prompt",
        "q1-choices": "a\nb",
        "q1-answer": "E",
        "action": "create",
    }
    response = site.ana.post("/benchmarks", form)
    assert response.status_code == 422
    assert_escaped(response.text)
    soup = _soup(response.text)
    summary = soup.select_one(".problems")
    assert summary is not None
    text = summary.get_text()
    assert "Question 1, prompt: must not be empty" in text
    assert "Question 2, answer: must be one choice label (A–B)" in text
    prompt = soup.find("textarea", id="q0-prompt")
    assert prompt is not None and prompt["aria-invalid"] == "true"
    assert soup.find("p", id="q1-answer-error") is not None
    assert soup.find("textarea", id="q1-prompt").get_text() == "Typed prompt"  # type: ignore[union-attr]
    assert soup.find("input", id="q1-answer")["value"] == "E"  # type: ignore[index]
    assert soup.find("input", id="title")["value"] == f"Broken {HOSTILE}"  # type: ignore[index]
    assert _titles(site, "Broken") == []


def test_import_shows_the_bad_line_and_creates_from_a_good_file(site: Site) -> None:
    lines = b'{"prompt": "2+2?", "answer": "4"}\n\n{"prompt": oops}\n'
    data = {"csrf_token": site.ana.csrf, "title": "Imported", "format": "qa"}
    bad = site.ana.client.post(
        "/benchmarks/import", data=data, files={"file": ("q.jsonl", lines, "application/json")}
    )
    assert bad.status_code == 422
    problems = _soup(bad.text).select_one(".problems")
    assert problems is not None and "Line 3: not valid JSON" in problems.get_text()
    assert _soup(bad.text).find("input", id="title")["value"] == "Imported"  # type: ignore[index]
    csv_text = b"prompt,answer,choice_a,choice_b\nSky?,B,Green,Blue\n"
    good = site.ana.client.post(
        "/benchmarks/import",
        data={**data, "format": "mcq"},
        files={"file": ("q.csv", csv_text, "text/csv")},
    )
    assert good.status_code == 303
    assert "Sky?" in site.ana.page(good.headers["location"] + "/questions").get_text()
    pasted = site.ana.post(
        "/benchmarks/import", {**data, "content": '{"prompt": "x", "answer": "y"}'}
    )
    assert pasted.status_code == 303


def test_an_import_with_a_file_and_pasted_text_is_refused(site: Site) -> None:
    pasted = '{"prompt": "Pasted?", "answer": "y"}'
    data = {"csrf_token": site.ana.csrf, "title": "Both given", "format": "qa", "content": pasted}
    line = b'{"prompt": "From the file?", "answer": "x"}\n'
    both = site.ana.client.post(
        "/benchmarks/import", data=data, files={"file": ("q.jsonl", line, "application/json")}
    )
    assert both.status_code == 422
    error = _soup(both.text).find(id="file-error")
    assert error is not None and "not both" in error.get_text()
    assert _soup(both.text).find("textarea", id="content").get_text() == pasted  # type: ignore[union-attr]
    assert _titles(site, "Both given") == []


def test_a_benchmarks_page_past_the_last_says_so_and_links_to_page_1(site: Site) -> None:
    text = site.ana.page("/benchmarks?page=40")
    assert "No more benchmarks" in text.get_text()
    assert "No benchmarks here yet" not in text.get_text()
    assert text.find("a", string="Go to page 1")["href"] == "/benchmarks?show=all&q="  # type: ignore[index]


def test_long_titles_wrap_in_headings_and_table_cells(site: Site) -> None:
    # Set on the body, so every text people type wraps (tests/e2e measures the pages).
    css = site.ana.get("/static/app.css").text
    body = next(line for line in css.splitlines() if line.startswith("body {"))
    assert "overflow-wrap: anywhere;" in body


def test_forms_without_the_csrf_token_are_refused(site: Site) -> None:
    client = site.ana.client
    response = client.post("/benchmarks", data={"format": "qa", "title": "Forged"})
    assert response.status_code == 403
    assert _titles(site, "Forged") == []
    deleted = client.post(
        f"/benchmarks/{site.hostile_qa}/settings/delete", data={"confirm": "anything"}
    )
    assert deleted.status_code == 403
    site.ana.page(f"/benchmarks/{site.hostile_qa}")


def test_joining_needs_the_terms_accepted(site: Site) -> None:
    owner = Principal.web(site.ana_id)
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Open house"})
    site.world.do(owner, lifecycle.publish_benchmark, bm)
    form = site.cy.page(f"/benchmarks/{bm}").find("form", action=f"/benchmarks/{bm}/join")
    assert form is not None and form.find("input", attrs={"name": "accept_terms"}) is not None
    refused = site.cy.post(f"/benchmarks/{bm}/join")
    assert refused.status_code == 422 and "accept the terms" in refused.text
    joined = site.cy.post(f"/benchmarks/{bm}/join", {"accept_terms": "yes"})
    assert joined.status_code == 303
    assert "You joined" in site.cy.page(f"/benchmarks/{bm}").get_text()


def test_someone_on_the_whitelist_sees_an_invitation_and_joins(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Invite only"})
    site.world.do(Principal.web(site.ana_id), members.add_whitelist_entries, bm, ["cy@example.com"])
    invitation = site.cy.page(f"/benchmarks/{bm}")
    assert "You are invited" in invitation.get_text()
    assert site.cy.post(f"/benchmarks/{bm}/join", {"accept_terms": "yes"}).status_code == 303
    assert "Capital of France?" in site.cy.page(f"/benchmarks/{bm}/questions").get_text()


def test_the_leaderboard_ranks_the_added_run_and_charts_it(site: Site) -> None:
    soup = site.ana.page(f"/benchmarks/{site.scored}/leaderboard")
    row = soup.select_one("tbody tr")
    assert row is not None
    cells = [cell.get_text(strip=True) for cell in row.find_all(["td", "th"])]
    assert cells[0] == "1" and cells[1] == "Baseline: always the first choice"
    link = row.find("a", href=f"/runs/{site.run_id}")
    assert link is not None
    canvas = soup.find("canvas", attrs={"data-chart": "leaderboard-chart"})
    block = soup.find("script", id="leaderboard-chart")
    assert canvas is not None and block is not None and block["type"] == "application/json"
    chart = json.loads(block.get_text())
    assert chart["type"] == "bar"
    # On short lines: a long label is cut at the canvas's edge, rank first, on a phone.
    assert chart["data"]["labels"] == [["#1 Baseline:", "always the", "first choice"]]
    assert 0 <= chart["data"]["datasets"][0]["data"][0] <= 100


def test_frozen_questions_say_why_and_refuse_edits(site: Site) -> None:
    page = site.ana.page(f"/benchmarks/{site.scored}/questions").get_text()
    assert "frozen: this benchmark already has a run" in page
    refused = site.ana.post(
        f"/benchmarks/{site.scored}/questions/1",
        {"q0-prompt": "Changed?", "q0-choices": "a\nb", "q0-answer": "A"},
    )
    assert refused.status_code == 409 and "frozen" in refused.text


def test_frozen_questions_open_read_only_with_no_save_form(site: Site) -> None:
    for tail in ("/questions/1", "/questions/new"):
        page = site.ana.page(f"/benchmarks/{site.scored}{tail}")
        assert "frozen: this benchmark already has a run" in page.get_text(), tail
        editing = [form for form in page.find_all("form") if "/questions" in form["action"]]
        assert editing == [], tail
        assert "Saving changes the benchmark's version" not in page.get_text(), tail
    shown = site.ana.page(f"/benchmarks/{site.scored}/questions/1")
    assert shown.select_one("p.message") is not None  # the question itself, as text


def test_a_missing_question_number_is_a_404_page(site: Site) -> None:
    for number in ("999", "0", "-1", "abc", "²", "9" * 5000):
        response = site.ana.get(f"/benchmarks/{site.hostile}/questions/{number}")
        assert response.status_code == 404, number
        assert "No such question." in response.text and "path." not in response.text


def test_evaluate_shows_refusals_and_starts_a_run(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Evaluate me"})
    picker = site.ana.page(f"/benchmarks/{bm}/evaluate")
    groups = [group["label"] for group in picker.find_all("optgroup")]
    assert groups == ["Platform models"]
    refused = site.ana.post(f"/benchmarks/{bm}/evaluate", {"model_id": "mdl_nope"})
    assert refused.status_code == 404 and "No such model." in refused.text
    estimate = site.ana.page(f"/benchmarks/{bm}/evaluate?model_id=mdl_builtin_echo")
    assert "credits at most" in estimate.get_text()
    started = site.ana.post(f"/benchmarks/{bm}/evaluate", {"model_id": "mdl_builtin_echo"})
    assert started.status_code == 303 and started.headers["location"].startswith("/runs/run_")


def test_an_over_long_title_is_refused_by_its_field_never_cut_short(site: Site) -> None:
    # A browser's maxlength would cut a pasted title without a word; the server says why.
    long = "T" * 201
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Short enough"})
    for path in ("/benchmarks/new", "/benchmarks/import", f"/benchmarks/{bm}/settings", "/chat"):
        field = site.ana.page(path).find("input", id="title")
        assert field is not None and not field.has_attr("maxlength"), path
    editor = {"format": "qa", "q0-prompt": "p", "q0-answer": "a", "action": "create"}
    forms = {
        "/benchmarks": editor,
        "/benchmarks/import": {"format": "qa", "content": '{"prompt": "x", "answer": "y"}'},
        f"/benchmarks/{bm}/settings": {"description": ""},
    }
    for path, form in forms.items():
        refused = site.ana.post(path, {**form, "title": long})
        assert refused.status_code == 422, (path, refused.text[:300])
        soup = _soup(refused.text)
        error = soup.find("p", id="title-error")
        assert error is not None and "at most 200 characters" in error.get_text(), path
        assert soup.find("input", id="title")["value"] == long  # type: ignore[index]


def test_a_benchmark_with_no_questions_offers_adding_them_not_evaluating(site: Site) -> None:
    empty = site.world.benchmark(site.ana_id, {"title": "Nothing yet", "format": "qa"})
    for tab in ("", "/evaluate"):
        page = site.ana.page(f"/benchmarks/{empty}{tab}")
        text = " ".join(page.get_text().split())
        assert "no questions yet, so there is nothing to evaluate" in text, tab
        assert page.find("a", string="add or import some")["href"].endswith("/questions")
        assert page.find("a", string="Evaluate a model") is None
        assert page.find("button", string="See the estimate") is None


def test_saving_again_after_a_conflict_never_writes_over_another_question(site: Site) -> None:
    """The conflict page carried the version of now: a second Save passed the check and
    replaced whichever question had moved up to the number."""
    three = [{"prompt": f"Question {n}?", "answer": str(n)} for n in (1, 2, 3)]
    bm = site.world.benchmark(site.ana_id, {"title": "Three", "format": "qa", "questions": three})
    opened = site.ana.page(f"/benchmarks/{bm}/questions/2")
    since = opened.find("input", attrs={"name": "version"})["value"]
    edit = {"version": since, "q0-prompt": "Question 2, edited?", "q0-answer": "2"}
    removed = site.ana.post(f"/benchmarks/{bm}/questions/1/delete", {"version": since})
    assert removed.status_code == 303  # in another tab: question 3 is now number 2
    for _ in range(2):
        refused = site.ana.post(f"/benchmarks/{bm}/questions/2", edit)
        assert refused.status_code == 409 and "changed since this page was opened" in refused.text
        kept = _soup(refused.text).find("input", attrs={"name": "version"})["value"]
        assert kept == since and "Question 2, edited?" in refused.text
        edit["version"] = kept
    listed = site.world.do(Principal.web(site.ana_id), lifecycle.list_questions, bm)
    assert [question["prompt"] for question in listed] == ["Question 2?", "Question 3?"]


def test_deleting_a_question_asks_first_on_a_page_that_shows_it(site: Site) -> None:
    two = [{"prompt": f"Question {n}?", "answer": str(n)} for n in (1, 2)]
    bm = site.world.benchmark(site.ana_id, {"title": "Two", "format": "qa", "questions": two})
    listing = site.ana.page(f"/benchmarks/{bm}/questions")
    link = listing.find("a", string="Delete question 1")
    assert link is not None and listing.find("button", string="Delete question 1") is None
    confirm = site.ana.page(link["href"])
    assert "Delete question 1?" in confirm.get_text() and "Question 1?" in confirm.get_text()
    form = confirm.find("button", string="Delete question 1").find_parent("form")
    assert form["action"] == f"/benchmarks/{bm}/questions/1/delete"
    version = form.find("input", attrs={"name": "version"})["value"]
    assert f"from {version} to {int(version) + 1}" in " ".join(confirm.get_text().split())
    kept = [
        q["prompt"] for q in site.world.do(Principal.web(site.ana_id), lifecycle.list_questions, bm)
    ]
    assert kept == ["Question 1?", "Question 2?"]  # opening the page removed nothing
    assert site.ana.post(form["action"], {"version": version}).status_code == 303
    left = site.world.do(Principal.web(site.ana_id), lifecycle.list_questions, bm)
    assert [q["prompt"] for q in left] == ["Question 2?"]
    assert (
        site.world.do(Principal.web(site.ana_id), lifecycle.get_benchmark, bm).version
        == int(version) + 1
    )
    assert site.ana.get(f"/benchmarks/{bm}/questions/2/delete").status_code == 404
    assert site.cy.get(f"/benchmarks/{bm}/questions/1/delete").status_code == 404
