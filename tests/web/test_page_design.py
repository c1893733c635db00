"""What a newcomer reads on the pages: empty states that say what to do next, times that say
they are UTC, model kinds in words, tables that scroll inside their own box on a phone."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.core.context import Principal
from benchgen.services.runs import leaderboards
from benchgen.services.runtime import Runtime
from tests.services.test_compare import FIRST, RANDOM, TWELVE, finished
from tests.support import World
from tests.web.support import WebUser


def _unwrapped_tables(page: BeautifulSoup) -> list[str]:
    """The tables with no .table-wrap around them: on a phone they squeeze or widen the page."""
    return [
        " ".join(table.stripped_strings)[:60]
        for table in page.find_all("table")
        if table.find_parent(class_="table-wrap") is None
    ]


def _column_titles(page: BeautifulSoup) -> list[str]:
    return [" ".join(th.stripped_strings) for th in page.select("thead th")]


def test_a_newcomers_dashboard_says_where_to_start(signed_in: WebUser) -> None:
    page = signed_in.page("/")
    mine = page.find("section", attrs={"aria-labelledby": "mine"})
    assert mine.find("a", href="/benchmarks/new") is not None
    assert mine.find("a", href="/benchmarks/import") is not None
    recent = page.find("section", attrs={"aria-labelledby": "recent"})
    assert "Evaluate" in recent.text


def test_each_empty_benchmark_list_says_how_it_fills(signed_in: WebUser) -> None:
    mine = signed_in.page("/benchmarks?show=mine").find("main")
    assert mine.find("a", href="/benchmarks/new") is not None
    assert mine.find("a", href="/benchmarks/import") is not None
    shared = signed_in.page("/benchmarks?show=shared").find("main").text
    assert "invitation to collaborate" in shared
    published = signed_in.page("/benchmarks?show=published").find("main").text
    assert "Nobody has published a benchmark yet" in published


def test_my_empty_models_list_points_to_adding_one(signed_in: WebUser) -> None:
    page = signed_in.page("/models")
    mine = page.find("section", attrs={"aria-labelledby": "group-2"})
    assert mine.find("h2").text == "My models"
    assert mine.find("a", href="/models/new") is not None


def test_model_kinds_are_named_in_words(signed_in: WebUser) -> None:
    platform = signed_in.page("/models").find("section", attrs={"aria-labelledby": "group-1"})
    kinds = {row.find_all("td")[0].contents[0].strip() for row in platform.select("tbody tr")}
    assert "Baseline" in kinds and "builtin" not in kinds
    assert "Baseline" in signed_in.page(f"/models/{FIRST}").text


def test_run_pages_keep_their_tables_in_scroll_boxes_and_say_utc(
    world: World, runtime: Runtime, app_client: TestClient
) -> None:
    owner = world.user("owner@example.com", credits_=1000)
    benchmark = world.benchmark(owner, TWELVE)
    run_a = finished(world, runtime, owner, benchmark, FIRST)
    run_b = finished(world, runtime, owner, benchmark, RANDOM)
    world.do(Principal.web(owner), leaderboards.add_to_leaderboard, run_a)
    person = WebUser.sign_in(app_client, "owner@example.com")
    for path in (
        "/",
        "/benchmarks",
        "/models",
        f"/benchmarks/{benchmark}/runs",
        f"/benchmarks/{benchmark}/leaderboard",
        f"/runs/{run_a}",
        f"/runs/compare?a={run_a}&b={run_b}",
        "/settings/billing",
    ):
        page = person.page(path)
        assert page.find("table") is not None, path
        assert _unwrapped_tables(page) == [], path
    assert "Started (UTC)" in _column_titles(person.page(f"/benchmarks/{benchmark}/runs"))
    assert "Finished (UTC)" in _column_titles(person.page(f"/benchmarks/{benchmark}/leaderboard"))
    assert "When (UTC)" in _column_titles(person.page("/settings/billing"))


def test_question_and_reply_cells_may_break_anywhere(
    world: World, runtime: Runtime, app_client: TestClient
) -> None:
    """Only cells of free text (a model may reply with one 5,000-character word) are marked
    to break anywhere; short cells (status, scores, dates) keep whole words."""
    owner = world.user("owner@example.com", credits_=1000)
    benchmark = world.benchmark(owner, TWELVE)
    run = finished(world, runtime, owner, benchmark, FIRST)
    page = WebUser.sign_in(app_client, "owner@example.com").page(f"/runs/{run}")
    first = page.select_one("table.breakdown tbody tr")
    marked = [td.has_attr("class") and "text" in td["class"] for td in first.find_all("td")]
    # Question, expected, model's answer, extracted: text; outcome: not.
    assert marked == [True, True, True, True, False]


def test_titles_and_names_in_tables_may_break_anywhere(
    world: World, runtime: Runtime, app_client: TestClient
) -> None:
    """A published benchmark's title or a stranger's name may be one 200-character word: its
    cell breaks it instead of pushing every other column out of sight."""
    owner = world.user("owner@example.com", credits_=1000)
    benchmark = world.benchmark(owner, TWELVE)
    run = finished(world, runtime, owner, benchmark, FIRST)
    world.do(Principal.web(owner), leaderboards.add_to_leaderboard, run)
    person = WebUser.sign_in(app_client, "owner@example.com")
    for path, cell in (
        ("/", "section[aria-labelledby=recent] tbody td"),
        ("/benchmarks", "tbody th"),
        ("/models", "tbody th"),
        (f"/benchmarks/{benchmark}/runs", "tbody th"),
        (f"/benchmarks/{benchmark}/leaderboard", "tbody th"),
    ):
        first = person.page(path).select_one(cell)
        assert first is not None and "text" in first.get("class", []), path
