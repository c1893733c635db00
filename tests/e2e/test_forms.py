"""Forms in the browser: a double click on a slow connection sends a form once."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Request, expect

pytestmark = pytest.mark.browser


def test_a_double_click_on_create_makes_one_benchmark(signed_in: Page) -> None:
    page = signed_in
    page.goto("/benchmarks/new")
    page.get_by_label("Title").fill("Clicked twice")
    row = page.get_by_role("group", name="Question 1")
    row.get_by_label("Prompt").fill("Capital of Peru?")
    row.get_by_label("Accepted answers").fill("Lima")
    create = page.locator("form#editor").get_by_role("button", name="Create benchmark")
    create.scroll_into_view_if_needed()
    box = create.bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    sent: list[Request] = []
    page.on("request", lambda request: request.method == "POST" and sent.append(request))
    # A slow connection: the second click lands while the first answer is still on its way.
    network = page.context.new_cdp_session(page)
    network.send("Network.enable")
    conditions = {
        "offline": False,
        "latency": 400,
        "downloadThroughput": -1,
        "uploadThroughput": -1,
    }
    network.send("Network.emulateNetworkConditions", conditions)
    with page.expect_request(lambda request: request.method == "POST"):
        page.mouse.click(x, y)
    page.mouse.click(x, y)

    expect(page).to_have_url(re.compile(r"/benchmarks/bm_\w+$"))
    assert len(sent) == 1
    page.goto("/benchmarks")
    expect(page.get_by_role("link", name="Clicked twice")).to_have_count(1)
