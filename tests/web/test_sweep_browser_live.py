"""Flows in Chromium against a live server, where what the browser does is the point: the
advice on a form sent with a stale CSRF token, and typed confirmations of names it renders."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect, sync_playwright

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from tests.e2e.support import (
    CHROMIUM,
    LAUNCH_ARGS,
    Person,
    Site,
    served_site,
    sign_in,
)
from tests.support import QA

pytestmark = pytest.mark.browser
PROMPT = "A question typed with care, not to be typed twice?"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Site]:
    """BenchGen served on 127.0.0.1 for this module (the e2e package's site is not shared)."""
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true requires Chromium: {reason}")
        pytest.skip(reason)
    with served_site(tmp_path_factory.mktemp("live") / "data", sqlite_template) as served:
        yield served


@pytest.fixture
def tabs(live: Site, request: pytest.FixtureRequest) -> Iterator[tuple[Person, Page, Page]]:
    """A user of this test alone, and two tabs of one browser signed in as them."""
    email = f"{request.node.name[:40]}@example.com".lower()
    person = Person(live.world.user(email), email)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS
        )
        context = browser.new_context(base_url=live.url)
        context.set_default_timeout(10_000)
        first, second = context.new_page(), context.new_page()
        sign_in(first, email)
        yield person, first, second
        browser.close()


def test_going_back_as_the_stale_form_refusal_says_sends_what_was_typed(
    tabs: tuple[Person, Page, Page],
) -> None:
    """The token goes stale when the person signs out and in again in another tab. The
    refusal said "Reload the page and try again": reloading the form empties it, and reloading
    the refusal sends the stale form again. Going back is what works."""
    person, form, other = tabs
    form.goto("/benchmarks/new")
    form.get_by_label("Title").fill("Typed before the token went stale")
    form.locator("[name=q0-prompt]").fill(PROMPT)
    form.locator("[name=q0-answer]").fill("Yes")
    other.goto("/")
    other.get_by_role("button", name="Sign out").click()
    sign_in(other, person.email)
    form.get_by_role("button", name="Create benchmark").last.click()
    refusal = form.get_by_role("main")
    expect(refusal).to_contain_text("nothing changed")
    expect(refusal).to_contain_text("Go back")
    expect(refusal).not_to_contain_text("Reload")
    form.go_back()
    expect(form.locator("[name=q0-prompt]")).to_have_value(PROMPT)
    form.get_by_role("button", name="Create benchmark").last.click()
    expect(form).to_have_url(re.compile(r"/benchmarks/bm_\w+$"))
    expect(form.get_by_role("heading", level=1)).to_have_text("Typed before the token went stale")


def test_a_title_with_two_spaces_in_a_row_can_be_deleted_as_the_page_shows_it(
    tabs: tuple[Person, Page, Page], live: Site
) -> None:
    """The page renders "Two  spaces" as "Two spaces": the button stayed disabled for what the
    person could see, type or copy, and the benchmark could not be deleted in the web app."""
    person, page, _ = tabs
    bm = live.world.benchmark(person.id, {**QA, "title": "Two  spaces  here"})
    page.goto(f"/benchmarks/{bm}/settings")
    shown = page.get_by_label(re.compile("to confirm")).locator("xpath=..").inner_text()
    assert "Two spaces here" in shown
    page.get_by_label(re.compile("to confirm")).fill("Two spaces here")
    delete = page.get_by_role("button", name="Delete the benchmark")
    expect(delete).to_be_enabled()
    delete.click()
    expect(page).to_have_url(re.compile(r"/benchmarks$"))
    mine = live.world.do(Principal.web(person.id), lifecycle.list_benchmarks)
    assert [found.id for found in mine if found.id == bm] == []


def test_what_is_typed_while_the_agent_answers_stays_in_the_message_box(
    tabs: tuple[Person, Page, Page],
) -> None:
    """The answer swapped in an emptied send form: the next message, typed while the agent
    was working (the box stays editable), was gone."""
    _, page, _ = tabs
    page.goto("/chat")
    page.get_by_role("button", name="Start a conversation").click()
    held: list[Route] = []

    def hold(route: Route) -> None:  # the message waits until the next one is typed
        held.append(route)

    page.route("**/messages", hold)
    box = page.get_by_label("Message to the agent")
    box.fill("list my benchmarks")
    page.get_by_role("button", name="Send").click()
    page.wait_for_function("() => document.querySelector('#send-form [disabled]')")
    box.fill("and the next question, typed while waiting")
    for _ in range(250):  # the handler runs only when Playwright next hears from the browser
        if held:
            break
        page.wait_for_timeout(20)
    assert len(held) == 1
    held[0].continue_()
    expect(page.get_by_role("article")).to_contain_text("list my benchmarks")
    expect(page.get_by_label("Message to the agent")).to_have_value(
        "and the next question, typed while waiting"
    )
