"""The compare page: picking two runs, the figures for everyone who may see both, tags and the
question table (with its filter) for the benchmark's team only, and refusals shown as such."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import compare, launch, leaderboards
from benchgen.services.runtime import Runtime
from benchgen.web import charts
from benchgen.web.pages import run_compare
from tests.services.test_compare import FIRST, RANDOM, TWELVE, finished
from tests.support import MCQ, World
from tests.web.support import WebUser

PAGE = "/runs/compare"


@pytest.fixture
def browser(runtime: Runtime) -> Iterator[TestClient]:
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield client


def test_the_owner_sees_figures_tags_and_questions(
    world: World, runtime: Runtime, browser: TestClient
) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    run_a = finished(world, runtime, owner, benchmark, FIRST)
    run_b = finished(world, runtime, owner, benchmark, RANDOM)
    found = world.do(Principal.web(owner), compare.compare_runs, run_a, run_b)
    person = WebUser.sign_in(browser, "owner@example.com")

    # The run page links here with run A chosen; the picker offers both runs.
    run_page = person.page(f"/runs/{run_a}")
    link = run_page.find("a", string=lambda text: bool(text) and "Compare with" in text)
    assert link is not None and link["href"] == f"{PAGE}?a={run_a}"
    picker = person.page(str(link["href"]))
    offered = [option["value"] for option in picker.select("#compare-b option") if option["value"]]
    assert set(offered) == {run_a, run_b}

    page = person.page(f"{PAGE}?a={run_a}&b={run_b}")
    assert page.select_one("[data-difference]").text.strip() == (
        f"{found.difference * 100:+.1f} points"
    )
    assert page.select_one("[data-p-value]").text.strip() == f"p = {found.p_value:.4g}"
    chart = json.loads(page.select_one("#compare-chart-data").string)
    assert chart["data"]["datasets"][0]["data"] == [33.3, round(found.accuracy_b * 100, 1)]
    # Model names go on short lines, or Chart.js cuts them off at the canvas's edge.
    labels = chart["data"]["labels"]
    assert [" ".join(label) for label in labels] == [f"A: {found.model_a}", f"B: {found.model_b}"]
    assert all(0 < len(line) <= charts.LABEL_LINE for label in labels for line in label)
    assert page.find("h2", id="tags-title") is not None
    rows = page.select("tr[data-position]")
    assert len(rows) == 12 and rows[0].th.text == "1"
    only_b = person.page(f"{PAGE}?a={run_a}&b={run_b}&show=only_b")
    categories = {row["data-category"] for row in only_b.select("tr[data-position]")}
    assert categories <= {"only_b"} and len(only_b.select("tr[data-position]")) == found.only_b
    assert page.select_one("[data-aggregates-only]") is None
    assert page.select_one("[data-edited]") is None
    # A score corrected by hand: the page says its figures come from the answers.
    reason = "the key of question 3 was wrong"
    world.do(Principal.web(owner), leaderboards.edit_run_score, run_b, {"accuracy": 0.5}, reason)
    edited = person.page(f"{PAGE}?a={run_a}&b={run_b}").select_one("[data-edited]")
    assert edited is not None and edited.text.startswith("Run B: its official score was corrected")


def test_long_model_names_are_wrapped_and_shortened_for_the_chart() -> None:
    wrapped = charts.chart_label("B: Qwen2.5-1.5B-Instruct-GGUF-Q4_K_M-extra-long-name")
    assert len(wrapped) == charts.LABEL_LINES and wrapped[-1].endswith("…")
    assert all(len(line) <= charts.LABEL_LINE for line in wrapped)
    assert charts.chart_label("A: x") == ["A: x"]


def test_a_stranger_is_offered_no_comparison(
    world: World, runtime: Runtime, browser: TestClient
) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    stranger = world.user("stranger@example.com")
    run_a = finished(world, runtime, stranger, benchmark, FIRST)
    run_b = finished(world, runtime, stranger, benchmark, RANDOM)
    person = WebUser.sign_in(browser, "stranger@example.com")
    assert person.page(f"/runs/{run_a}").find("a", string="Compare with another run…") is None
    refused = person.get(f"{PAGE}?a={run_a}&b={run_b}")
    assert refused.status_code == 403 and "owner and collaborators compare runs" in refused.text
    assert "Question 1" not in refused.text and "group0" not in refused.text
    picker = person.page(PAGE)
    assert run_a not in str(picker) and run_b not in str(picker)


def test_runs_that_do_not_compare_show_why(
    world: World, runtime: Runtime, browser: TestClient
) -> None:
    owner = world.user("owner@example.com")
    run_a = finished(world, runtime, owner, world.benchmark(owner, TWELVE), FIRST)
    other = world.benchmark(owner, MCQ)
    run_b = finished(world, runtime, owner, other, FIRST)
    person = WebUser.sign_in(browser, "owner@example.com")
    answer = person.get(f"{PAGE}?a={run_a}&b={run_b}")
    assert answer.status_code == 422 and "different benchmarks" in answer.text
    assert 'id="compare-a"' in answer.text  # the form is still there to choose again
    queued = world.do(Principal.web(owner), launch.start_run, other, FIRST)
    answer = person.get(f"{PAGE}?a={run_b}&b={queued.id}")
    assert answer.status_code == 422 and "Run B: the run is queued" in answer.text
    unseen = person.get(f"{PAGE}?a=run_nowhere&b={run_b}")
    assert unseen.status_code == 404


def test_the_page_needs_a_session(browser: TestClient) -> None:
    answer = browser.get(PAGE)
    assert answer.status_code == 303 and "/signin" in answer.headers["location"]


def test_with_no_runs_chosen_the_form_offers_finished_runs(
    world: World, runtime: Runtime, browser: TestClient
) -> None:
    owner = world.user("owner@example.com")
    done = finished(world, runtime, owner, world.benchmark(owner, TWELVE), FIRST)
    person = WebUser.sign_in(browser, "owner@example.com")
    page = person.page(PAGE)
    offered = [option["value"] for option in page.select("#compare-a option") if option["value"]]
    assert offered == [done]


def test_runs_still_going_take_no_place_among_the_choices(
    world: World, runtime: Runtime, browser: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest runs were read first and only then the unfinished dropped: with more runs
    going than the picker's places, it offered none of the finished ones."""
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    done = finished(world, runtime, owner, benchmark, FIRST)
    for _ in range(2):  # queued, newer than the finished one
        world.do(Principal.web(owner), launch.start_run, benchmark, FIRST)
    monkeypatch.setattr(run_compare, "CHOICES", 2)
    page = WebUser.sign_in(browser, "owner@example.com").page(PAGE)
    offered = [option["value"] for option in page.select("#compare-a option") if option["value"]]
    assert offered == [done]
