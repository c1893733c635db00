"""Custom benchmark pages: uploading a bundle, its pages and phases, submissions, program output,
bundle columns on the leaderboard, the team's bundle settings, versions and downloads."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runtime import Runtime
from tests.bundle_factory import (
    SCORER,
    bundle,
    competition,
    programs_started,
    require_sandbox,
    results,
)
from tests.services.test_runs import work_all
from tests.support import World
from tests.web.benchmark_site import assert_escaped
from tests.web.support import WebUser

ZIP = "application/zip"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


@dataclass
class People:
    """Ana (who uploads) and Cy (a stranger), each signed in in their own browser."""

    ana: WebUser
    cy: WebUser
    ana_id: str
    world: World
    runtime: Runtime


@pytest.fixture
def people(runtime: Runtime, world: World) -> Iterator[People]:
    ana_id = world.user("ana@example.com", credits_=1000)
    world.user("cy@example.com", credits_=1000)
    clients = [TestClient(create_app(runtime.settings, runtime), follow_redirects=False)]
    clients.append(TestClient(create_app(runtime.settings, runtime), follow_redirects=False))
    with clients[0] as first, clients[1] as second:
        ana = WebUser.sign_in(first, "ana@example.com")
        cy = WebUser.sign_in(second, "cy@example.com")
        yield People(ana, cy, ana_id, world, runtime)


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def _upload(person: WebUser, data: bytes, path: str = "/benchmarks/upload") -> Any:
    return person.post(path, files={"bundle": ("tiny.zip", data, ZIP)})


def _created(people: People, data: bytes | None = None) -> str:
    response = _upload(people.ana, data or bundle())
    assert response.status_code == 303, response.text[:2000]
    found = re.fullmatch(r"/benchmarks/(bm_\w+)", response.headers["location"])
    assert found is not None, response.headers["location"]
    return found.group(1)


def _submit(person: WebUser, bm: str, data: bytes, **fields: str) -> Any:
    files = {"submission": ("f.zip", data, ZIP)}
    return person.post(f"/benchmarks/{bm}/submissions", {"kind": "auto", **fields}, files=files)


def _publish(people: People, bm: str) -> None:
    people.world.do(Principal.web(people.ana_id), lifecycle.publish_benchmark, bm)


def test_upload_makes_a_benchmark_whose_overview_shows_sanitised_pages(people: People) -> None:
    new = people.ana.page("/benchmarks/new")
    assert new.find("a", href="/benchmarks/upload") is not None
    form = people.ana.page("/benchmarks/upload").find("form", enctype="multipart/form-data")
    assert form is not None and form.find("input", attrs={"name": "bundle", "type": "file"})
    response = _upload(people.ana, bundle(competition(surprise="yes")))
    assert response.status_code == 303
    flash = people.ana.get(response.headers["location"])
    assert flash.status_code == 200
    note = _soup(flash.text).select_one(".flash")
    assert note is not None
    assert "1 warning(s)" in note.get_text() and "surprise" in note.get_text()
    assert "passed (accuracy 1.0" in note.get_text()
    assert_escaped(flash.text)
    page = _soup(flash.text)
    headings = [h.get_text() for h in page.find_all("h2")]
    assert "Overview" in headings and "Terms" in headings and "Phases" in headings
    assert page.find("em", string="questions") is not None  # the page's Markdown, rendered
    assert page.find("b", string="nice") is not None and "alert(1)" not in flash.text
    text = page.get_text(" ")
    assert "Development" in text and "codalab/codalab-legacy:py39" in text
    assert "not Docker" in text and "Errors" in text and "lower is better" in text


def test_a_broken_bundle_lists_every_problem_with_its_line_and_creates_nothing(
    people: People,
) -> None:
    phase = {"index": 0, "name": "Dev", "start": "someday", "tasks": [7]}
    broken = bundle(competition(phases=[phase], title=""))
    response = _upload(people.ana, broken)
    assert response.status_code == 422
    problems = [li.get_text() for li in _soup(response.text).select(".problems li")]
    assert len(problems) >= 2, problems
    assert all(re.search(r"Line \d+", problem) for problem in problems), problems
    assert any("phases" in problem for problem in problems)
    mine = people.world.do(Principal.web(people.ana_id), lifecycle.list_benchmarks)
    assert mine == []
    not_a_zip = _upload(people.ana, b"plain text")
    assert not_a_zip.status_code == 422 and "problems" in not_a_zip.text


def test_a_submission_becomes_a_run_and_only_the_team_sees_program_output(
    people: People,
) -> None:
    bm = _created(people)
    _publish(people, bm)
    evaluate = people.cy.page(f"/benchmarks/{bm}/evaluate")
    assert evaluate.find("input", attrs={"name": "submission"}) is not None
    assert evaluate.find("select", attrs={"name": "model_id"}) is not None  # models too
    response = _submit(people.cy, bm, results({"q1": "paris"}), phase="0")
    assert response.status_code == 303, response.text[:1000]
    run_path = response.headers["location"]
    assert run_path.startswith("/runs/run_")
    work_all(people.runtime)
    theirs = people.cy.page(run_path)
    text = theirs.get_text(" ")
    assert "Submission f.zip" in text and "Accuracy" in text and "Errors" in text
    assert "0.5" in text and "50.0%" not in text
    assert "Program output" not in text
    team = people.ana.page(run_path)
    output = team.select("pre.program-output")
    assert output and "scored 2 items" in output[0].get_text()


def test_submission_refusals_show_on_the_page(people: People) -> None:
    ended = {"index": 1, "name": "Closed", "start": "1-1-2020", "end": "1-1-2021", "tasks": [0]}
    first = {**competition()["phases"][0], "max_submissions": 1}
    bm = _created(people, bundle(competition(phases=[first, ended])))
    refused = _submit(people.ana, bm, b"not a zip", phase="0")
    assert refused.status_code == 422 and "must be a .zip" in refused.text
    closed = _submit(people.ana, bm, results({"q1": "paris"}), phase="1")
    assert closed.status_code == 409 and "is not open now" in closed.text
    assert _submit(people.ana, bm, results({"q1": "paris"}), phase="0").status_code == 303
    again = _submit(people.ana, bm, results({"q1": "paris"}), phase="0")
    assert again.status_code == 409 and "submissions phase" in again.text
    assert _soup(again.text).select_one(".problems") is not None


def test_the_leaderboard_shows_bundle_columns_with_directions_not_percent(
    people: People,
) -> None:
    bm = _created(people)
    run_path = _submit(people.ana, bm, results({"q1": "paris", "q2": "4"})).headers["location"]
    work_all(people.runtime)
    run_page = people.ana.page(run_path)
    add = run_page.find("form", action=f"{run_path}/leaderboard")
    assert add is not None, "the team is offered to add the completed run"
    assert people.ana.post(f"{run_path}/leaderboard").status_code == 303
    board = people.ana.page(f"/benchmarks/{bm}/leaderboard")
    headers = [th.get_text(" ", strip=True) for th in board.select("thead th")]
    assert any(h.startswith("Accuracy ↑") for h in headers), headers
    assert any(h.startswith("Errors ↓") for h in headers), headers
    assert any(h.startswith("Sum") for h in headers), headers
    cells = [td.get_text() for td in board.select("tbody td")]
    assert "%" not in " ".join(cells) and "1" in cells
    assert "Submission f.zip" in board.get_text()


def test_the_team_sees_the_bundle_settings_downloads_and_uploads_a_new_version(
    people: People,
) -> None:
    original = bundle()
    bm = _created(people, original)
    settings = people.ana.page(f"/benchmarks/{bm}/settings/bundle")
    text = settings.get_text(" ")
    assert "Current bundle" in text and "ok" in text and "accuracy 1.0" in text
    assert settings.find("a", string="Bundle") is not None  # its settings tab
    download = people.ana.get(f"/benchmarks/{bm}/bundle/download")
    assert download.status_code == 200 and download.content == original
    assert download.headers["content-type"] == ZIP
    assert download.headers["content-disposition"].startswith("attachment;")
    assert download.headers["x-content-type-options"] == "nosniff"
    changed = bundle(competition(title="Tiny custom, revised"))
    done = _upload(people.ana, changed, f"/benchmarks/{bm}/settings/bundle")
    assert done.status_code == 303, done.text[:1000]
    after = people.ana.page(done.headers["location"])
    assert "Version 2 uploaded." in after.get_text()
    links = [a["href"] for a in after.find_all("a", string=re.compile("Download v"))]
    assert sorted(links) == [f"/benchmarks/{bm}/bundle/download?version={n}" for n in (1, 2)]
    first = people.ana.get(f"/benchmarks/{bm}/bundle/download?version=1")
    assert first.content == original
    assert people.ana.get(f"/benchmarks/{bm}/bundle/download").content == changed
    broken = _upload(people.ana, bundle(competition(title="")), f"/benchmarks/{bm}/settings/bundle")
    assert broken.status_code == 422 and re.search(r"Line \d+", broken.text)


def test_a_stranger_cannot_download_the_bundle_or_see_its_settings(people: People) -> None:
    bm = _created(people)
    assert people.cy.get(f"/benchmarks/{bm}/bundle/download").status_code == 404
    _publish(people, bm)
    refused = people.cy.get(f"/benchmarks/{bm}/bundle/download")
    assert refused.status_code in (403, 404) and "text/html" in refused.headers["content-type"]
    assert people.cy.get(f"/benchmarks/{bm}/settings/bundle").status_code in (403, 404)
    version = _upload(people.cy, bundle(), f"/benchmarks/{bm}/settings/bundle")
    assert version.status_code in (403, 404)
    overview = people.cy.page(f"/benchmarks/{bm}")
    assert overview.find("a", href=f"/benchmarks/{bm}/settings") is None
    assert "Overview" in [h.get_text() for h in overview.find_all("h2")]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_writes_go_on_while_a_new_versions_programs_run(
    people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As through the API: the page runs the bundle's programs with no transaction open, so
    # SQLite's write lock is free for everyone else meanwhile.
    bm = _created(people)
    running = programs_started(monkeypatch)
    slow = bundle(scorer="import time\ntime.sleep(3)\n" + SCORER)
    path = f"/benchmarks/{bm}/settings/bundle"
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(_upload(people.ana, slow, path)))
    thread.start()
    try:
        assert running.wait(30), "the new version's solution never started"
        started = time.monotonic()
        people.world.do(
            Principal.web(people.ana_id), lifecycle.create_benchmark, {"title": "x", "format": "qa"}
        )
        took = time.monotonic() - started
    finally:
        thread.join(60)
    assert took < 1.5, f"the write waited {took:.1f} s for the upload's programs"
    assert answers[0].status_code == 303, answers[0].text[:2000]
    assert "Version 2 uploaded" in people.ana.page(path).text


def test_lists_count_no_questions_for_a_custom_benchmark(people: People) -> None:
    """A bundle's benchmark has tasks its program scores, not questions: "0 questions" misled."""
    bm = _created(people)
    row = people.ana.page("/benchmarks").find("a", href=f"/benchmarks/{bm}").find_parent("tr")
    cells = [cell.get_text(strip=True) for cell in row.find_all("td")]
    assert cells[:2] == ["custom", "—"], cells
    dashboard = people.ana.page("/").find("a", href=f"/benchmarks/{bm}").find_parent("li")
    assert "question" not in dashboard.get_text(), dashboard.get_text()


def test_the_phases_page_of_a_custom_benchmark_sends_new_tasks_to_the_bundle(
    people: People,
) -> None:
    """Its form made a task with no scoring program, which no run ever evaluated."""
    bm = _created(people)
    page = people.ana.page(f"/benchmarks/{bm}/settings/phases")
    assert page.find("form", action=f"/benchmarks/{bm}/settings/tasks/add") is None
    link = page.find("a", string="upload the bundle as a new version")
    assert link is not None and link["href"] == f"/benchmarks/{bm}/settings/bundle"
    sent = people.ana.post(
        f"/benchmarks/{bm}/settings/tasks/add", {"task_name": "By hand", "phase_ids": "x"}
    )
    assert sent.status_code == 422 and "tasks come from its bundle" in sent.text
