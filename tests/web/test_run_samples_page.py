"""A run's extra samples on its page: beside each question's answer for whoever sees the
answers, with their verdicts only for the benchmark's team."""

from __future__ import annotations

from collections.abc import Iterator

from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.services.runs import results
from benchgen.services.runtime import Runtime
from tests.services.test_run_samples import sampled_run
from tests.support import World
from tests.web.support import WebUser


def browser(runtime: Runtime, email: str) -> Iterator[WebUser]:
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, email)


def _samples(page: BeautifulSoup, table: str) -> list[Tag]:
    found = page.select(f"table.{table} details.samples")
    assert all(isinstance(tag, Tag) for tag in found)
    return found


def test_the_team_sees_each_questions_other_samples_with_their_verdicts(
    world: World, runtime: Runtime
) -> None:
    made = sampled_run(world, runtime)
    rows = world.do(Principal.web(made.ana), results.list_results, made.run)
    for web in browser(runtime, "ana@example.com"):
        page = web.page(f"/runs/{made.run}")
        shown = _samples(page, "breakdown")
        assert len(shown) == 12
        first = shown[0]
        assert " ".join(first.summary.text.split()) == "2 other samples"  # type: ignore[union-attr]
        items = first.select("li")
        assert [item["data-sample"] for item in items] == ["1", "2"]
        for item, sample in zip(items, rows[0]["samples"], strict=True):
            assert sample["raw"] in item.text
            outcome = item.select_one(".outcome")
            assert outcome is not None and outcome.text == sample["outcome"].replace("_", " ")


def test_the_launcher_sees_the_replies_but_no_verdicts(world: World, runtime: Runtime) -> None:
    made = sampled_run(world, runtime)
    rows = world.do(Principal.web(made.sam), results.list_results, made.run)
    for web in browser(runtime, "sam@example.com"):
        page = web.page(f"/runs/{made.run}")
        assert page.select("table.breakdown") == []
        shown = _samples(page, "answers")
        assert len(shown) == 12
        items = shown[3].select("li")
        assert [item.text.split(":", 1)[1].strip() for item in items] == [
            sample["raw"] for sample in rows[3]["samples"]
        ]
        assert page.select("table.answers .outcome") == []
